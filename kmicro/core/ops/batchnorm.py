"""BatchNormalization over the channel axis: batch statistics in training, moving ones otherwise."""
import numpy as np

from kmicro.core.ops.base import Op, channels

__all__ = ["BatchNormalization", "EPSILON"]

EPSILON = 1e-3  # Keras' BatchNormalization default, Keras 2 and 3


class BatchNormalization(Op):
    name = "batchnorm"
    layer = "BatchNormalization"
    family = "normalization"
    # Report 001's workaround (channels_first, axis=1) is always shown next to the default.
    twinned = True
    training_matters = True

    def layout_kwargs(self, data_format) -> dict:
        return {"axis": 1 if data_format == "channels_first" else -1}

    def weight_shapes(self, case) -> list:
        return [(channels(case),)] * 4  # gamma, beta, moving_mean, moving_variance

    def init_weights(self, rng, shapes) -> list:
        return [rng.uniform(0.5, 1.5, shapes[0]), rng.normal(0, 0.1, shapes[1]),
                rng.normal(0, 0.1, shapes[2]), rng.uniform(0.5, 1.5, shapes[3])]

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        (gamma, beta, moving_mean, moving_var), x = weights, xs[0]
        axes = tuple(range(x.ndim - 1))
        mean, var = (x.mean(axis=axes), x.var(axis=axes)) if training else (moving_mean, moving_var)
        inv = 1.0 / np.sqrt(var + EPSILON)
        xhat = (x - mean) * inv
        y = xhat * gamma + beta
        if dy is None:
            return y, None
        m = x.size // x.shape[-1]
        dxhat = dy * gamma
        dx = inv / m * (m * dxhat - dxhat.sum(axis=axes) - xhat * (dxhat * xhat).sum(axis=axes))
        return y, [dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)]

    def forward_flops(self, case, out_shape) -> int:
        return 4 * int(np.prod(case.input_shape))
