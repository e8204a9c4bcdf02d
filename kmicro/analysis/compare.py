"""Two result files side by side: per (stack, case, pass) median ratio new/old.

Used to judge repeatability (same code, two runs) and regressions (two versions).
"""
from __future__ import annotations

from dataclasses import dataclass

from kmicro.core import records as results

__all__ = ["Change", "changes", "agreement"]


@dataclass(frozen=True)
class Change:
    key: tuple  # (stack, case, pass)
    old_s: float
    new_s: float

    @property
    def ratio(self) -> float:
        return self.new_s / self.old_s


def changes(old_records, new_records, min_time_s=0.0) -> list:
    """Pairs measured ok in both files whose old median is at least `min_time_s`."""
    old = {results.key(r): r for r in old_records if r["status"] == "ok"}
    out = []
    for r in new_records:
        before = old.get(results.key(r))
        if r["status"] == "ok" and before and before["median_s"] >= min_time_s:
            out.append(Change(results.key(r), before["median_s"], r["median_s"]))
    return out


def agreement(pairs, tolerance) -> float:
    """Fraction of pairs whose medians agree within `tolerance` (relative)."""
    if not pairs:
        return float("nan")
    return sum(abs(c.ratio - 1) <= tolerance for c in pairs) / len(pairs)
