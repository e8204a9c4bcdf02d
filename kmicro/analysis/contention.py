"""Whether a run's rankings can be trusted: how busy other processes kept the CPUs.

Workers record `other_load` (kmicro.core.other_load: other processes' share of the machine's
CPU time) around the measurements rankings are read from. Their work lands inside whichever
op was running when one of our threads lost its CPU: with a share L taken, a thread may run
at (1 - L) of its speed, and not evenly across ops.
"""
from __future__ import annotations

import statistics

__all__ = ["TOLERATED", "typical_load", "caveat_lines"]

# A stack's median on a quiet 2-core VM: 0.00-0.04 (single records up to 0.17: /proc/stat
# counts in 10 ms ticks); beside one busy process: 0.30-0.50 (docs/guide-model-step.md).
TOLERATED = 0.15


def typical_load(records, stack):
    """The median `other_load` of a stack's ok records (None: none was readable)."""
    loads = [r["other_load"] for r in records if r["stack"] == stack and r["status"] == "ok"
             and r.get("other_load") is not None]
    return statistics.median(loads) if loads else None


def caveat_lines(records) -> list:
    """One line per stack measured while other processes took over TOLERATED of the CPUs."""
    lines = []
    for stack in dict.fromkeys(r["stack"] for r in records):
        load = typical_load(records, stack)
        if load is not None and load > TOLERATED:
            lines.append(f"{stack}: other processes took {load:.0%} of the CPUs while it was "
                         f"measured: its times may be up to {1 / (1 - min(load, 0.9)):.1f}x too "
                         "long, unevenly, so layers within that factor of each other may rank "
                         "either way; rerun on a quieter machine")
    return lines
