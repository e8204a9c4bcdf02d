"""MaxPooling2D and AveragePooling2D: square windows, stride = pool size unless given."""
import abc

import numpy as np

from kmicro.core.ops.base import Op, windows

__all__ = ["AveragePooling2D", "MaxPooling2D"]


class _Pooling(Op):
    spatial = True

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        p, x = kwargs["pool_size"], xs[0]
        win = windows(x, p, kwargs.get("strides") or p)
        n, ho, wo = win.shape[:3]
        flat = win.reshape(n, ho, wo, p * p, -1)
        y, share = self.reduce(flat)
        if dy is None:
            return y, None
        dx = np.zeros_like(x)
        contrib = (share * dy[:, :, :, None]).reshape(n, ho, wo, p, p, -1)
        for i in range(p):
            for j in range(p):
                dx[:, i:i + ho * p:p, j:j + wo * p:p] += contrib[:, :, :, i, j]
        return y, [dx]

    @abc.abstractmethod
    def reduce(self, flat):
        """(pooled, share): each window (axis 3) reduced, and how d y spreads over it."""

    def forward_flops(self, case, out_shape) -> int:
        return int(np.prod(out_shape)) * case.kwargs["pool_size"] ** 2


class MaxPooling2D(_Pooling):
    name = "maxpool"
    layer = "MaxPooling2D"
    family = "pooling"

    def reduce(self, flat):
        y = flat.max(axis=3)
        share = flat == y[:, :, :, None]  # ties split the gradient evenly
        return y, share / share.sum(axis=3, keepdims=True)


class AveragePooling2D(_Pooling):
    name = "avgpool"
    layer = "AveragePooling2D"
    family = "pooling"

    def reduce(self, flat):
        return flat.mean(axis=3), np.full(flat.shape, 1.0 / flat.shape[3])
