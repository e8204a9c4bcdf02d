"""kmicro bisect on throwaway Keras histories: it names the planted commit, and says "no
significant change" (exit 0, no commit) on the same history without the plant."""
import hashlib
import os
import subprocess

import pytest

import numpy as np

from conftest import KMICRO, ROOT, load
from keras_repo import CACHE, history

from kmicro.analysis import ab, bisect as bisect_mod

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("bisect")

# Per-commit environments and the stacks that name them, kept between runs (the histories'
# commits are the same every run): a rerun times the bisection, not uv building Keras again.
# Keyed by the base stack's pins, which every such environment also installs.
PINS = hashlib.sha1((ROOT / "requirements" / "keras3.txt").read_bytes()).hexdigest()[:10]
ENVS = CACHE / f"bisect-envs-{PINS}"
CASE = ("--case", "dense(units=10)@32x512", "--pass", "forward", "--from", "numpy",
        "--package", "keras",
        # What these tests check is the search and its calls, not the power: the plant is
        # +30-40 %. A change of at least 10 %, not 3: the 95 % interval calls an unchanged end
        # slower by chance now and then at 3 % (on the test cluster: 1.033 (1.001-1.055)),
        # and a wider band settles sooner. At most 25 rounds over 5 worker pairs, not 80: an
        # unsure commit would take every extra round.
        "--min-effect", "0.1", "--rounds", "25")


def bisect(repo, good, bad, tmp_path, extend=4):
    """--extend 4: under a load that leaves a comparison unsettled, more runs, not a wrong call."""
    env = dict(os.environ, KMICRO_CONFIG=str(ENVS / "stacks.json"), KMICRO_ENVS=str(ENVS))
    return subprocess.run([*KMICRO, "bisect", "--repo", str(repo), "--good", good, "--bad", bad,
                           *CASE, "--extend", str(extend), "--json", str(tmp_path / "b.json")],
                          capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=1800)


@pytest.mark.timing
@pytest.mark.slow
def test_bisect_names_the_planted_commit(tmp_path):
    # four commits after the base, the second planted: both halves of the search are taken
    commits = history(tmp_path / "keras", 4, planted=2)
    p = bisect(tmp_path / "keras", commits[0], commits[-1], tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"first slow commit: {commits[2][:10]}" in p.stdout, p.stdout
    tested = {r["commit"]: r for r in load(tmp_path / "b.json")}
    assert tested[commits[2]]["call"] == "slower" and tested[commits[1]]["call"] == "not slower"
    assert 1.15 < tested[commits[-1]]["ratio"] < 1.8  # +30-40 %, not a sleep


@pytest.mark.timing
@pytest.mark.slow
def test_bisect_without_a_change_names_no_commit(tmp_path):
    commits = history(tmp_path / "keras", 4)
    # One run: more would narrow the interval but cannot make a false "slower" less likely;
    # the first run's verdict is what this checks.
    p = bisect(tmp_path / "keras", commits[0], commits[-1], tmp_path, extend=0)
    assert p.returncode == 0, p.stderr
    assert "no significant change" in p.stdout and "first slow commit" not in p.stdout
    (end,) = load(tmp_path / "b.json")
    assert end["verdict"] == "same" and end["commit"] == commits[-1]


@pytest.mark.parametrize("args, text", [
    (["--good", "nosuchrev", "--bad", "HEAD"], "no such revision"),
    (["--good", "HEAD", "--bad", "HEAD~1"], "not a later commit"),
])
def test_bad_revisions_are_one_line_exit_2(args, text, tmp_path):
    out = tmp_path / "never.json"
    p = subprocess.run([*KMICRO, "bisect", "--repo", str(ROOT), *args, *CASE, "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, KMICRO_CONFIG=str(tmp_path / "s.json")))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and text in p.stderr, p.stderr
    assert not out.exists()  # bad input leaves no empty results file behind


def _rounds(ratio, n, seed, spread=0.08, pairs=5):
    """An A/B record's rounds: B = ratio x A under per-pair noise (sides of a round share drift)."""
    rng = np.random.default_rng(seed)
    a = 300e-6 * np.exp(rng.normal(0, 0.2, n))
    b = a * ratio * np.exp(rng.normal(0, spread, n))
    groups = np.repeat(range(pairs), -(-n // pairs))[:n].tolist()
    return dict(times_a_s=a.tolist(), times_b_s=b.tolist(), round_pairs=groups, status="ok")


def test_pooled_rounds_keep_each_runs_worker_pairs_apart():
    first, more = _rounds(1.1, 25, 1), _rounds(1.1, 25, 2)
    both = ab.pooled(first, more, 0.03)
    assert both["rounds"] == 50 and both["round_pairs"][25:] == [g + 5 for g in
                                                                  more["round_pairs"]]
    assert both["times_a_s"] == first["times_a_s"] + more["times_a_s"]
    assert both["ci_low"] <= both["ratio"] <= both["ci_high"]


def test_a_commit_that_cannot_be_told_apart_from_either_end_is_not_settled():
    # 1.096 (0.933-1.204) against an end of 1.11: it excludes neither good (1) nor bad.
    unsure = dict(verdict="same", ratio=1.096, ci_low=0.933, ci_high=1.204)
    assert bisect_mod._step_call(unsure, 1.11, final=False) == dict(call=None, settled=False)
    # Out of runs: the side of the midpoint (sqrt 1.11 = 1.054) the estimate lies on.
    assert bisect_mod._step_call(unsure, 1.11, final=True)["call"] == "slower"
    like_good = dict(verdict="same", ratio=1.0, ci_low=0.95, ci_high=1.04)
    assert bisect_mod._step_call(like_good, 1.11, final=False) == dict(call="not slower",
                                                                       settled=True)
    # Seen in CI: the planted commit, 1.18 (0.936-1.197), against an end of 1.205: its interval
    # ends below the end's estimate, but it is nowhere near good; not settled.
    planted = dict(verdict="same", ratio=1.18, ci_low=0.936, ci_high=1.197)
    assert not bisect_mod._step_call(planted, 1.205, final=False)["settled"]
    assert bisect_mod._step_call(planted, 1.205, final=True)["call"] == "slower"
    # Seen in CI: a harmless commit that kmicro ab calls slower, 1.034 (1.000-1.157), from
    # worker pairs whose good side ran fast in three of seven, against an end of 1.474: it is
    # nowhere near the bad end.
    harmless = dict(verdict="slower", ratio=1.034, ci_low=1.0005, ci_high=1.157)
    assert bisect_mod._step_call(harmless, 1.474, final=False) == dict(call="not slower",
                                                                      settled=True)
    # Slower only once the whole interval is closer to bad than to good.
    near_bad = dict(verdict="slower", ratio=1.45, ci_low=1.39, ci_high=1.60)
    assert bisect_mod._step_call(near_bad, 1.474, final=False) == dict(call="slower",
                                                                      settled=True)
    # A "no change" of the ends is settled only once the interval rules out the minimum effect.
    assert not bisect_mod._end_call(dict(verdict="same", ci_high=1.05), 0.03)["settled"]
    assert bisect_mod._end_call(dict(verdict="same", ci_high=1.02), 0.03)["settled"]
