"""Textbook forward FLOPs of the layers checked against a float64 twin (a multiply-add is 2).

Counted from the built layer's weight shapes and the output shape, where a standard count
exists: convolutions, dense and einsum kernels, recurrent cells, attention. Elementwise,
pooling and reshaping layers return None: their cost is memory traffic (`bytes`), not FLOPs.
"""

from functools import reduce

__all__ = ["forward_flops"]

_CONV = {"Conv1D", "Conv3D", "Conv2D"}
_TRANSPOSED = {"Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"}
_DEPTHWISE = {"DepthwiseConv1D", "DepthwiseConv2D"}
_SEPARABLE = {"SeparableConv1D", "SeparableConv2D"}
_RNN = {"SimpleRNN", "GRU", "LSTM"}
_CONV_RNN = {"ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"}


def _size(shape) -> int:
    return reduce(lambda a, b: a * b, (int(d) for d in shape), 1)  # math.prod: Python 3.8+


def forward_flops(layer, wrapped, case, out_shape, weight_shapes):
    """FLOPs of one forward call, or None where there is no textbook count."""
    shape, kernels = case.input_shape, [w for w in weight_shapes if len(w) >= 2]
    if layer in ("Bidirectional", "TimeDistributed"):
        # The inner layer's count over every kernel: both directions, or every time step.
        if layer == "TimeDistributed":
            inner = type(case)(case.op, case.config, (shape[0] * shape[1],) + shape[2:])
            return forward_flops(wrapped, None, inner, (inner.input_shape[0],) + out_shape[2:],
                                 weight_shapes)
        return forward_flops(wrapped, None, case, out_shape, weight_shapes)
    if layer in _CONV:  # every output element: one dot over the kernel window and channels
        return 2 * _size(out_shape) * _size(kernels[0][:-1])
    if layer in _TRANSPOSED:  # every input element scattered over the window, per filter
        return 2 * _size(shape) * _size(kernels[0][:-2]) * kernels[0][-2]
    if layer in _DEPTHWISE:
        return 2 * _size(out_shape) * _size(kernels[0][:-2])
    if layer in _SEPARABLE:
        depthwise, pointwise = kernels[0], kernels[1]
        spatial = _size(out_shape[1:-1]) * shape[0]
        return 2 * spatial * (_size(depthwise) + _size(pointwise))
    if layer in ("Dense", "EinsumDense"):
        return 2 * _size(out_shape) * kernels[0][0]  # kernel (in, ...out): one MAC per in
    if layer in _RNN:  # per step: the input and recurrent kernels, all gates
        steps = shape[0] * shape[1]
        return 2 * steps * sum(_size(k) for k in kernels)
    if layer in _CONV_RNN:  # per step and output position: both kernels' windows
        steps, positions = shape[0] * shape[1], _size(out_shape[1:-1])
        return 2 * steps * positions * sum(_size(k) for k in kernels)
    if layer == "Attention":  # scores q.k, then the weighted sum of values
        (b, tq, d), tv = shape, shape[1]
        return 4 * b * tq * tv * d
    if layer == "MultiHeadAttention":  # four projections, then per head scores and sum
        b, t = shape[0], shape[1]
        heads, key_dim = (kernels[0][1], kernels[0][2]) if len(kernels[0]) == 3 else (1, 1)
        projections = 2 * b * t * sum(_size(k) for k in kernels)
        return projections + 4 * b * heads * t * t * key_dim
    return None

