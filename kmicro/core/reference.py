"""Seeded inputs/weights and the float64 NumPy reference every backend is checked against.

Each op's own module (kmicro.core.ops) holds its weight shapes, initialisation and
channels_last reference; this module seeds them and transposes channels_first cases
in and out. Weight order and shapes follow Keras (kernel, bias; gamma, beta,
moving_mean, moving_variance). RandomState is used because its stream is frozen
across NumPy versions, so the Theano stack (old NumPy) gets bit-identical inputs.
"""
import zlib

import numpy as np

from kmicro.core import ops
from kmicro.core.ops import batchnorm

__all__ = ["BN_EPSILON", "compute", "make_dy", "make_inputs", "make_weights", "max_rel_err",
           "output_shape", "probe", "probe_gap", "weight_shapes"]

BN_EPSILON = batchnorm.EPSILON


def _rng(case, seed, salt):
    return np.random.RandomState((zlib.crc32(case.id.encode()) + 7919 * seed + salt) % 2**32)


def weight_shapes(case) -> list:
    """Shapes of the layer's weights in Keras order (trainable first)."""
    return ops.get(case.op).weight_shapes(case)


def make_weights(case, seed=0, shapes=None) -> list:
    """Seeded weights; `shapes` for ops whose weight shapes only the built layer knows."""
    rng = _rng(case, seed, 1)
    weights = ops.get(case.op).init_weights(rng, weight_shapes(case) if shapes is None else shapes)
    return [w.astype(case.dtype) for w in weights]


def make_inputs(case, seed=0) -> list:
    inputs = ops.get(case.op).make_inputs(_rng(case, seed, 2), case)
    return [x.astype(case.dtype) for x in inputs]


def make_dy(case, out_shape, seed=0):
    return _rng(case, seed, 3).normal(0, 1, out_shape).astype(case.dtype)


def _to_nhwc(case, a):
    if case.data_format == "channels_first" and a.ndim == 4:
        return a.transpose(0, 2, 3, 1)
    return a


def _from_nhwc(case, a):
    if case.data_format == "channels_first" and a.ndim == 4:
        return a.transpose(0, 3, 1, 2)
    return a


def compute(case, inputs, weights, training, dy=None, dropout_mask=None):
    """float64 (y, grads); grads = [d inputs..., d trainable weights...] when dy is given.

    Dropout is random per backend, so its check takes the backend's own keep-mask.
    """
    xs = [_to_nhwc(case, np.asarray(a, np.float64)) for a in inputs]
    w = [np.asarray(a, np.float64) for a in weights]
    dyn = None if dy is None else _to_nhwc(case, np.asarray(dy, np.float64))
    mask = None if dropout_mask is None else _to_nhwc(case, np.asarray(dropout_mask, np.float64))
    y, grads = ops.get(case.op).reference(case.kwargs, xs, w, training, dyn, mask)
    y = _from_nhwc(case, y)
    if grads is not None:
        grads = [_from_nhwc(case, g) if i < case.n_inputs else g for i, g in enumerate(grads)]
    return y, grads


def output_shape(case) -> tuple:
    """Shape of the layer's output, from the inference reference on a batch of one."""
    one = case.__class__(case.op, case.config, (1,) + case.input_shape[1:], case.data_format,
                         case.dtype, case.n_inputs)
    zeros = [np.zeros(one.input_shape) for _ in range(case.n_inputs)]
    weights = [np.zeros(s) for s in weight_shapes(case)]
    y, _ = compute(one, zeros, weights, training=False)
    return (case.input_shape[0],) + y.shape[1:]


def probe(arrays) -> list:
    """[dot with a fixed pseudo-random array, L2 norm] of each array: a short fingerprint
    that records from different stacks can be compared by (the float64 twins' outputs
    must agree across backends: findings "disagree")."""
    out = []
    for a in arrays:
        a = np.asarray(a, np.float64)
        weights = np.random.RandomState(a.size % 2**32).normal(0, 1, a.shape)
        out.append([float((a * weights).sum()), float(np.sqrt((a * a).sum()))])
    return out


# A gradient is measured against at least this fraction of the largest gradient of its pass:
# one that is zero in exact arithmetic (MultiHeadAttention's key bias: softmax ignores a shift
# shared by every key) holds only rounding, which no scale of its own can judge.
GRADIENT_FLOOR = 1e-2


def _scales(peaks) -> list:
    """Each tensor's scale from its peak: the output's own, a gradient's at least
    GRADIENT_FLOOR of the largest gradient's."""
    floor = GRADIENT_FLOOR * max(peaks[1:] or [0.0])
    return [max(peaks[0], 1e-12)] + [max(p, floor, 1e-12) for p in peaks[1:]]


def max_rel_err(got, want) -> float:
    """Largest |got - want| over the output and its gradients, each scaled by its own largest
    |want| (a gradient's at least GRADIENT_FLOOR of the largest gradient's)."""
    got = [np.asarray(g, np.float64) for g in got]
    want = [np.asarray(r, np.float64) for r in want]
    if any(g.shape != r.shape for g, r in zip(got, want)):
        return float("inf")
    # not max(initial=): NumPy 1.13 (keras1-theano)
    peaks = [float(np.abs(r).max()) if r.size else 0.0 for r in want]
    worst = 0.0
    for g, r, scale in zip(got, want, _scales(peaks)):
        if r.size:
            worst = max(worst, float(np.abs(g - r).max()) / scale)
    return worst


def probe_gap(a, b) -> float:
    """Largest relative difference between two probes of the same pass, each tensor's dot
    and norm scaled like max_rel_err's tensors."""
    if len(a) != len(b):
        return float("inf")
    norms = [max(abs(norm_a), abs(norm_b)) for (_, norm_a), (_, norm_b) in zip(a, b)]
    gap = 0.0
    for (dot_a, norm_a), (dot_b, norm_b), scale in zip(a, b, _scales(norms) if norms else []):
        gap = max(gap, abs(dot_a - dot_b) / scale, abs(norm_a - norm_b) / scale)
    return gap
