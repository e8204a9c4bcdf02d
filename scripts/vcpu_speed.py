"""How each vCPU's speed moves, and whether the vCPUs move together (docs/ab.md).

One process pinned to each CPU runs the same 2000-iteration pure-Python loop for SECONDS
(default 4), all at once; the loop's times are binned into 5 ms bins. Printed per CPU: the
fraction of bins slower than 1.35x that CPU's fast (5th-percentile) bin, and the median; then
the correlation of the CPUs' log speeds over the same bins. Near 0: each vCPU changes speed on
its own, so two processes timed back to back on different vCPUs differ by that much, whatever
their code (the floor under kmicro ab's per-round noise).

    python scripts/vcpu_speed.py [SECONDS]
"""
import multiprocessing
import os
import sys
import time

import numpy as np

BIN_S = 0.005


def _loop_times(cpu, start, seconds, out):
    os.sched_setaffinity(0, {cpu})
    while time.time() < start:
        pass
    times = []
    while time.time() < start + seconds:
        t0 = time.perf_counter()
        total = 0
        for i in range(2000):
            total += i * i
        times.append((time.time(), time.perf_counter() - t0))
    out.put((cpu, times))


def _binned(times, start, seconds):
    edges = np.arange(start, start + seconds, BIN_S)
    when, took = np.array(times).T
    index = np.digitize(when, edges)
    return np.array([np.median(took[index == i]) if (index == i).any() else np.nan
                     for i in range(1, len(edges))])


def main(seconds: float) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    out, start = multiprocessing.Queue(), time.time() + 1
    procs = [multiprocessing.Process(target=_loop_times, args=(c, start, seconds, out))
             for c in cpus]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    binned = {c: _binned(t, start, seconds) for c, t in got.items()}
    both = np.all([~np.isnan(b) for b in binned.values()], axis=0)
    for cpu, b in binned.items():
        fast = np.percentile(b[both], 5)
        print(f"cpu {cpu}: slow (> 1.35x its fast bin) in {np.mean(b[both] > 1.35 * fast):.0%} "
              f"of {both.sum()} bins; median {np.median(b[both]) / fast:.2f}x the fast bin")
    if len(cpus) >= 2:
        logs = np.log([binned[c][both] for c in cpus[:2]])
        print(f"correlation of cpu {cpus[0]} and cpu {cpus[1]} log speed per {BIN_S * 1e3:g} ms "
              f"bin: {np.corrcoef(logs)[0, 1]:.2f}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
