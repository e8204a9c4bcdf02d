"""Any Keras layer class as an op, checked against a float64 twin of itself.

The seed ops (conv2d, batchnorm, ...) have hand-written NumPy references. The other layers of
Keras' own layer benchmark, and a user's own layer, are too many and too intricate for that
(GRU's gates, MultiHeadAttention's projections, ConvLSTM3D): their reference is the same layer
class built in float64 on the same backend, with the same weights and inputs, run through the
same backend calls (kmicro/harness/jobs/op.py). That catches what float32 execution and
compilation get wrong; backends disagreeing with each other are caught by comparing their
float64 twins' outputs across stacks (`reference_probe` in the records, findings
"disagree"). Layers that are random in training are checked by properties instead
(kmicro/core/random_checks.py).
"""

import numpy as np

from kmicro.core import layer_flops
from kmicro.core.ops.base import Op

__all__ = ["FLOAT64_TWIN", "KerasLayer"]

FLOAT64_TWIN = "float64 twin"


class KerasLayer(Op):
    """One Keras layer class; weight shapes and output shape come from the built layer."""

    reference_kind = FLOAT64_TWIN
    layout_free = True

    def __init__(self, name, layer, family, n_inputs=1, positional=False, wrapped=None,
                 int_inputs=None, random=None):
        self.name, self.layer, self.family = name, layer, family
        self.n_inputs = n_inputs
        self.positional = positional  # MultiHeadAttention(query, value), not ([q, v])
        self.wrapped = wrapped  # Bidirectional/TimeDistributed: the inner layer's class
        self.int_inputs = int_inputs  # config key bounding integer inputs (Embedding ids)
        # None, or how training passes are checked: "mask" (the backend's keep-mask, as
        # Dropout), "gaussian_noise", "gaussian_dropout", "rotation" (random_checks.py).
        self.random = random

    def class_path(self, case) -> str:
        """'module:Class' of the layer to build (the user's own for the `user` op)."""
        if self.name == "user":
            return case.kwargs["layer"]
        return f"keras.layers:{self.layer}"

    def make_inputs(self, rng, case) -> list:
        if self.int_inputs:  # ids below the vocabulary size; float64 like every input here
            high = case.kwargs[self.int_inputs]
            return [rng.randint(0, high, case.input_shape).astype(np.float64)]
        return super().make_inputs(rng, case)

    def init_weights(self, rng, shapes) -> list:
        # N(0, 1/fan_in): outputs keep about unit scale through kernels, recurrent kernels
        # and 1-D scales alike, so float32 and float64 stay comparable.
        return [rng.normal(0, 1 / np.sqrt(s[0] if len(s) == 1 else np.prod(s[:-1])), s)
                for s in shapes]

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        raise ValueError(f"{self.layer} is checked against its float64 twin in the worker")

    def forward_flops(self, case, out_shape, weight_shapes=None):
        """Textbook FLOPs where a count exists for this layer, else None."""
        if weight_shapes is None:
            return None
        return layer_flops.forward_flops(self.layer, self.wrapped, case, out_shape,
                                         weight_shapes)
