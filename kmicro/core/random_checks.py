"""Checks of layers that are random in training, by properties that hold for any draw.

A float64 twin cannot reproduce another layer's random draw, so a training pass of these
layers is checked by what must hold whatever was drawn. Each check returns (error,
tolerance, what was checked); error <= tolerance passes.
- "mask" (Dropout, SpatialDropout1D/2D/3D): every output is 0 or x/(1-rate), the backend's
  own keep-mask read back from the output, and the gradient is that mask times dy.
- "gaussian_noise": y - x is the noise: mean 0 and std `stddev` within sampling error; the
  gradient is dy exactly.
- "gaussian_dropout": y / x is the noise: mean 1 and std sqrt(rate/(1-rate)) within sampling
  error; the gradient is dy times that noise.
- "rotation" (RandomRotation): linear in the image for the drawn angle, so the gradient is
  its adjoint: <y, dy> = <x, dx>; the output stays within the input's range (interpolation
  and reflection only mix input values).
"""

import numpy as np

__all__ = ["KINDS", "check"]

KINDS = ("mask", "gaussian_noise", "gaussian_dropout", "rotation")
EXACT = 1e-3  # as the float64 reference check on a CPU
SAMPLING = 0.05  # a relative error in a noise statistic over >= 10^4 draws (std err < 1 %)


def _rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-12))


def check(kind, kwargs, x, y, dy=None, dx=None) -> tuple:
    """(error, tolerance, description) of a training pass's output y (and gradient dx for
    dy) against the properties of `kind`."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.shape != y.shape:
        return float("inf"), EXACT, f"output shape {y.shape} is not the input's {x.shape}"
    return {"mask": _mask, "gaussian_noise": _noise, "gaussian_dropout": _dropout_noise,
            "rotation": _rotation}[kind](kwargs, x, y, dy, dx)


def _mask(kwargs, x, y, dy, dx):
    keep = (y != 0) / (1.0 - kwargs["rate"])
    err = _rel(y, x * keep)
    if dy is not None:
        err = max(err, _rel(dx, dy * keep))
    return err, EXACT, "properties: the backend's keep-mask, scaled by 1/(1-rate)"


def _noise(kwargs, x, y, dy, dx):
    noise, std = y - x, kwargs["stddev"]
    err = max(abs(noise.mean()) / std, abs(noise.std() / std - 1))
    if dy is not None:
        err = max(err, _rel(dx, dy) / EXACT * SAMPLING)
    return err, SAMPLING, "properties: noise mean 0 and std stddev; gradient dy"


def _dropout_noise(kwargs, x, y, dy, dx):
    rate = kwargs["rate"]
    std = np.sqrt(rate / (1.0 - rate))
    safe = np.abs(x) > 1e-3  # y / x is the noise where x is not near 0
    noise = y[safe] / x[safe]
    err = max(abs(noise.mean() - 1) / std, abs(noise.std() / std - 1))
    if dy is not None:
        err = max(err, _rel(dx[safe], dy[safe] * noise) / EXACT * SAMPLING)
    return err, SAMPLING, "properties: noise mean 1 and std sqrt(rate/(1-rate)); gradient dy x noise"


def _rotation(kwargs, x, y, dy, dx):
    lo, hi = x.min(), x.max()
    span = hi - lo
    err = max(0.0, (lo - y.min()) / span, (y.max() - hi) / span) if np.isfinite(y).all() \
        else float("inf")
    if dy is not None:
        inner_y, inner_x = float((y * dy).sum()), float((x * dx).sum())
        scale = float(np.linalg.norm(y) * np.linalg.norm(dy)) or 1.0
        err = max(err, abs(inner_y - inner_x) / scale)
    return err, EXACT, "properties: output within the input's range; gradient the adjoint"
