"""Paired A/B statistics: the ratio B/A of interleaved rounds, its 95 % confidence interval,
a verdict against a minimum effect, and the smallest effect the rounds could have detected.

Each round gives one paired log-ratio log(b/a), a and b being the median per-call time of one
short burst on each side, timed back to back in random order; drift that moves both sides
alike cancels in the pair (randomized multiple interleaved trials, Abedi & Brecht, ICPE 2017).
Estimate: the median of the log-ratios. Interval: percentile bootstrap of that median
(scipy.stats.bootstrap, 2,000 resamples, seeded, so the same rounds give the same interval).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CONFIDENCE", "Comparison", "compare", "VERDICTS"]

CONFIDENCE = 0.95
RESAMPLES = 2000
VERDICTS = ("slower", "faster", "same")


@dataclass(frozen=True)
class Comparison:
    ratio: float  # B/A
    ci_low: float
    ci_high: float
    rounds: int

    @property
    def mde(self) -> float:
        """The smallest relative change these rounds resolve: half the interval's width (log
        scale), as a fraction (0.05 = 5 %)."""
        return math.exp((math.log(self.ci_high) - math.log(self.ci_low)) / 2) - 1

    def verdict(self, min_effect: float) -> str:
        """slower/faster: the interval excludes 1 and the estimate is beyond `min_effect`;
        same otherwise (no change, or one smaller than the user cares about)."""
        if self.ci_low > 1 and self.ratio >= 1 + min_effect:
            return "slower"
        if self.ci_high < 1 and self.ratio <= 1 / (1 + min_effect):
            return "faster"
        return "same"

    def settled(self, min_effect: float) -> bool:
        """More rounds would not change the verdict: the whole interval lies beyond the
        minimum effect, or within it."""
        up, down = 1 + min_effect, 1 / (1 + min_effect)
        return self.ci_low > up or self.ci_high < down or (down < self.ci_low
                                                           and self.ci_high < up)


def compare(a_times, b_times, seed=0) -> Comparison:
    """The paired comparison of per-round times (seconds, same length, >= 2 rounds)."""
    from scipy import stats  # the CLI side only; workers never compare

    logs = np.log(np.asarray(b_times, float) / np.asarray(a_times, float))
    estimate = float(np.median(logs))
    if np.ptp(logs) == 0:
        low = high = estimate
    else:
        ci = stats.bootstrap((logs,), np.median, confidence_level=CONFIDENCE, method="percentile",
                             n_resamples=RESAMPLES, random_state=np.random.default_rng(seed),
                             vectorized=True).confidence_interval
        low, high = float(ci.low), float(ci.high)
    return Comparison(math.exp(estimate), math.exp(low), math.exp(high), len(logs))
