"""Keras 3 on torch: eager (torch.compile with --jit on), autograd.grad, cuda.synchronize."""
from __future__ import annotations

import functools

import torch

from kmicro.backends.keras3.backend import (Backend, call_arg, call_args, first, returned,
                                            training_kwarg)

__all__ = ["Torch"]


class Torch(Backend):
    module = torch

    def __init__(self, jit):
        super().__init__(jit)
        self.wrap = torch.compile if jit == "on" else (lambda f: f)

    def has_gpu(self):
        return torch.cuda.is_available()

    def gpu_name(self):
        return torch.cuda.get_device_name(0)

    def profile_steps(self, model, layers, train, steps, phase) -> dict:
        from kmicro.backends.keras3 import in_situ_torch

        return in_situ_torch.profile_steps(model, layers, train, steps, phase)

    def forward(self, layer, xs, training, positional=False):
        kw = training_kwarg(layer, training)
        f = self.wrap(functools.partial(layer, **kw) if kw else layer)

        if positional:
            def step(x):
                with torch.no_grad():
                    return f(*x)

            return functools.partial(step, tuple(xs))

        def step(x):
            with torch.no_grad():
                return f(x)

        return functools.partial(step, call_arg(xs))

    def fwd_bwd(self, layer, xs, dy, positional=False, grad_inputs=True):
        if grad_inputs:
            xs = [x.detach().requires_grad_(True) for x in xs]
        weights = [v.value for v in layer.trainable_variables]
        kw = training_kwarg(layer, True)

        # Weights and dy are arguments: torch.compile (--jit on) must not specialise on them.
        def step(a, weights, dy):
            y = layer(*call_args(a, positional), **kw)
            wrt = [*a, *weights] if grad_inputs else weights
            return y, torch.autograd.grad((y * dy).sum(), wrt)

        return functools.partial(self.wrap(step), tuple(xs), weights, dy)

    def synchroniser(self):
        return _cuda_synchronize if self.has_gpu_device else returned

    def device_of(self, out):
        return first(out).device.type.replace("cuda", "gpu")

    def peak_memory(self, step, sync):
        if self.has_gpu_device:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = sync(step())
            held = torch.cuda.max_memory_allocated() - before
            del out
            return held, ("CUDA caching allocator: torch.cuda.max_memory_allocated during one "
                          "call, less what was allocated before it")
        return _cpu_peak(step), ("torch profiler's allocation and free events of one call "
                                 "(profile_memory=True), replayed into a peak")


def _cpu_peak(step) -> int:
    """The most bytes one call holds at once, from the profiler's "[memory]" events (one per
    allocation, positive, or free, negative), in time order. Its outputs are still held when
    the profile ends, so they count."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = step()
    events = sorted(((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                     if e.name() == "[memory]"), key=lambda event: event[0])  # ties: as logged
    held = peak = 0
    for _, change in events:
        held += change
        peak = max(peak, held)
    del out
    return peak


def _cuda_synchronize(out):
    torch.cuda.synchronize()
    return out
