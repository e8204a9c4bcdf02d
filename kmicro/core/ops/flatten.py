"""Flatten: (N, ...) -> (N, features); a reshape, no arithmetic."""
from kmicro.core.ops.base import Op

__all__ = ["Flatten"]


class Flatten(Op):
    name = "flatten"
    layer = "Flatten"
    family = "reshaping"
    # With data_format channels_first Keras flattens in channels_last order (so a Dense after it
    # keeps its weights across layouts); the reference flattens its channels_last copy alike.
    spatial = True

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        x = xs[0]
        return x.reshape(len(x), -1), None if dy is None else [dy.reshape(x.shape)]

    def forward_flops(self, case, out_shape) -> int:
        return 0
