"""Paired A/B statistics: the ratio B/A of interleaved rounds, its confidence interval, a
verdict against a minimum effect, and the smallest effect the rounds could have detected.

Each round gives one paired log-ratio log(b/a), a and b being the fastest per-call time of one
short burst on each side, timed back to back in random order; drift that moves both sides
alike cancels in the pair (randomized multiple interleaved trials, Abedi & Brecht, ICPE 2017).
Estimate: the median of the log-ratios. Interval: the wider, at each end, of two intervals of
that median:
- the distribution-free one from order statistics (the sign test's: [x(k), x(n+1-k)] with
  binomial coverage), exact for independent rounds and untouched by a descheduled outlier;
- one from the worker pairs' own medians (the median -+ z times their standard error): the
  rounds of one worker pair share that pair's own speed, which the first interval takes for
  independent evidence (jax A/A: one pair of processes read a Conv2D 3.4x apart for all its
  rounds, the others within 5 %).
A one-level percentile bootstrap of the median was tried first and called 16 of 81 A/A passes
changed (it under-covers at 6-10 rounds). A two-level bootstrap (pairs, then rounds within
them; Kalibera & Jones, ISMM 2013) was the second interval next: it counts the rounds' own
noise twice: on the same recorded A/A rounds its median MDE at 25 rounds was 4.7 % against
3.3 % for the pairs' medians, whose 95 % interval still excluded 1 in only 2.2-3.3 % of
733-2154 A/A passes at 15-50 rounds (docs/validation.md, "A/A"). Passes stop early only on a 99 % interval;
the reported verdict uses 95 %.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

__all__ = ["CONFIDENCE", "EARLY_CONFIDENCE", "Comparison", "compare", "median_interval",
           "pairs_interval", "rounds_needed", "VERDICTS"]

CONFIDENCE = 0.95
EARLY_CONFIDENCE = 0.99  # stopping a pass early: every look at the data is another chance
VERDICTS = ("slower", "faster", "same")


@dataclass(frozen=True)
class Comparison:
    ratio: float  # B/A
    ci_low: float
    ci_high: float
    rounds: int
    covered: bool = True  # False: too few rounds for the confidence; the interval is the range

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

    def conclusive(self, min_effect: float) -> bool:
        """False for a `same` whose interval still reaches a change of `min_effect`: no
        change was shown, but none that size was ruled out either (more rounds narrow it)."""
        return self.verdict(min_effect) != "same" or self._within(min_effect)

    def settled(self, min_effect: float) -> bool:
        """More rounds would not change the verdict: the whole interval lies beyond the
        minimum effect, or within it. Judge it on an EARLY_CONFIDENCE comparison."""
        if not self.covered:
            return False
        up, down = 1 + min_effect, 1 / (1 + min_effect)
        return self.ci_low > up or self.ci_high < down or self._within(min_effect)

    def _within(self, min_effect: float) -> bool:
        """The whole interval lies inside a change of `min_effect` either way."""
        return 1 / (1 + min_effect) < self.ci_low and self.ci_high < 1 + min_effect


def median_interval(values, confidence=CONFIDENCE) -> tuple:
    """(low, high, covered): the order statistics x(k), x(n+1-k) bracketing the median with
    at least `confidence` (coverage 1 - 2 P(Binomial(n, 1/2) < k)); the whole range, not
    covered, when there are too few values for that."""
    x = sorted(values)
    n, k = len(x), _order_rank(len(x), confidence)
    return x[k - 1], x[n - k], 2 * 0.5 ** n <= 1 - confidence


@functools.lru_cache(maxsize=None)
def _order_rank(n, confidence) -> int:
    """The k of median_interval: the largest k <= n // 2 whose lower neighbours' binomial
    tail, 2 P(Binomial(n, 1/2) <= k - 1), stays within 1 - confidence (1 when none does).
    Cached: the rounds ask for the same (n, confidence) after every round of every pass, and
    one binomial tail per k cost 0.3-0.5 ms a look."""
    from scipy.stats import binom  # the CLI side only; workers never compare

    tails = 2 * binom.cdf(range(1, n // 2), n, 0.5)  # k - 1 = 1 .. n // 2 - 1
    k = 1
    for tail in tails:
        if tail > 1 - confidence:
            break
        k += 1
    return k


def pairs_interval(values, groups, confidence=CONFIDENCE) -> tuple:
    """(low, high): the median of `values` -+ z times the standard error of the worker pairs'
    own medians (`groups[i]` names the pair of values[i]).

    With pair offsets u (variance t2 over G pairs) on top of the rounds' own noise, the
    median's variance is the order statistics' share plus t2 / G; estimating t2 from the
    spread of the pairs' medians less their within-pair part, the interval's half-width
    comes out as the larger of the order statistics' one and this one (a design effect, as
    in Kish's survey sampling). So a pass whose pairs agree keeps the order statistics'
    interval, and one whose pairs read it apart gets theirs."""
    from scipy.stats import norm  # the CLI side only

    medians = [statistics.median([v for v, g in zip(values, groups) if g == name])
               for name in dict.fromkeys(groups)]
    half = norm.ppf(0.5 + confidence / 2) * statistics.stdev(medians) / math.sqrt(len(medians))
    centre = statistics.median(values)
    return centre - half, centre + half


def compare(a_times, b_times, confidence=CONFIDENCE, groups=None) -> Comparison:
    """The paired comparison of per-round times (seconds, same length, >= 2 rounds);
    `groups`: the worker pair of each round, when the rounds came from more than one."""
    logs = [math.log(b / a) for a, b in zip(a_times, b_times)]
    low, high, covered = median_interval(logs, confidence)
    if groups is not None and len(set(groups)) > 1:
        low2, high2 = pairs_interval(logs, groups, confidence)
        low, high = min(low, low2), max(high, high2)
    return Comparison(math.exp(statistics.median(logs)), math.exp(low), math.exp(high),
                      len(logs), covered)


def rounds_needed(mde, rounds, min_effect):
    """About how many rounds would resolve `min_effect`, from `rounds` that resolved `mde`:
    an interval of the median narrows as 1/sqrt(rounds). `rounds` itself when it already
    does; None for a minimum effect of 0 (no number of rounds resolves it)."""
    if mde <= min_effect:
        return rounds
    if min_effect <= 0:
        return None
    return math.ceil(rounds * (math.log1p(mde) / math.log1p(min_effect)) ** 2)
