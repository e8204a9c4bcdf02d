"""Real-time augmentation as the reports configured ImageDataGenerator, in NumPy.

width/height shift 0.1, horizontal flip, fill 'nearest'. ImageDataGenerator draws a
fractional shift and interpolates each image through scipy; here the shift is rounded
to whole pixels (at most +-3 on 32 px), which with 'nearest' fill is an index gather.
The same code runs on every stack, so its cost is the same in every column.
"""
import numpy as np


def shift_flip(x, augment, rng):
    """A randomly shifted (edge pixels repeated) and half-flipped copy of batch x (N, H, W, C)."""
    if augment.fill_mode != "nearest":
        raise ValueError("only fill_mode='nearest' is implemented")
    n, h, w = x.shape[:3]
    rows = _shifted_index(n, h, augment.height_shift, rng)
    cols = _shifted_index(n, w, augment.width_shift, rng)
    if augment.horizontal_flip:
        flip = rng.rand(n) < 0.5
        cols = np.where(flip[:, None], cols[:, ::-1], cols)
    return x[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]


def _shifted_index(n, size, fraction, rng):
    """(n, size) source indices: position i reads i - shift, clipped to the edge ('nearest')."""
    limit = int(fraction * size)
    shift = rng.randint(-limit, limit + 1, n)
    return np.clip(np.arange(size)[None, :] - shift[:, None], 0, size - 1)
