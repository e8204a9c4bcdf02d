"""`kmicro bisect`: the first commit of a package's history that made one pass slower (or,
when the bad end is faster, the first that made it faster).

Every tested commit becomes a stack (`kmicro env`, built once per commit and kept), compared
with the good end by `kmicro ab`'s interleaved rounds. The two ends are compared first: when
they do not differ beyond the minimum effect, there is nothing to bisect and no commit is named.
Otherwise the history is bisected on "slower than good" calls.

A call is made on evidence, not on "the interval did not exclude 1": a commit in between is
`slower` when kmicro ab says so and `not slower` only once its interval lies below the midpoint
between good and the bad end's ratio; until one of the two holds, it gets more rounds on fresh
worker pairs. Reading "could not tell" as "not slower" sent the bisection past the change
(Keras history, jax BN: commit 15 of 25, two after the plant, read 1.096 (0.933-1.204) and the
search named commit 16).
"""
from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field, replace

from kmicro.analysis import ab
from kmicro.core import envs, stacks, variant_cache
from kmicro.core.errors import UsageError

__all__ = ["Commit", "Bisection", "history", "variant", "run"]


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


@dataclass
class Bisection:
    good: Commit
    bad: Commit
    tested: list = field(default_factory=list)  # (Commit, A/B record vs good), in test order
    first_changed: Commit = None  # None: no significant change between the ends
    direction: str = "slower"  # or "faster": the bad end sped up, and its first commit is sought

    @property
    def ends_differ(self) -> bool:
        return self.first_changed is not None


def _git(repo, *args) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise UsageError(f"git {' '.join(args)} in {repo}: "
                         f"{(out.stderr.strip().splitlines() or ['failed'])[-1]}")
    return out.stdout.strip()


def _commit(repo, rev) -> Commit:
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise UsageError(f"no such revision {rev!r} in {repo} (or it is not a git repository)")
    sha = found.stdout.strip()
    return Commit(sha, _git(repo, "log", "-1", "--format=%s", sha))


def history(repo, good, bad) -> tuple:
    """(good, [commits after good up to bad, oldest first]) on bad's first-parent line."""
    good_c, bad_c = _commit(repo, good), _commit(repo, bad)
    shas = _git(repo, "rev-list", "--reverse", "--first-parent", f"{good_c.sha}..{bad_c.sha}")
    if not shas:
        raise UsageError(f"--bad {bad} is not a later commit than --good {good} in {repo}")
    return good_c, [_commit(repo, sha) for sha in shas.split()]


def variant(base, package, repo, commit) -> stacks.Stack:
    """The stack of `base` with `package` built from `commit`: made once, then reused."""
    return variant_cache.variant(base, envs.parse_set(f"{package}@{commit.sha}", repo))


def run(repo, good, bad, base, package, case, pass_name, options, settings, progress=None,
        sink=None, extend=2):
    """The Bisection; `progress(text)` hears of every step, `sink(record)` gets each tested
    commit's A/B record as soon as it is judged. A commit whose call is not settled after one
    `kmicro ab` run gets up to `extend` more runs (fresh worker pairs), judged on all rounds."""
    say = progress or (lambda text: None)
    good_c, commits = history(repo, good, bad)
    result = Bisection(good_c, commits[-1])
    say(f"building {package} at {good_c.sha[:10]} (good) and {commits[-1].sha[:10]} (bad)")
    reference = variant(base, package, repo, good_c)

    def judge(commit, call) -> dict:
        say(f"comparing {commit.sha[:10]} with good ({commit.subject[:50]})")
        stack, record = variant(base, package, repo, commit), None
        for run_number in range(1 + extend):
            got = []
            ab.run(reference, stack, [case], [pass_name], options,
                   replace(settings, seed=settings.seed + run_number), got.append)
            (more,) = got
            if more["status"] != "ok":  # kept in the results, as before the extra runs
                more["commit"] = commit.sha
                result.tested.append((commit, more))
                if sink:
                    sink(more)
                raise UsageError(f"{commit.sha[:10]}: {more['error']}")
            record = more if record is None else ab.pooled(record, more, settings.min_effect)
            record.update(commit=commit.sha, **call(record, final=run_number == extend))
            if record["settled"]:
                break
            say(f"  {commit.sha[:10]}: {record['ratio']:.3f} ({record['ci_low']:.3f}-"
                f"{record['ci_high']:.3f}) after {record['rounds']} rounds is not settled"
                + ("" if run_number == extend else ": more rounds on fresh worker pairs"))
        result.tested.append((commit, record))
        if sink:
            sink(record)
        return record

    ends = judge(commits[-1], lambda r, final: _end_call(r, settings.min_effect))
    if ends["call"] == "same":
        return result
    # A bad end that is faster: the same search for the commit that sped it up.
    result.direction = ends["call"]
    lo, hi = -1, len(commits) - 1  # commits[hi] changed against good; lo did not (good itself)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if judge(commits[mid], lambda r, final: _step_call(r, ends["ratio"], final,
                                                           result.direction))[
                "call"] == result.direction:
            hi = mid
        else:
            lo = mid
    result.first_changed = commits[hi]
    return result


def _end_call(record, min_effect) -> dict:
    """The bad end against good: `slower`/`faster` as kmicro ab judges it; `same` is settled
    only once the interval also rules out a slowdown of the minimum effect (an interval that
    still reaches past it is too little evidence for "no change")."""
    verdict = record["verdict"]
    settled = verdict != "same" or record["ci_high"] < 1 + min_effect
    return dict(call=verdict, settled=settled)


def _step_call(record, end_ratio, final, direction="slower") -> dict:
    """A commit in between: `slower` as kmicro ab judges it, or `not slower` once its whole
    interval lies below the (geometric) midpoint between good (1) and the bad end's ratio: closer
    to good than to bad. (Below the bad end's estimate itself was too weak: a planted commit read
    1.18 (0.936-1.197) against an end of 1.205 and was called not slower.) Unsettled after every
    extra run: the side of the midpoint its estimate lies on. Bisecting a speed-up (`direction`
    faster), the same with the ratios mirrored: `faster`, or `not faster` above the midpoint."""
    midpoint = math.sqrt(end_ratio)
    sign = 1 if direction == "slower" else -1
    if record["verdict"] == direction:
        return dict(call=direction, settled=True)
    near_end = record["ci_low"] if sign < 0 else record["ci_high"]
    if sign * math.log(near_end) < sign * math.log(midpoint):
        return dict(call=f"not {direction}", settled=True)
    leaning = direction if sign * math.log(record["ratio"]) >= sign * math.log(midpoint) \
        else f"not {direction}"
    return dict(call=leaning, settled=False) if final else dict(call=None, settled=False)
