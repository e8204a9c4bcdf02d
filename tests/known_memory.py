"""Two cases whose memory is known by construction, and the bytes each pass must hold at
least (its output; for fwd+bwd also the input and weight gradients). tests/test_memory.py and
the memory claim of scripts/validate check kmicro's peak bytes against them."""
from kmicro.core import cases

FLOAT32 = 4
# dense(units=64) at 8x32: y 8x64; fwd+bwd also dx 8x32, dW 32x64, db 64.
DENSE = cases.parse_id("dense(units=64)@8x32")
DENSE_FLOOR = {"forward": 8 * 64 * FLOAT32, "forward_train": 8 * 64 * FLOAT32,
               "backward": (8 * 64 + 8 * 32 + 32 * 64 + 64) * FLOAT32}
# conv2d(filters=8,kernel_size=3) at 2x8x8x4, valid padding: y 2x6x6x8; fwd+bwd also dx
# 2x8x8x4, dW 3x3x4x8, db 8.
CONV = cases.parse_id("conv2d(filters=8,kernel_size=3)@2x8x8x4/cl")
CONV_FLOOR = {"forward": 2 * 6 * 6 * 8 * FLOAT32, "forward_train": 2 * 6 * 6 * 8 * FLOAT32,
              "backward": (2 * 6 * 6 * 8 + 2 * 8 * 8 * 4 + 3 * 3 * 4 * 8 + 8) * FLOAT32}
FLOORS = {DENSE.id: DENSE_FLOOR, CONV.id: CONV_FLOOR}
# Above the floor: a backend's temporaries (an activation kept for the backward, a transposed
# copy, im2col for a conv) and, for NumPy, Python's own objects during the call.
FACTOR = 8
SLACK = 64 * 1024  # bytes of Python objects and small scratch any call may hold


def within(peak, floor) -> bool:
    return floor <= peak <= FACTOR * floor + SLACK
