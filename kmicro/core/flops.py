"""Model FLOPs and minimum memory traffic of a case, so tables can show GFLOP/s and GB/s.

These are the textbook counts (a multiply-add is 2 FLOPs; bytes = every input,
output and weight touched once), not what a backend's kernels actually do. Each
op's module counts its forward FLOPs. Backward is counted as forward + backward
(what the backward pass times).
"""
import numpy as np

from kmicro.core import ops, reference

__all__ = ["bytes_moved", "flops", "forward_flops"]


def _size(shape) -> int:
    return int(np.prod(shape))


def forward_flops(case, out_shape=None, weight_shapes=None):
    """`out_shape` and `weight_shapes`: from the built layer, for ops checked against a
    float64 twin (the others compute them); None where a layer has no textbook count."""
    op = ops.get(case.op)
    if op.reference_kind == ops.FLOAT64_TWIN:
        return op.forward_flops(case, out_shape, weight_shapes)
    return op.forward_flops(case, reference.output_shape(case))


def flops(case, pass_name, out_shape=None, weight_shapes=None):
    """FLOPs of one call of the pass; backward (dx and dW) costs about twice the forward."""
    f = forward_flops(case, out_shape, weight_shapes)
    if f is None:
        return None
    return 3 * f if pass_name == "backward" else f


def bytes_moved(case, pass_name, out_shape=None, weight_shapes=None) -> int:
    itemsize = np.dtype(case.dtype).itemsize
    if out_shape is None:
        out_shape, weight_shapes = reference.output_shape(case), reference.weight_shapes(case)
    tensors = case.n_inputs * _size(case.input_shape) + _size(out_shape)
    weights = sum(_size(s) for s in weight_shapes)
    total = tensors + weights
    # backward also reads dy and writes dx and dW
    return itemsize * (2 * total + tensors if pass_name == "backward" else total)
