"""`kmicro bisect`: the first commit of a package's history that made one pass slower.

Every tested commit becomes a stack (`kmicro env`, built once per commit and kept), compared
with the good end by `kmicro ab`'s interleaved rounds. The two ends are compared first: when
they do not differ beyond the minimum effect, there is nothing to bisect and no commit is named.
Otherwise the history is bisected on "slower than good" verdicts.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from kmicro.analysis import ab
from kmicro.core import envs, stacks, user_stacks
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
    first_slow: Commit = None  # None: no significant change between the ends

    @property
    def ends_differ(self) -> bool:
        return self.first_slow is not None


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
    name = f"bisect-{envs.normalise(package)}-{commit.sha[:10]}-{base}"
    known = stacks.all_stacks().get(name)
    if known is not None and known.installed:
        return known
    return user_stacks.create_variant(name, base, [envs.parse_set(f"{package}@{commit.sha}",
                                                                  repo)])


def run(repo, good, bad, base, package, case, pass_name, options, settings, progress=None,
        sink=None):
    """The Bisection; `progress(text)` hears of every step, `sink(record)` gets each tested
    commit's A/B record as soon as it is judged."""
    say = progress or (lambda text: None)
    good_c, commits = history(repo, good, bad)
    result = Bisection(good_c, commits[-1])
    say(f"building {package} at {good_c.sha[:10]} (good) and {commits[-1].sha[:10]} (bad)")
    reference = variant(base, package, repo, good_c)

    def judge(commit) -> dict:
        say(f"comparing {commit.sha[:10]} with good ({commit.subject[:50]})")
        got = []
        ab.run(reference, variant(base, package, repo, commit), [case], [pass_name], options,
               settings, got.append)
        (record,) = got
        record["commit"] = commit.sha
        result.tested.append((commit, record))
        if sink:
            sink(record)
        if record["status"] != "ok":
            raise UsageError(f"{commit.sha[:10]}: {record['error']}")
        return record

    ends = judge(commits[-1])
    if ends["verdict"] == "faster":
        raise UsageError(f"--bad {bad} is faster than --good {good} (ratio {ends['ratio']:.3f}): "
                         "nothing slowed down; swap them to find the speed-up")
    if ends["verdict"] == "same":
        return result
    lo, hi = -1, len(commits) - 1  # commits[hi] is slower than good; lo is not (good itself)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if judge(commits[mid])["verdict"] == "slower":
            hi = mid
        else:
            lo = mid
    result.first_slow = commits[hi]
    return result
