"""Conv2D: a square kernel, stride 1, 'same' or 'valid' padding, as im2col + matmul."""
import numpy as np

from kmicro.core.ops.base import Op, channels, he_normal_kernel_and_bias, windows

__all__ = ["Conv2D"]


class Conv2D(Op):
    name = "conv2d"
    layer = "Conv2D"
    family = "conv"
    spatial = True

    def weight_shapes(self, case) -> list:
        k, filters = case.kwargs["kernel_size"], case.kwargs["filters"]
        return [(k, k, channels(case), filters), (filters,)]

    def init_weights(self, rng, shapes) -> list:
        return he_normal_kernel_and_bias(rng, shapes)

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        k, (kernel, bias), x = kwargs["kernel_size"], weights, xs[0]
        xp = _pad(x, k, kwargs.get("padding", "valid"))
        cols = windows(xp, k, 1)
        n, ho, wo = cols.shape[:3]
        cols2 = cols.reshape(n * ho * wo, -1)
        y = (cols2 @ kernel.reshape(-1, kernel.shape[-1])).reshape(n, ho, wo, -1) + bias
        if dy is None:
            return y, None
        dy2 = dy.reshape(-1, dy.shape[-1])
        dkernel = (cols2.T @ dy2).reshape(kernel.shape)
        dcols = (dy2 @ kernel.reshape(-1, kernel.shape[-1]).T).reshape(n, ho, wo, k, k, -1)
        dxp = np.zeros_like(xp)
        for i in range(k):
            for j in range(k):
                dxp[:, i:i + ho, j:j + wo] += dcols[:, :, :, i, j]
        lo = (xp.shape[1] - x.shape[1]) // 2
        dx = dxp[:, lo:lo + x.shape[1], lo:lo + x.shape[2]]
        return y, [dx, dkernel, dy.sum(axis=(0, 1, 2))]

    def forward_flops(self, case, out_shape) -> int:
        k = case.kwargs["kernel_size"]
        return 2 * int(np.prod(out_shape)) * k * k * channels(case)


def _pad(x, k, padding):
    if padding == "same":
        lo = (k - 1) // 2
        return np.pad(x, ((0, 0), (lo, k - 1 - lo), (lo, k - 1 - lo), (0, 0)), "constant")
    return x
