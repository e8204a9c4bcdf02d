"""Every clock loop of kmicro, backend-free: first-call (compile) time, adaptive repeats,
a bare loop to judge them against, two steps in turns, and one sample per call.

`measure(step, sync)` times `sync(step())`. `sync` must block until the device has
finished the work behind `step()`'s result; the adapters supply it. Every call is
synchronised, but the clock is read once per sample of `loops` calls (pyperf-style):
single sub-millisecond calls jitter by 10-60% on a small machine, averages do not.
Tested with a fake clock, so nothing here may read time except through `clock`.
Runs on every stack's Python (3.6 to 3.11).
"""
import contextlib
import gc
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["Policy", "Measurement", "first_call", "measure", "samples", "rewarm", "bare_loop",
           "in_turns", "per_call", "host_values"]


@dataclass(frozen=True)
class Policy:
    """How long to keep sampling. `quick()` trades precision for speed."""

    warmup: int = 2  # calls before sampling, at least...
    # ...and at least this long: a pass runs slower for its first ~100 ms after the worker
    # compiled, checked or idled (up to 2.4x, see docs/validation.md, "Fidelity against an
    # independent loop"); an early stop on 7 tight samples would otherwise report that
    # transient.
    warmup_s: float = 0.2
    min_samples: int = 7
    max_samples: int = 200
    min_sample_s: float = 0.01  # calls per sample are chosen so a sample lasts this long
    target_rel_iqr: float = 0.03  # stop early once IQR/median is below this...
    budget_s: float = 0.4  # ...or once this much time was spent sampling
    noisy_rel_iqr: float = 0.10  # flag the result above this

    @classmethod
    def quick(cls) -> "Policy":
        return cls(warmup=1, warmup_s=0.05, min_samples=3, max_samples=30,
                   min_sample_s=0.002, target_rel_iqr=0.10, budget_s=0.2)


@dataclass
class Measurement:
    """Per-call times (seconds; each the mean over `loops` calls) and their statistics."""

    samples: list = field(default_factory=list)
    loops: int = 1
    compile_s: Optional[float] = None
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
                "loops": self.loops, "compile_s": self.compile_s, "noisy": self.noisy}


def _quantile(samples, q) -> float:
    """Linear-interpolation quantile (statistics.quantiles' "inclusive" method); written out
    because the legacy stacks' Python 3.7 workers lack statistics.quantiles."""
    data = sorted(samples)
    pos = q * (len(data) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def host_values(out):
    """The `sync` of a step that returns host values (train_on_batch, a Theano or TF1 session
    run): it has finished when it returns."""
    return out


def first_call(step, sync, clock=time.perf_counter):
    """(outputs, seconds) of the first call, which includes tracing/compilation."""
    t0 = clock()
    out = sync(step())
    return out, clock() - t0


def measure(step, sync, policy: Policy = Policy(), clock=time.perf_counter,
            between=None) -> Measurement:
    """Time `sync(step())` after warm-up until the samples are tight or the budget is spent.

    Call `first_call` before: compile time must never be mixed into the samples.
    `between(phase)`, when given, runs after every `min_sample_s` of warm-up calls ("warmup")
    and after every sample ("sample"); its time is left out of the samples and of both time
    budgets, so the measurement is the one it would be without it (`kmicro calibrate
    --independent` times the independent loop's blocks there, paired with these samples).
    """
    if between is not None:
        clock, between = _excluding(clock, between)
    with _collector_off():
        return _measure(step, sync, policy, clock, between)


def _measure(step, sync, policy, clock, between) -> Measurement:
    warm, started = [], clock()
    handed = started
    while len(warm) < max(policy.warmup, 1) or clock() - started < policy.warmup_s:
        warm.append(_timed(step, sync, 1, clock))
        if between is not None and clock() - handed >= policy.min_sample_s:
            between("warmup")
            handed = clock()
    # Calls per sample from the warmed-up calls: the first ones are the slowest.
    recent = warm[-max(policy.warmup, 1):]
    result = Measurement(policy=policy, loops=_loops(min(recent), policy.min_sample_s))
    started = clock()
    while len(result.samples) < policy.max_samples:
        result.samples.append(_timed(step, sync, result.loops, clock))
        if between is not None:
            between("sample")
        if len(result.samples) >= policy.min_samples and _done(result, clock() - started):
            break
    return result


@contextlib.contextmanager
def _collector_off():
    """Python's garbage collector off while timing, as timeit, pyperf and torch's Timer do, so
    kmicro's samples and the framework's standard timer measure alike: torch Dense(10) forward
    read 9 % slower in the independent loop with the collector on than with torch's Timer
    (docs/validation.md, "Fidelity against an independent loop")."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _excluding(clock, between):
    """(a clock that stands still while `between` runs, `between` timed for it)."""
    paused = [0.0]

    def own_clock():
        return clock() - paused[0]

    def timed_between(phase):
        t0 = clock()
        between(phase)
        paused[0] += clock() - t0
    return own_clock, timed_between


def _timed(step, sync, loops, clock) -> float:
    t0 = clock()
    for _ in range(loops):
        sync(step())
    return (clock() - t0) / loops


def _loops(call_s, min_sample_s) -> int:
    return max(1, math.ceil(min_sample_s / call_s)) if call_s > 0 else 1


def _done(result: Measurement, elapsed: float) -> bool:
    return result.rel_iqr <= result.policy.target_rel_iqr or elapsed >= result.policy.budget_s


def samples(step, sync, loops: int, n: int, clock=time.perf_counter) -> list:
    """n samples of `loops` synchronised calls each, as mean seconds per call: one short
    burst of an interleaved A/B round (no warm-up: the pass is already warm)."""
    with _collector_off():
        return [_timed(step, sync, loops, clock) for _ in range(n)]


def rewarm(step, sync, seconds: float, clock=time.perf_counter) -> None:
    """Untimed synchronised calls for `seconds` (at least one): a pass that another process
    just had the machine for finds its caches and thread pools cold."""
    t0 = clock()
    sync(step())
    while clock() - t0 < seconds:
        sync(step())


def bare_loop(step, sync, n: int, clock=time.perf_counter) -> float:
    """What kmicro's overhead is judged against: n synchronised calls, mean seconds per call."""
    t0 = clock()
    for _ in range(n):
        sync(step())
    return (clock() - t0) / n


def in_turns(step_a, step_b, n: int, warmup: int = 2, clock=time.perf_counter):
    """Measurements of two synchronous steps timed alternately, one call per sample, after
    `warmup` calls of each: load that drifts during the run moves both alike."""
    for _ in range(warmup):
        step_a()
        step_b()
    a, b = Measurement(), Measurement()
    for _ in range(n):
        for m, step in ((a, step_a), (b, step_b)):
            t0 = clock()
            step()
            m.samples.append(clock() - t0)
    return a, b


def per_call(call, indices, clock=time.perf_counter):
    """(Measurement with one sample per `call(i)` for i in `indices`, wall seconds of the
    whole loop). For steps that each take their own input (a model's batch i), which is
    prepared inside the call and so timed with it."""
    m = Measurement()
    started = clock()
    for i in indices:
        t0 = clock()
        call(i)
        m.samples.append(clock() - t0)
    return m, clock() - started
