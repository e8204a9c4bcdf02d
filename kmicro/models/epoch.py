"""Epoch timing, framework-free: train steps after warm-up, extrapolated to an epoch.

A step is what `fit` does per batch: slice the batch, scale it, augment it when the
model's script did, one-hot the labels, and run one synchronous train step. The first
step (tracing / graph compilation) is timed on its own as compile_s; WARMUP more steps
are dropped; each following step is one sample. epoch_s = median step x samples / batch
(`--steps N`), or the wall time of a whole epoch (`--full-epoch`). Evaluation is the same
with test steps over the 10,000 test samples. Must import on Python 3.7.
"""
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kmicro.core import memory, timing
from kmicro.models import augment as augment_mod
from kmicro.models.data import one_hot, scale

__all__ = ["WARMUP", "Trainer", "Batches", "steps_per_epoch", "extrapolate", "samples_needed",
           "run"]

WARMUP = 2


@dataclass
class Trainer:
    """What a backend builder hands back: one compiled model, synchronous steps."""

    train: Callable  # (x, y) -> losses as host values (so the step has finished)
    test: Callable  # (x, y) -> losses
    device: Callable  # (x) -> "cpu" | "gpu": where the model's weights actually live
    optimizer: str  # the optimizer as this Keras built it
    params: int = 0
    # (x, y) -> (peak bytes one train step holds beyond its batch, how counted) or (None, why)
    peak_memory: Callable = None


def steps_per_epoch(samples, batch_size) -> int:
    """Keras' steps per epoch: the last batch may be partial."""
    return int(math.ceil(samples / float(batch_size)))


def extrapolate(step_s, samples, batch_size) -> float:
    """An epoch from the median step: a partial last batch counts for its share of samples."""
    return step_s * samples / float(batch_size)


def samples_needed(steps, batch_size) -> int:
    """Samples a --steps run reads: first step, warm-up, timed steps, never past an epoch."""
    return (1 + WARMUP + steps) * batch_size


class Batches:
    """Batch i of an array set, prepared as the step consumes it (cycles over the data)."""

    def __init__(self, x, y, batch_size, augment=None, seed=0, num_classes=10):
        self.x, self.y, self.batch_size, self.augment = x, y, batch_size, augment
        self.rng = np.random.RandomState(seed)
        self.num_classes = num_classes

    def __getitem__(self, i):
        start = (i * self.batch_size) % len(self.x)
        stop = min(start + self.batch_size, len(self.x))
        x = scale(self.x[start:stop])
        if self.augment is not None:
            x = augment_mod.shift_flip(x, self.augment, self.rng)
        return x, one_hot(self.y[start:stop], self.num_classes)


def _phase(step, batches, n_steps, full, clock):
    """(Measurement of n_steps timed steps, their wall seconds): compile_s first, warm-up,
    then one sample per step (all batches of the set when `full`)."""
    _, compile_s = timing.first_call(lambda: step(*batches[0]), timing.host_values, clock)
    for i in range(1, 1 + WARMUP):
        step(*batches[i])
    first = 0 if full else 1 + WARMUP  # a full epoch starts over at batch 0
    m, wall_s = timing.per_call(lambda i: step(*batches[i]), range(first, first + n_steps), clock)
    m.compile_s = compile_s
    return m, wall_s


def run(trainer: Trainer, data, spec, settings, clock=time.perf_counter) -> dict:
    """The timing fields of a model record (see job.blank_record for the rest)."""
    batch = spec.batch_size
    augment = spec.augment if settings.augment else None
    train = Batches(data.x_train, data.y_train, batch, augment, settings.seed, spec.num_classes)
    test = Batches(data.x_test, data.y_test, batch, None, settings.seed, spec.num_classes)
    n_train = steps_per_epoch(len(data.x_train), batch) if settings.full_epoch else settings.steps
    n_test = steps_per_epoch(len(data.x_test), batch) if settings.full_epoch else settings.steps
    m, train_wall_s = _phase(trainer.train, train, n_train, settings.full_epoch, clock)
    e, eval_wall_s = _phase(trainer.test, test, n_test, settings.full_epoch, clock)
    estimate = extrapolate(m.median, settings.train_samples, batch)
    eval_estimate = extrapolate(e.median, settings.eval_samples, batch)
    return {
        "median_s": m.median, "step_s": m.median, "iqr_s": m.iqr, "n_samples": len(m.samples),
        "noisy": m.noisy, "step_mean_s": train_wall_s / n_train,
        "compile_s": m.compile_s, "steps": n_train,
        "epoch_s": train_wall_s if settings.full_epoch else estimate, "epoch_est_s": estimate,
        "eval_s": eval_wall_s if settings.full_epoch else eval_estimate,
        "eval_est_s": eval_estimate, "eval_step_s": e.median, "eval_iqr_s": e.iqr,
        "eval_compile_s": e.compile_s, "eval_steps": n_test,
        "device": trainer.device(train[0][0]), "optimizer": trainer.optimizer,
        "params": trainer.params,
        # one more train step, after the timed ones
        **memory.fields(trainer.peak_memory, *train[1 + WARMUP]),
    }
