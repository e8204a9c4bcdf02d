"""How busy other processes kept the machine's CPUs while something was measured.

The kernel's /proc/stat counts the time every CPU spent busy (user, system, interrupts, and
`steal`: time the hypervisor gave to other guests); this process's own CPU time comes from
its clock. Busy time minus our own, per second of wall time and per CPU, is the share of the
machine other processes took: ~0 on a quiet machine, 0.5 with one other busy process on two
CPUs. That work lands inside whichever op was running when our threads lost their CPU, so a
small op can read larger than a big one. (A thread's own run-queue delay would not do: the
frameworks' thread pools keep each other waiting on an idle machine too.)
Backend-free; runs on every stack's Python (3.6 to 3.11). None where /proc/stat is absent.
"""
import os
import time
from contextlib import contextmanager
from typing import Optional, Tuple

__all__ = ["Watch", "watching"]

_IDLE = (3, 4)  # idle, iowait; guest time is already inside user
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def _machine_busy() -> Optional[Tuple[float, int]]:
    """(busy CPU-seconds of all CPUs since boot, number of CPUs), or None."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    total = [int(v) for v in lines[0].split()[1:9]]  # up to steal: guest is inside user
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    busy = sum(v for i, v in enumerate(total) if i not in _IDLE)
    return busy * _TICK_S, max(cpus, 1)


class Watch:
    """Wall time, and other processes' CPU time, of the blocks run under `watching`."""

    def __init__(self):
        self.wall_s = 0.0
        self.others_s = 0.0
        self.cpus = None
        self.readable = True

    @property
    def share(self) -> Optional[float]:
        """Other processes' share of the machine's CPU time (0 to 1), or None."""
        if not self.readable or not self.wall_s or not self.cpus:
            return None
        return min(1.0, self.others_s / (self.wall_s * self.cpus))


@contextmanager
def watching(watch: Watch):
    before, t0, own0 = _machine_busy(), time.perf_counter(), time.process_time()
    try:
        yield watch
    finally:
        after, t1, own1 = _machine_busy(), time.perf_counter(), time.process_time()
        watch.wall_s += t1 - t0
        if before is None or after is None:
            watch.readable = False
        else:
            watch.cpus = after[1]
            # /proc/stat counts in ticks (10 ms): short blocks can read a little below zero
            watch.others_s += max(0.0, (after[0] - before[0]) - (own1 - own0))
