"""Which CPUs a worker process's threads may run on (Linux; elsewhere nothing is changed).

On a small VM each vCPU changes speed on its own for seconds at a time (one read 1.6x slower
than the other for 93 % of a 4 s trace: `kmicro machine` measures it), and the scheduler leaves a
thread where it last ran. Two processes timed back to back then differ by whichever vCPU each
sits on: `kmicro ab`'s worker pairs read ratios of 0.63-1.39 for the same code. Placing both
sides' bursts of a round on one CPU (on a larger machine, one half of its CPUs) takes that
out of the ratio.
"""
from __future__ import annotations

import os

__all__ = ["available", "choices", "halves", "apart", "pin", "turn"]


def available() -> list:
    """The CPUs this process may use, sorted; [] where affinity cannot be set."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def choices(same_cpu) -> list:
    """The CPUs a round's CPU is drawn from: [] when `same_cpu` is off or fewer than two
    are available (nothing to place, and records say so)."""
    cpus = available() if same_cpu else []
    return cpus if len(cpus) > 1 else []


def halves(same_cpu) -> list:
    """The CPU sets a round's set is drawn from (`kmicro ab`): the available CPUs split into
    two equal halves, in order ([] when `same_cpu` is off or fewer than two are available).
    On two vCPUs that is one CPU each; on a larger machine a timed side keeps half of it, so
    a multi-threaded kernel still gets its threads, and both sides are timed on the same
    half in a round. An odd CPU out is left unused."""
    cpus = choices(same_cpu)
    half = len(cpus) // 2
    return [set(cpus[:half]), set(cpus[half:2 * half])] if cpus else []


def apart(sets, n, first=0) -> list:
    """The CPU sets `n` processes about to start get: the next set of `sets` for each, from
    index `first`; n Nones when `sets` is empty. A framework sizes its thread pools from the
    CPUs it may use when it starts, so a process that will be timed on one set must start on
    it; starting on different ones lets them import side by side (two Keras imports on one
    CPU took 15 s where they take 7)."""
    if not sets:
        return [None] * n
    return [set(sets[(first + i) % len(sets)]) for i in range(n)]


def pin(pid, cpus) -> None:
    """Every thread of process `pid` (threads it starts later inherit the mask) on `cpus`.
    Threads that end meanwhile are skipped; a process that is gone is left to its owner."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in threads:
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass


def turn(measuring, waiting, timed_on, everywhere) -> None:
    """Process `measuring` alone on the CPU set `timed_on`, process `waiting` on the other
    CPUs of `everywhere`."""
    pin(waiting, set(everywhere) - set(timed_on))
    pin(measuring, set(timed_on))
