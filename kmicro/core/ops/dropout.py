"""Dropout: identity in inference; in training the backend's keep-mask, scaled by 1/(1-rate)."""
import numpy as np

from kmicro.core.ops.base import Op

__all__ = ["Dropout"]


class Dropout(Op):
    name = "dropout"
    layer = "Dropout"
    family = "regularization"
    # Each backend draws its own mask, so the check reads the mask back from its output.
    mask_from_backend = True

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        x = xs[0]
        if not training:
            return x, None if dy is None else [dy]
        scale = mask / (1.0 - kwargs["rate"])
        return x * scale, None if dy is None else [dy * scale]

    def forward_flops(self, case, out_shape) -> int:
        return int(np.prod(out_shape))
