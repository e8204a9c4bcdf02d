"""Keras 3 on NumPy: forward only (the numpy backend has no gradients)."""
from __future__ import annotations

import functools

import numpy as np

from kmicro.backends.base import UnsupportedPass
from kmicro.backends.keras3.backend import Backend, call_arg, training_kwarg

__all__ = ["Numpy"]


class Numpy(Backend):
    module = np

    def forward(self, layer, xs, training):
        return functools.partial(layer, call_arg(xs), **training_kwarg(layer, training))

    def fwd_bwd(self, layer, xs, dy):
        raise UnsupportedPass("the numpy backend has no gradients (forward only)")
