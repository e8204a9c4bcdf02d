"""In-situ attribution on torch: the model's real train step under torch.profiler, its time
given to each Keras layer's forward and backward, the loss, the metrics, the optimizer update,
and the framework around them (Keras' train_step in Python, zero_grad, host copies).

For the profiled steps every layer's `call`, the model's `compute_loss` and
`compute_metrics` and the optimizer's `apply` run inside a `record_function` range of their
own (installed on the instances here, removed after). A forward op belongs to the outermost
layer range around it. A backward op is an autograd node: its
`autograd::engine::evaluate_function: XBackward0` event carries the sequence number of the
forward op that recorded it (torch.profiler's own forward/backward link), which ties it to
that op's layer. Whatever lies in a step's range outside those is framework time, so the
parts add up to the profiled step by construction.
"""
from __future__ import annotations

import contextlib
import functools
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from kmicro.backends.xplane import FRAMEWORK

__all__ = ["profile_steps"]

STEP = "kmicro.step"
LAYER = "kmicro.layer:"
# Ranges of the step's other parts -> the (layer, part) their forward ops count as.
OTHER = {"kmicro.loss": ("(loss)", "forward"), "kmicro.metrics": ("(metrics)", "forward"),
         "kmicro.optimizer": ("(optimizer)", "update")}
BACKWARD = "autograd::engine::evaluate_function: "
UNOWNED = "(no layer)"  # backward nodes no forward op of ours recorded (AccumulateGrad)


def profile_steps(model, layers, train, steps, phase="train") -> dict:
    """`steps` calls of `train()` (one train_on_batch each) under the profiler, after one
    profiled warm-up step that is not recorded: {"steps_s": [wall seconds of each profiled
    step], "parts": [{"layer", "part", "times_s": [per step]}]}: each layer's forward and
    backward, the loss's, the metrics' forward, the optimizer's update, unowned backward
    nodes, and framework overhead (the rest of the step's range)."""
    walls = []
    with _ranges(model, layers):
        schedule = torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1)
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule) as prof:
            for i in range(steps + 1):
                t0 = time.perf_counter()
                with record_function(STEP):
                    train()
                if i:
                    walls.append(time.perf_counter() - t0)
                prof.step()
    return {"steps_s": walls, "parts": _parts(prof.events())}


@contextlib.contextmanager
def _ranges(model, layers):
    wrapped = [(layer, "call", LAYER + layer.name) for layer in layers]
    wrapped += [(model, "compute_loss", "kmicro.loss"),
                (model, "compute_metrics", "kmicro.metrics"),
                (model.optimizer, "apply", "kmicro.optimizer")]
    for obj, attr, name in wrapped:
        object.__setattr__(obj, attr, _in_range(getattr(obj, attr), name))
    try:
        yield
    finally:
        for obj, attr, _ in wrapped:
            object.__delattr__(obj, attr)  # the class's method shows through again


def _in_range(method, name):
    @functools.wraps(method)
    def ranged(*args, **kwargs):
        with record_function(name):
            return method(*args, **kwargs)
    return ranged


def _owner(event):
    """(layer or other part, outermost of our ranges around `event`, itself included; the
    step range around it): either may be None."""
    found, step = None, None
    while event is not None:
        if event.name.startswith(LAYER):
            found = (event.name[len(LAYER):], event)
        elif event.name in OTHER:
            found = (OTHER[event.name][0], event)
        elif event.name == STEP:
            step = event
        event = event.cpu_parent
    return found, step


def _parts(events) -> list:
    per_step = {}  # (layer, part) -> {step event id: microseconds}
    owner, step_us = {}, {}  # owner: forward op sequence number -> layer

    def add(key, step, us):
        times = per_step.setdefault(key, {})
        times[step.id] = times.get(step.id, 0.0) + us

    for e in events:
        if e.name == STEP:
            step_us[e.id] = e.cpu_time_total
            continue
        mine, step = _owner(e)
        if step is None:
            continue
        if mine and mine[1] is e:  # an outermost range: a layer's forward, loss, optimizer
            add((mine[0], OTHER.get(e.name, (None, "forward"))[1]), step, e.cpu_time_total)
        if mine and e.sequence_nr >= 0 and not e.name.startswith(BACKWARD):
            owner.setdefault(e.sequence_nr, mine[0])
    for e in events:
        _, step = _owner(e)
        if step is not None and e.name.startswith(BACKWARD) and not _within_backward(
                e.cpu_parent):
            add((owner.get(e.sequence_nr, UNOWNED), "backward"), step, e.cpu_time_total)
    order = sorted(step_us)
    parts = {key: [times.get(i, 0.0) for i in order] for key, times in per_step.items()}
    parts[FRAMEWORK] = [step_us[i] - sum(p[k] for p in parts.values())
                        for k, i in enumerate(order)]
    return [{"layer": layer, "part": part, "times_s": [us * 1e-6 for us in times]}
            for (layer, part), times in parts.items()]
def _within_backward(event) -> bool:
    while event is not None:
        if event.name.startswith(BACKWARD):
            return True
        event = event.cpu_parent
    return False
