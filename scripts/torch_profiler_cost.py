"""What torch's profilers cost per recorded op on this CPU (docs/attribute.md, issue 17).

A train-step-like loop of small ops (20 matmul + relu + scale + shift layers on 32x64, then
backward: about 900 profiler events per step) is timed without a profiler, under
torch.profiler (Kineto, what `kmicro attribute --in-situ` uses) and under the legacy autograd
profiler, in interleaved rounds in one process, so the ratios are read side by side. The cost
per event bounds the in-situ overhead of any model: overhead ~ events per step x cost / step.

    .venv/bin/python scripts/torch_profiler_cost.py [ROUNDS] 2>/dev/null
"""
import contextlib
import statistics
import sys
import time

import torch
import torch.autograd.profiler as legacy
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
X = torch.randn(32, 64, requires_grad=True)
WEIGHTS = [torch.randn(64, 64, requires_grad=True) for _ in range(20)]
MODES = {"off": contextlib.nullcontext,
         "torch.profiler": lambda: profile(activities=[ProfilerActivity.CPU]),
         "legacy profiler": lambda: legacy.profile(use_kineto=False)}


def step():
    h = X
    for w in WEIGHTS:
        h = torch.relu(h @ w) * 0.5 + 0.1
    h.sum().backward()


def seconds_per_step(mode, steps=30) -> float:
    with MODES[mode]():
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - t0) / steps


def main(rounds=15):
    for mode in MODES:
        seconds_per_step(mode, 3)  # warm-up
    times = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            times[mode].append(seconds_per_step(mode))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = len(prof.events())
    off = statistics.median(times["off"])
    print(f"{events} profiler events per step; medians of {rounds} interleaved rounds:")
    for mode, ts in times.items():
        med = statistics.median(ts)
        print(f"  {mode:16s} {med * 1e3:7.3f} ms/step  x{med / off:.2f}  "
              f"{(med - off) / events * 1e6:.2f} us per event")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
