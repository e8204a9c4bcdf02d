"""Activation (relu, softmax, linear); Dense reuses `apply` for its fused activation."""
import numpy as np

from kmicro.core.ops.base import Op

__all__ = ["Activation", "apply"]


class Activation(Op):
    name = "activation"
    layer = "Activation"
    family = "activation"

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        y, dx = apply(kwargs["activation"], xs[0], dy)
        return y, None if dy is None else [dx]

    def forward_flops(self, case, out_shape) -> int:
        return int(np.prod(out_shape))


def apply(name, x, dy=None):
    """(activation(x), d x) for the given d output (None when dy is None)."""
    if name == "relu":
        y = np.maximum(x, 0)
        return y, None if dy is None else dy * (x > 0)
    if name == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        s = e / e.sum(axis=-1, keepdims=True)
        return s, None if dy is None else s * (dy - (dy * s).sum(axis=-1, keepdims=True))
    if name == "linear":
        return x, dy
    raise ValueError(f"no reference for activation {name!r}")
