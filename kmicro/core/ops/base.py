"""The contract every op module fulfils, and the array helpers several ops share.

An op is one Keras layer type. Its class says how kmicro builds the layer (Keras name,
constructor arguments), which seeded weights it gets, how the float64 NumPy reference
computes it and what it costs in textbook FLOPs. The reference works on channels_last
float64 arrays; kmicro.core.reference transposes channels_first cases in and out.
"""
import abc

import numpy as np

__all__ = ["Op", "channels", "he_normal_kernel_and_bias", "windows"]


class Op(abc.ABC):
    """One Keras layer type. Subclasses set the names and implement the two abstract methods."""

    name = ""  # CLI name and first word of every case id: never rename (history is keyed by it)
    layer = ""  # class name in keras.layers
    family = ""  # the group it is reported in (activation, conv, merge, ...)
    reference_kind = "numpy"  # what a record's `reference` names: the float64 check it passed
    layout_free = False  # no data_format: its cases keep the layer's default layout
    positional = False  # several inputs go in as positional arguments, not as one list
    spatial = False  # the layer's config takes data_format
    twinned = False  # --data-format auto also shows its channels_first twin
    training_matters = False  # the training-mode reference differs from inference
    mask_from_backend = False  # random in training: checked against the backend's own keep-mask
    n_inputs = 1  # tensors the catalog feeds the layer

    def layout_kwargs(self, data_format) -> dict:
        """Constructor arguments that follow the case's layout (added to its config)."""
        return {"data_format": data_format} if self.spatial and data_format else {}

    def weight_shapes(self, case) -> list:
        """Shapes of the layer's weights in Keras order (trainable first)."""
        return []

    def make_inputs(self, rng, case) -> list:
        """float64 inputs of `case` drawn from `rng` (standard normal unless the layer wants
        other values)."""
        return [rng.normal(0, 1, case.input_shape) for _ in range(case.n_inputs)]

    def init_weights(self, rng, shapes) -> list:
        """float64 weights of `shapes` drawn from `rng`. The order of draws fixes every stored
        case's values: never reorder them."""
        return []

    @abc.abstractmethod
    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        """(y, grads) of channels_last float64 arrays; grads = [d inputs..., d trainable
        weights...] when dy is given, else None. `mask` is the backend's keep-mask (dropout)."""

    @abc.abstractmethod
    def forward_flops(self, case, out_shape) -> int:
        """Textbook FLOPs of one forward call (a multiply-add is 2)."""


def channels(case) -> int:
    return case.input_shape[1] if case.data_format == "channels_first" else case.input_shape[-1]


def he_normal_kernel_and_bias(rng, shapes) -> list:
    kernel, bias = shapes
    fan_in = int(np.prod(kernel[:-1]))
    return [rng.normal(0, np.sqrt(2.0 / fan_in), kernel), rng.normal(0, 0.1, bias)]


def windows(x, k, stride):
    """(N,H,W,C) -> (N,Ho,Wo,k,k,C) view of the k x k patches, valid positions only.

    as_strided rather than sliding_window_view: the legacy stacks have NumPy < 1.20.
    """
    n, h, w, c = x.shape
    ho, wo = (h - k) // stride + 1, (w - k) // stride + 1
    if ho < 1 or wo < 1:
        raise ValueError(f"a {k}x{k} window does not fit a {h}x{w} input")
    sn, sh, sw, sc = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, ho, wo, k, k, c), (sn, sh * stride, sw * stride, sh, sw, sc), writeable=False)
