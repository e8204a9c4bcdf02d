"""The machine's measured limits (NumPy on the host CPU), for "how far from peak" columns."""
import time

import numpy as np


def _best_of(fn, repeats=5) -> float:
    fn()  # warm-up: page faults, BLAS thread start
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_gflops(n=2048) -> float:
    a = np.random.RandomState(0).rand(n, n).astype(np.float32)
    b = a.copy()
    return 2 * n**3 / _best_of(lambda: a @ b) / 1e9


def copy_gbps(mib=256) -> float:
    src = np.ones(mib * 2**20 // 4, np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / _best_of(lambda: np.copyto(dst, src)) / 1e9


def measure() -> dict:
    return {"matmul_gflops": matmul_gflops(), "copy_gbps": copy_gbps()}
