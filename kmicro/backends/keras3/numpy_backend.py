"""Keras 3 on NumPy: forward only (the numpy backend has no gradients)."""
from __future__ import annotations

import functools
import tracemalloc

import numpy as np

from kmicro.backends.base import UnsupportedPass
from kmicro.backends.keras3.backend import Backend, call_args, training_kwarg

__all__ = ["Numpy"]


class Numpy(Backend):
    module = np

    def forward(self, layer, xs, training, positional=False):
        return functools.partial(layer, *call_args(xs, positional),
                                 **training_kwarg(layer, training))

    def float64_mode(self):
        # Keras' numpy backend computes through jax.numpy in places (its convolutions).
        import jax

        return jax.enable_x64(True)

    def peak_memory(self, step, sync):
        tracemalloc.start()
        try:
            out = step()
            held = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        del out
        return held, ("tracemalloc during one call: NumPy's array buffers and Python's objects "
                      "(buffers of the jax.numpy calls Keras' numpy backend makes for "
                      "convolutions are not traced, only their NumPy copies)")

    def fwd_bwd(self, layer, xs, dy, positional=False, grad_inputs=True):
        raise UnsupportedPass("the numpy backend has no gradients (forward only)")
