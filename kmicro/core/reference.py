"""Seeded inputs/weights and the float64 NumPy reference every backend is checked against.

Everything works on channels_last arrays internally; channels_first cases are
transposed in and out. Weight order and shapes follow Keras (kernel, bias;
gamma, beta, moving_mean, moving_variance). RandomState is used because its
stream is frozen across NumPy versions, so the Theano stack (old NumPy) gets
bit-identical inputs.
"""
from __future__ import annotations

import zlib

import numpy as np

BN_EPSILON = 1e-3  # Keras' BatchNormalization default, Keras 2 and 3


def _rng(case, seed, salt):
    return np.random.RandomState((zlib.crc32(case.id.encode()) + 7919 * seed + salt) % 2**32)


def _channels(case) -> int:
    return case.input_shape[1] if case.data_format == "channels_first" else case.input_shape[-1]


def weight_shapes(case) -> list:
    """Shapes of the layer's weights in Keras order (trainable first)."""
    kw = case.kwargs
    if case.op == "conv2d":
        k = kw["kernel_size"]
        return [(k, k, _channels(case), kw["filters"]), (kw["filters"],)]
    if case.op == "dense":
        return [(case.input_shape[-1], kw["units"]), (kw["units"],)]
    if case.op == "batchnorm":
        return [(_channels(case),)] * 4
    return []


def n_trainable(case) -> int:
    return {"conv2d": 2, "dense": 2, "batchnorm": 2}.get(case.op, 0)


def make_weights(case, seed=0) -> list:
    rng = _rng(case, seed, 1)
    shapes = weight_shapes(case)
    weights = []
    if case.op == "batchnorm":
        weights = [rng.uniform(0.5, 1.5, shapes[0]), rng.normal(0, 0.1, shapes[1]),
                   rng.normal(0, 0.1, shapes[2]), rng.uniform(0.5, 1.5, shapes[3])]
    elif shapes:
        kernel = shapes[0]
        fan_in = int(np.prod(kernel[:-1]))
        weights = [rng.normal(0, np.sqrt(2.0 / fan_in), kernel), rng.normal(0, 0.1, shapes[1])]
    return [w.astype(case.dtype) for w in weights]


def make_inputs(case, seed=0) -> list:
    rng = _rng(case, seed, 2)
    return [rng.normal(0, 1, case.input_shape).astype(case.dtype) for _ in range(case.n_inputs)]


def make_dy(case, out_shape, seed=0):
    return _rng(case, seed, 3).normal(0, 1, out_shape).astype(case.dtype)


# --- layout -------------------------------------------------------------------------------------

def _to_nhwc(case, a):
    if case.data_format == "channels_first" and a.ndim == 4:
        return a.transpose(0, 2, 3, 1)
    return a


def _from_nhwc(case, a):
    if case.data_format == "channels_first" and a.ndim == 4:
        return a.transpose(0, 3, 1, 2)
    return a


# --- forward / backward per op, channels_last float64 --------------------------------------------

def _windows(x, k, stride):
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


def _conv_pad(x, k, padding):
    if padding == "same":
        lo = (k - 1) // 2
        return np.pad(x, ((0, 0), (lo, k - 1 - lo), (lo, k - 1 - lo), (0, 0)))
    return x


def _conv(kw, x, w, dy=None):
    k, (kernel, bias) = kw["kernel_size"], w
    xp = _conv_pad(x, k, kw.get("padding", "valid"))
    cols = _windows(xp, k, 1)
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


def _dense(kw, x, w, dy=None):
    kernel, bias = w
    z = x @ kernel + bias
    y, dz = _activation(kw.get("activation", "linear"), z, dy)
    if dy is None:
        return y, None
    return y, [dz @ kernel.T, x.T @ dz, dz.sum(axis=0)]


def _activation(name, x, dy=None):
    if name == "relu":
        y = np.maximum(x, 0)
        return y, None if dy is None else dy * (x > 0)
    if name == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        s = e / e.sum(axis=-1, keepdims=True)
        return s, None if dy is None else s * (dy - (dy * s).sum(axis=-1, keepdims=True))
    if name == "linear":
        return x, dy
    raise ValueError(f"no reference for activation {name!r}")


def _batchnorm(x, w, training, dy=None):
    gamma, beta, moving_mean, moving_var = w
    axes = tuple(range(x.ndim - 1))
    mean, var = (x.mean(axis=axes), x.var(axis=axes)) if training else (moving_mean, moving_var)
    inv = 1.0 / np.sqrt(var + BN_EPSILON)
    xhat = (x - mean) * inv
    y = xhat * gamma + beta
    if dy is None:
        return y, None
    m = x.size // x.shape[-1]
    dxhat = dy * gamma
    dx = inv / m * (m * dxhat - dxhat.sum(axis=axes) - xhat * (dxhat * xhat).sum(axis=axes))
    return y, [dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)]


def _pool(kind, kw, x, dy=None):
    p = kw["pool_size"]
    win = _windows(x, p, kw.get("strides") or p)
    n, ho, wo = win.shape[:3]
    flat = win.reshape(n, ho, wo, p * p, -1)
    if kind == "max":
        y = flat.max(axis=3)
        share = flat == y[:, :, :, None]
        share = share / share.sum(axis=3, keepdims=True)
    else:
        y = flat.mean(axis=3)
        share = np.full(flat.shape, 1.0 / (p * p))
    if dy is None:
        return y, None
    dx = np.zeros_like(x)
    contrib = (share * dy[:, :, :, None]).reshape(n, ho, wo, p, p, -1)
    for i in range(p):
        for j in range(p):
            dx[:, i:i + ho * p:p, j:j + wo * p:p] += contrib[:, :, :, i, j]
    return y, [dx]


def _dropout(kw, x, training, mask, dy=None):
    if not training:
        return x, None if dy is None else [dy]
    scale = mask / (1.0 - kw["rate"])
    return x * scale, None if dy is None else [dy * scale]


def compute(case, inputs, weights, training, dy=None, dropout_mask=None):
    """float64 (y, grads); grads = [d inputs..., d trainable weights...] when dy is given.

    Dropout is random per backend, so its check takes the backend's own keep-mask.
    """
    xs = [_to_nhwc(case, np.asarray(a, np.float64)) for a in inputs]
    w = [np.asarray(a, np.float64) for a in weights]
    dyn = None if dy is None else _to_nhwc(case, np.asarray(dy, np.float64))
    mask = None if dropout_mask is None else _to_nhwc(case, np.asarray(dropout_mask, np.float64))
    y, grads = _dispatch(case, xs, w, training, dyn, mask)
    y = _from_nhwc(case, y)
    if grads is not None:
        grads = [_from_nhwc(case, g) if i < case.n_inputs else g for i, g in enumerate(grads)]
    return y, grads


def _dispatch(case, xs, w, training, dy, mask):
    kw, x, op = case.kwargs, xs[0], case.op
    if op == "conv2d":
        return _conv(kw, x, w, dy)
    if op == "dense":
        return _dense(kw, x, w, dy)
    if op == "batchnorm":
        return _batchnorm(x, w, training, dy)
    if op in ("maxpool", "avgpool"):
        return _pool(op[:3], kw, x, dy)
    if op == "activation":
        y, dx = _activation(kw["activation"], x, dy)
        return y, None if dy is None else [dx]
    if op == "add":
        return sum(xs), None if dy is None else [dy] * len(xs)
    if op == "dropout":
        return _dropout(kw, x, training, mask, dy)
    if op == "flatten":
        return x.reshape(len(x), -1), None if dy is None else [dy.reshape(x.shape)]
    raise ValueError(f"no reference for op {op!r}")


def output_shape(case) -> tuple:
    """Shape of the layer's output, from the reference on a batch of one."""
    one = case.__class__(case.op, case.config, (1,) + case.input_shape[1:], case.data_format,
                         case.dtype, case.n_inputs)
    zeros = [np.zeros(one.input_shape) for _ in range(case.n_inputs)]
    weights = [np.zeros(s) for s in weight_shapes(case)]
    mask = np.ones(one.input_shape) if case.op == "dropout" else None
    y, _ = compute(one, zeros, weights, training=False, dropout_mask=mask)
    return (case.input_shape[0],) + y.shape[1:]


def max_rel_err(got, want) -> float:
    """Largest |got - want| over all tensors, each scaled by its own largest |want|."""
    worst = 0.0
    for g, r in zip(got, want):
        g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
        if g.shape != r.shape:
            return float("inf")
        scale = max(float(np.abs(r).max(initial=0.0)), 1e-12)
        worst = max(worst, float(np.abs(g - r).max(initial=0.0)) / scale)
    return worst
