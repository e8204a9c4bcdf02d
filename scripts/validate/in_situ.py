"""The torch in-situ profiler's overhead on a seed model's train step (the `in-situ` claim of
docs/validation.md), read in interleaved blocks in one process: blocks of 10 steps plain; with
kmicro's record_function ranges installed and no profiler; under kmicro's profile_steps
(profiler and ranges); under the profiler without the ranges. Medians over ROUNDS rounds, each mode once per
round, so the machine's drift hits every mode alike.

    .venv/bin/python scripts/validate/in_situ.py [resnet_bn|cifar10_cnn] [ROUNDS] 2>/dev/null

Prints one line per mode, then the medians as one JSON object on the last line.
"""
import json
import os
import statistics
import sys
import time

os.environ["KERAS_BACKEND"] = "torch"

import numpy as np  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from kmicro.backends.keras3 import in_situ_torch, models  # noqa: E402
from kmicro.models import zoo  # noqa: E402



def batch(model, rng):
    x = rng.rand(32, *model.inputs[0].shape[1:]).astype("float32")
    classes = model.outputs[0].shape[-1]
    return x, np.eye(classes, dtype="float32")[rng.randint(0, classes, 32)]


def main(name="resnet_bn", rounds=8):
    model, _ = models.build(zoo.get(name), 0, "auto")
    x, y = batch(model, np.random.RandomState(0))

    def train():
        model.train_on_batch(x, y)

    for _ in range(5):
        train()
    layers = models.layers(model)

    def block(n=10):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            train()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def ranges_only():
        with in_situ_torch._ranges(model, layers):
            return block()

    def profiler_only():
        with profile(activities=[ProfilerActivity.CPU]):
            return block()

    modes = {"plain": block, "ranges, profiler off": ranges_only,
             "profiler + ranges (kmicro)":
                 lambda: statistics.median(in_situ_torch.profile_steps(model, layers, train,
                                                                       10)["steps_s"]),
             "profiler, no ranges": profiler_only}
    medians = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode, run in modes.items():
            medians[mode].append(run())
    plain = statistics.median(medians["plain"])
    for mode, ms in medians.items():
        med = statistics.median(ms)
        print(f"{name} {mode:28s} {med * 1e3:7.1f} ms  x{med / plain:.2f}  "
              f"(rounds {min(ms) * 1e3:.1f}-{max(ms) * 1e3:.1f} ms)")
    print(json.dumps({"model": name, "rounds": rounds,
                      "median_s": {mode: statistics.median(ms) for mode, ms in medians.items()}}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "resnet_bn",
         int(sys.argv[2]) if len(sys.argv) > 2 else 8)
