"""Backend-free timing loop: first-call (compile) time, warm-up, adaptive repeats.

`measure(step, sync)` times `sync(step())` per call. `sync` must block until the
device has finished the work behind `step()`'s result; the adapters supply it.
Tested with a fake clock, so nothing here may read time except through `clock`.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Policy:
    """How long to keep sampling. `quick()` trades precision for speed."""

    warmup: int = 3
    min_samples: int = 7
    max_samples: int = 500
    target_rel_iqr: float = 0.03  # stop early once IQR/median is below this...
    budget_s: float = 1.5  # ...or once this much time was spent sampling
    noisy_rel_iqr: float = 0.10  # flag the result above this

    @classmethod
    def quick(cls) -> "Policy":
        return cls(warmup=1, min_samples=3, max_samples=30, target_rel_iqr=0.10, budget_s=0.2)


@dataclass
class Measurement:
    """Raw per-call samples (seconds) plus the statistics derived from them."""

    samples: list = field(default_factory=list)
    compile_s: float | None = None
    policy: Policy = field(default_factory=Policy)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def iqr(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        return _quantile(self.samples, 0.75) - _quantile(self.samples, 0.25)

    @property
    def rel_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.rel_iqr > self.policy.noisy_rel_iqr

    def summary(self) -> dict:
        return {"median_s": self.median, "iqr_s": self.iqr, "n_samples": len(self.samples),
                "compile_s": self.compile_s, "noisy": self.noisy}


def _quantile(samples, q) -> float:
    """Linear-interpolation quantile (statistics.quantiles' "inclusive" method); written out
    because the legacy stacks' Python 3.7 workers lack statistics.quantiles."""
    data = sorted(samples)
    pos = q * (len(data) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def first_call(step, sync, clock=time.perf_counter):
    """(outputs, seconds) of the first call, which includes tracing/compilation."""
    t0 = clock()
    out = sync(step())
    return out, clock() - t0


def measure(step, sync, policy: Policy = Policy(), clock=time.perf_counter) -> Measurement:
    """Time `sync(step())` after warm-up until the samples are tight or the budget is spent.

    Call `first_call` before: compile time must never be mixed into the samples.
    """
    result = Measurement(policy=policy)
    for _ in range(policy.warmup):
        sync(step())
    started = clock()
    while len(result.samples) < policy.max_samples:
        t0 = clock()
        sync(step())
        t1 = clock()
        result.samples.append(t1 - t0)
        if len(result.samples) >= policy.min_samples and _done(result, t1 - started):
            break
    return result


def _done(result: Measurement, elapsed: float) -> bool:
    return result.rel_iqr <= result.policy.target_rel_iqr or elapsed >= result.policy.budget_s


def bare_loop(step, sync, n: int, clock=time.perf_counter) -> list:
    """The reference kmicro's overhead is judged against: n synchronised calls, nothing else."""
    times = []
    for _ in range(n):
        t0 = clock()
        sync(step())
        times.append(clock() - t0)
    return times
