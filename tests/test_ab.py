"""kmicro ab: paired statistics on known data, and real interleaved runs on real stacks.

The planted slowdown is real Keras code running slower: a stack identical to numpy except that
a sitecustomize on its PYTHONPATH makes Dense.call compute its output twice.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import KMICRO, ROOT, load

from kmicro.analysis import ab, ab_stats
from kmicro.report import ab_tables

DENSE = ("--ops", "dense", "--passes", "forward", "--shapes", "32,512", "--set", "units=10")
CASE = "dense(units=10)@32x512"  # one of the three Dense cases at that shape


def the_case(path):
    return next(r for r in load(path) if r["case"] == CASE)
FAST = ("--rounds", "10", "--min-rounds", "5")
# A planted slowdown must be called one under any load CI meets: the rounds stop once the
# verdict is settled, so a quiet machine still takes few of them. Worker pairs, 5 rounds each
# as by default, but up to 12 of them: here the pairs' median ratios of this plant spread by
# ~12 % (1.16-1.84), and with only 5 pairs one slow pair can hold the interval over 1
# (CI read "same" twice). Rounds replayed with a 20 % pair spread: "same" in 28 of 300 runs
# with 30 rounds on 5 pairs, 0 of 300 with 60 on 12, ~20 rounds on average either way.
ENOUGH = ("--rounds", "60", "--processes", "12", "--min-rounds", "5")
PLANT = """
import os
if os.environ.get("KERAS_BACKEND"):  # only kmicro's workers: they set it before starting
    import keras

    _call = keras.layers.Dense.call

    def _twice(self, inputs, *args, **kwargs):
        _call(self, inputs, *args, **kwargs)  # planted by tests/test_ab.py: twice the work
        return _call(self, inputs, *args, **kwargs)

    keras.layers.Dense.call = _twice
"""


def test_identical_rounds_are_the_same():
    a = [1e-3, 1.1e-3, 0.9e-3, 1.2e-3, 1e-3, 1.05e-3]
    same = ab_stats.compare(a, a)
    assert same.ratio == 1 and same.ci_low == same.ci_high == 1 and same.verdict(0.03) == "same"
    assert same.settled(0.03) and same.mde == 0


def test_a_paired_slowdown_under_drift_is_found():
    rng = np.random.default_rng(1)
    drift = np.exp(rng.normal(0, 0.3, 20))  # the machine's speed, shared within a round
    a = 1e-3 * drift * np.exp(rng.normal(0, 0.01, 20))
    b = 1.1e-3 * drift * np.exp(rng.normal(0, 0.01, 20))
    judged = ab_stats.compare(a, b)
    assert 1.05 < judged.ratio < 1.15 and judged.ci_low > 1
    assert judged.verdict(0.03) == "slower" and judged.settled(0.03)
    assert ab_stats.compare(b, a).verdict(0.03) == "faster"
    assert judged.verdict(0.2) == "same"  # real, but smaller than the user cares about


def test_one_worker_pairs_bias_is_not_a_change():
    # Five worker pairs of five rounds: four read B 3.5-5 % slower, one 10 % faster, each
    # pair consistent within itself. Taken as 25 independent rounds, B is "slower"; which
    # worker pairs happened to be drawn decides that, so with the pairs known it is not a
    # change.
    rng = np.random.default_rng(3)
    bias = np.repeat([0.05, 0.045, 0.04, 0.035, -0.10], 5)
    a = 1e-3 * np.exp(rng.normal(0, 0.2, 25))  # drift, shared by both sides of a round
    b = a * np.exp(bias + rng.normal(0, 0.002, 25))
    groups = np.repeat(range(5), 5).tolist()
    assert ab_stats.compare(a, b).verdict(0.03) == "slower"
    judged = ab_stats.compare(a, b, groups=groups)
    assert judged.ci_low < 1 < judged.ci_high and judged.verdict(0.03) == "same"
    # The same biases shared by every pair are a change, pairs or not.
    b = a * np.exp(0.05 + rng.normal(0, 0.002, 25))
    assert ab_stats.compare(a, b, groups=groups).verdict(0.03) == "slower"


def test_a_same_that_does_not_rule_out_the_minimum_effect_is_shown_unsure():
    wide = ab_stats.Comparison(1.02, 0.95, 1.73, 30)  # CI once read a planted 1.4x like this
    assert wide.verdict(0.03) == "same" and not wide.conclusive(0.03)
    assert ab_stats.Comparison(1.0, 0.99, 1.02, 30).conclusive(0.03)
    assert ab_stats.Comparison(1.4, 1.2, 1.6, 30).conclusive(0.03)  # slower is a finding
    rows = [dict(verdict="same", ratio=r, ci_low=lo, ci_high=hi, rounds=30, min_effect=0.03,
                 status="ok", mde=0.1) for r, lo, hi in ((1.02, 0.95, 1.73), (1.0, 0.99, 1.02))]
    assert [ab_tables.verdict_label(r) for r in rows] == ["same (unsure)", "same"]
    assert "2 same (1 of them unsure" in ab_tables.summary(rows)


def _rounds(logs):
    """Rounds with these log-ratios B/A, five per worker pair: (times, groups)."""
    return ([1.0] * len(logs), [math.exp(x) for x in logs]), [i // 5 for i in range(len(logs))]


def test_no_change_stops_on_the_95_interval_a_change_only_on_the_99():
    settings = ab.Settings()  # min effect 3 %, 25 regular rounds, at most 80
    spread = [0.04 * ((i * 7) % 11 - 5) / 5 for i in range(15)]  # within +-4 %, around 1
    times, groups = _rounds(spread)
    assert ab_stats.compare(*times, ab_stats.CONFIDENCE, groups).conclusive(0.03)
    assert not ab_stats.compare(*times, ab_stats.EARLY_CONFIDENCE, groups).settled(0.03)
    assert ab.stops(times, groups, 15, settings)  # shown unchanged: a verdict of same
    times, groups = _rounds([0.04 + x for x in spread])  # slower at 95 %, not at 99 %
    assert ab_stats.compare(*times, ab_stats.CONFIDENCE, groups).verdict(0.03) == "slower"
    assert not ab.stops(times, groups, 15, settings)  # a change must hold at 99 % early...
    times, groups = _rounds([0.04 + x for x in (spread + spread)[:25]])
    assert ab.stops(times, groups, 25, settings)  # ...or be conclusive at the regular cap,
    times, groups = _rounds([0.04 + x for x in (spread + spread)[:26]])
    assert not ab.stops(times, groups, 26, settings)  # a single look at 95 %, not one a round


def test_no_change_stops_after_two_worker_pairs_a_change_after_three():
    settings = ab.Settings()
    tight = [0.004 * ((i * 7) % 11 - 5) / 5 for i in range(15)]  # within +-0.4 %
    times, groups = _rounds(tight[:6])  # five rounds on pair 0, one on pair 1
    assert ab.stops(times, groups, 6, settings)
    assert not ab.stops(times, [0] * 6, 6, settings)  # one pair alone never settles a pass
    times, groups = _rounds([0.2 + x for x in tight[:10]])  # 1.22x on pairs 0 and 1
    assert ab_stats.compare(*times, ab_stats.EARLY_CONFIDENCE, groups).settled(0.03)
    assert not ab.stops(times, groups, 10, settings)  # a change waits for a third pair
    times, groups = _rounds([0.2 + x for x in tight[:11]])
    assert ab.stops(times, groups, 11, settings)


def test_a_pass_still_unsure_after_the_regular_rounds_goes_on():
    settings = ab.Settings()
    times, groups = _rounds([0.02 + 0.12 * ((i * 7) % 11 - 5) / 5 for i in range(25)])
    assert not ab_stats.compare(*times, ab_stats.CONFIDENCE, groups).conclusive(0.03)
    assert not ab.stops(times, groups, 25, settings)


def test_the_power_is_said_with_the_rounds_each_unresolved_pass_would_take():
    assert ab_stats.rounds_needed(0.02, 25, 0.03) == 25  # resolved already
    assert ab_stats.rounds_needed(0.10, 25, 0.03) == 260  # (ln 1.10 / ln 1.03)^2 = 10.4x
    assert ab_stats.rounds_needed(0.10, 25, 0.0) is None
    rows = [dict(verdict="same", ratio=1.0, ci_low=0.98, ci_high=1.02, rounds=25, mde=0.02,
                 min_effect=0.03, status="ok", op="dense", case="dense(units=10)@32x512",
                 **{"pass": "forward"}),
            dict(verdict="same", ratio=1.0, ci_low=0.91, ci_high=1.10, rounds=25, mde=0.10,
                 min_effect=0.03, status="ok", op="conv2d", case="conv2d()@32x8x8x4/cl",
                 **{"pass": "backward"}),
            dict(status="error", verdict="error", **{"pass": "forward"})]
    head, widest = ab_tables.power_lines(rows)
    assert head == "power: 1 of 2 passes resolved the minimum effect of 3% (MDE at most that)"
    assert "conv2d" in widest and "MDE 10.0% after 25 rounds" in widest
    assert "about 260 rounds would resolve 3% (--rounds)" in widest
    assert ab_tables.power_lines(rows[:1])[0].endswith("every verdict can be read at that size")
    assert ab_tables.power_lines(rows[2:]) == []
    rows[1].update(ended_by="budget", budget_s=162.0)  # the budget, not --rounds, stopped it
    head, cut, widest = ab_tables.power_lines(rows)
    assert cut == "  the budget (162 s) ended the rounds of 1 pass after 25: --budget gives more"
    assert "about 260 rounds would resolve 3% (--rounds, --budget)" in widest


def test_a_budget_too_short_for_another_worker_pair_goes_to_the_last_ones_rounds():
    settings = ab.Settings()  # 80 rounds over 16 pairs: 5 rounds a pair
    # 40 s left; a pair took 9 s to start and prepare, its rounds 5 s each: 9 + 25 fits.
    assert not ab._no_room_for_another_pair(4, settings, 40.0, 9.0, 5.0)
    assert ab._no_room_for_another_pair(4, settings, 30.0, 9.0, 5.0)
    assert not ab._no_room_for_another_pair(4, settings, -1.0, 9.0, 5.0)  # spent: no more rounds
    # The first two pairs always hand over (an interval must span three pairs' own speeds
    # before a budget's last rounds go to one), and the last one has no other to hand over to.
    assert not ab._no_room_for_another_pair(1, settings, 1.0, 9.0, 5.0)
    assert not ab._no_room_for_another_pair(settings.processes - 1, settings, 1.0, 9.0, 5.0)


def test_the_default_budget_is_two_seconds_a_pass_within_twice_kmicro_ops_with_a_floor():
    slow = [(0.05, 0.05)] * 81  # 50 ms calls: ops takes 0.2 + 7 x 0.05 s a pass and stack
    assert ab.ops_floor(slow, 30.0) == pytest.approx(30.0 + 81 * 2 * 0.55)
    assert ab.default_budget(slow, 30.0) == 162.0  # 2 s a pass
    quick = [(1e-4, 1e-4)] * 81  # ops: 0.2 s warm-up + 7 samples of 10 ms
    assert ab.ops_floor(quick, 20.0) == pytest.approx(20.0 + 81 * 2 * 0.27)
    assert ab.default_budget(quick, 20.0) == pytest.approx(20.0 + 2 * 81 * 2 * 0.27)
    # A bisection's one pass: time for the worker pairs to start.
    assert ab.default_budget([(1e-4, 1e-4)], 5.0) == ab.MIN_BUDGET_S == 100.0


def test_a_worker_of_an_older_kmicro_without_call_times_still_gets_a_floor_of_kmicro_ops():
    # A stack with `kmicro@REV` from before prepare reported `call_s`.
    pair = ab._Pair(({"status": "ok", "loops": 20}, {"status": "ok", "loops": 20, "call_s": 1e-4}))
    assert ab._call_times(pair) == (0.0, 1e-4)
    assert ab.ops_floor([ab._call_times(pair)], 5.0) == pytest.approx(5.0 + 2 * 0.27)


def test_noise_only_is_not_settled_early():
    rng = np.random.default_rng(2)
    a, b = np.exp(rng.normal(0, 0.1, (2, 6)))
    judged = ab_stats.compare(a, b)
    assert judged.ci_low < 1 < judged.ci_high and not judged.settled(0.03)


def kmicro(*args, env=None):
    return subprocess.run([*KMICRO, *args], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, **(env or {})), timeout=900)


@pytest.mark.timing
def test_a_a_run_writes_contract_records(tmp_path):
    out = tmp_path / "aa.json"
    p = kmicro("ab", "numpy", "numpy", *DENSE, *FAST, "--min-effect", "0.25", "--json", str(out))
    assert p.returncode == 0, p.stderr
    r = the_case(out)
    for field in ("stack_a", "stack_b", "case", "pass", "median_a_s", "median_b_s", "ratio",
                  "ci_low", "ci_high", "verdict", "mde", "rounds"):
        assert r[field] is not None, field
    assert r["kind"] == "ab" and r["stack_a"] == r["stack_b"] == "numpy"
    assert r["verdict"] == "same" and r["ci_low"] <= r["ratio"] <= r["ci_high"]
    assert 5 <= r["rounds"] <= 10 and len(r["times_a_s"]) == r["rounds"]
    assert set(r["round_pairs"]) <= {0, 1}  # by default one worker pair per 5 rounds
    assert "numpy vs numpy" in p.stdout and "2 same" in p.stdout  # units=10, and with softmax


@pytest.fixture
def slow_numpy(tmp_path):
    """A user stack: the numpy stack with Dense.call doing its work twice."""
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(PLANT)
    p = kmicro("stack", "add", "slow-numpy", "--python", sys.executable, "--backend", "numpy",
               "--env", f"PYTHONPATH={plant}")
    assert p.returncode == 0, p.stderr
    yield "slow-numpy"
    kmicro("stack", "remove", "slow-numpy")


@pytest.mark.timing
def test_a_planted_slowdown_is_slower_and_its_reverse_faster(slow_numpy, tmp_path):
    out = tmp_path / "ab.json"
    p = kmicro("ab", "numpy", slow_numpy, *DENSE, *ENOUGH, "--json", str(out))
    assert p.returncode == 0, p.stderr
    r = the_case(out)
    # Calling Dense.call twice (not the whole layer call) read 1.24-1.47x in the runs measured,
    # depending on the CPU: the bound asks for the plant, well clear of the 5 % default effect.
    assert r["verdict"] == "slower" and r["ratio"] > 1.1, r
    back = kmicro("ab", slow_numpy, "numpy", *DENSE, *ENOUGH, "--json", str(out))
    assert back.returncode == 0 and the_case(out)["verdict"] == "faster", back.stdout


def test_a_case_one_side_cannot_run_is_a_record_saying_why(tmp_path):
    out = tmp_path / "ab.json"
    p = kmicro("ab", "numpy", "jax", "--ops", "dense", "--passes", "forward,backward",
               "--shapes", "4,8", "--rounds", "2", "--min-rounds", "2", "--processes", "1",
               "--json", str(out))  # what the records say, not a verdict: one pair, two rounds
    assert p.returncode == 0, p.stderr
    by_pass = {r["pass"]: r for r in load(out)}
    assert by_pass["backward"]["status"] == by_pass["backward"]["verdict"] == "unsupported"
    assert by_pass["backward"]["error"].startswith("numpy: ")
    assert by_pass["forward"]["status"] == "ok" and by_pass["forward"]["ended_by"] == "rounds"
    assert by_pass["forward"]["budget_s"] == ab.MIN_BUDGET_S  # one pass: the floor


def test_the_budget_ends_the_rounds_and_the_run_says_so(tmp_path):
    out = tmp_path / "ab.json"
    # No pass may stop before its 200th round (--min-rounds), so only the budget can end
    # these rounds (a round of two 20 ms bursts: at most 25 fit in a second). With one worker pair
    # a pass may still settle as `same` from its 6th round (the default --min-rounds), which
    # failed this test by chance.
    p = kmicro("ab", "numpy", "numpy", "--ops", "dense", "--passes", "forward", "--shapes",
               "4,8", "--rounds", "200", "--min-rounds", "200", "--processes", "1", "--budget",
               "1", "--json", str(out))
    assert p.returncode == 0, p.stderr
    measured = [r for r in load(out) if r["status"] == "ok"]
    assert measured and all(r["ended_by"] == "budget" and 1 <= r["rounds"] < 200
                            and r["budget_s"] == 1.0 for r in measured)
    assert "the budget (1 s) ended the rounds of " in p.stdout


@pytest.mark.parametrize("args, text", [
    (["ab", "jax", "nosuch"], "valid stacks"),
    (["ab", "jax", "jax", "--min-effect", "2"], "--min-effect"),
    (["ab", "jax", "jax", "--ops", "conv4d"], "valid ops"),
    (["ab", "jax", "jax", "--processes", "0"], "--processes"),
    (["ab", "jax", "jax", "--rounds", "0"], "--rounds"),
    (["ab", "jax", "jax", "--budget", "0"], "--budget"),
])
def test_bad_input_is_one_line_exit_2(args, text):
    p = kmicro(*args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and text in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.skipif((ROOT / ".envs" / "tf1" / "bin" / "python").exists(),
                    reason="tf1 is installed here")
def test_a_stack_that_is_not_installed_says_how_to_install_it():
    p = kmicro("ab", "jax", "tf1")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "make legacy" in p.stderr
