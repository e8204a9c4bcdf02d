"""Which CPUs a worker process's threads may run on (Linux; elsewhere nothing is changed).

On a small VM each vCPU changes speed on its own for seconds at a time (one read 1.6x slower
than the other for 93 % of a 4 s trace, scripts/vcpu_speed.py), and the scheduler leaves a
thread where it last ran. Two processes timed back to back then differ by whichever vCPU each
sits on: `kmicro ab`'s worker pairs read ratios of 0.63-1.39 for the same code. Placing both
sides' bursts of a round on one CPU takes that out of the ratio.
"""
from __future__ import annotations

import os

__all__ = ["available", "choices", "apart", "pin", "turn"]


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


def apart(cpus, n, first=0) -> list:
    """`n` one-CPU sets, for processes about to start, each on the next CPU of `cpus` from
    index `first`; n Nones when `cpus` is empty. A framework sizes its thread pools from the
    CPUs it may use when it starts, so a process that will be timed on one CPU must start on
    one; starting on different ones lets them import side by side (two Keras imports on one
    CPU took 15 s where they take 7)."""
    if not cpus:
        return [None] * n
    return [{cpus[(first + i) % len(cpus)]} for i in range(n)]


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


def turn(measuring, waiting, cpu, cpus) -> None:
    """Process `measuring` alone on `cpu`, process `waiting` on the other CPUs of `cpus`."""
    pin(waiting, set(cpus) - {cpu})
    pin(measuring, {cpu})
