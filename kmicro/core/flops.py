"""Model FLOPs and minimum memory traffic of a case, so tables can show GFLOP/s and GB/s.

These are the textbook counts (a multiply-add is 2 FLOPs; bytes = every input,
output and weight touched once), not what a backend's kernels actually do.
Backward is counted as forward + backward (what the backward pass times).
"""
from __future__ import annotations

import numpy as np

from kmicro.core import reference


def _size(shape) -> int:
    return int(np.prod(shape))


def forward_flops(case) -> int:
    out = reference.output_shape(case)
    kw = case.kwargs
    if case.op == "conv2d":
        k = kw["kernel_size"]
        cin = reference.weight_shapes(case)[0][2]
        return 2 * _size(out) * k * k * cin
    if case.op == "dense":
        return 2 * case.input_shape[0] * case.input_shape[-1] * kw["units"]
    if case.op in ("maxpool", "avgpool"):
        return _size(out) * kw["pool_size"] ** 2
    if case.op == "batchnorm":
        return 4 * _size(case.input_shape)
    if case.op == "add":
        return (case.n_inputs - 1) * _size(out)
    if case.op in ("activation", "dropout"):
        return _size(out)
    return 0


def flops(case, pass_name) -> int:
    """FLOPs of one call of the pass; backward (dx and dW) costs about twice the forward."""
    f = forward_flops(case)
    return 3 * f if pass_name == "backward" else f


def bytes_moved(case, pass_name) -> int:
    itemsize = np.dtype(case.dtype).itemsize
    tensors = case.n_inputs * _size(case.input_shape) + _size(reference.output_shape(case))
    weights = sum(_size(s) for s in reference.weight_shapes(case))
    total = tensors + weights
    # backward also reads dy and writes dx and dW
    return itemsize * (2 * total + tensors if pass_name == "backward" else total)
