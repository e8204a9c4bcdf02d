"""kmicro calibrate --independent: kmicro's own measurement against a loop written apart from
kmicro, on real stacks. Whether the two agree is measured (docs/validation.md), not asserted."""
import json
import os
import statistics
import subprocess

import pytest

from conftest import ROOT, load

from kmicro.analysis import fidelity
from kmicro.core import stacks
from kmicro.harness import independent

SMALL = ("--ops", "dense", "--shapes", "8,16", "--set", "units=10", "--rounds", "2",
         "--max-rounds", "2")  # Dense(10) with and without softmax


def test_both_sides_are_measured_every_round(kmicro, tmp_path):
    out = tmp_path / "fidelity.json"
    done = kmicro("calibrate", "--independent", "--stacks", "jax,torch", *SMALL,
                  "--json", str(out))
    assert done.returncode == 0, done.stderr
    ok = load(out)
    # 2 stacks x 2 Dense cases x 2 passes, 2 rounds each
    assert all(r["status"] == "ok" for r in ok) and len(ok) == 2 * 2 * 2 * 2
    assert {r["round"] for r in ok} == {1, 2}
    every = sorted(os.sched_getaffinity(0))
    for r in ok:
        assert r["kind"] == "fidelity" and r["median_s"] > 0 and r["independent_s"] > 0
        assert r["ratio"] == pytest.approx(r["median_s"] / r["independent_s"])
        # paired: one independent block after each of kmicro's samples
        assert len(r["samples_s"]) == r["n_samples"] == len(r["independent_blocks_s"]) >= 7
        assert r["independent_s"] == pytest.approx(statistics.median(r["independent_blocks_s"]))
        assert r["max_rel_err"] <= r["tolerance"]  # kmicro's side is checked, as in `ops`
        assert r["independent_versions"]["keras"] == r["versions"]["keras"]
        # each process saw one CPU from its start (as its framework sized its thread pools)
        assert r["same_cpu"] is (len(every) > 1)
        if r["same_cpu"]:  # and both ran on the round's CPU
            assert len(r["cpus"]) == len(r["independent_cpus"]) == 1 and r["round_cpu"] in every
        else:
            assert r["cpus"] == r["independent_cpus"] == every
    timers = {r["stack"]: r["timer"] for r in ok}
    assert "block_until_ready" in timers["jax"]
    assert timers["torch"].startswith("torch.utils.benchmark.Timer")
    assert "fidelity: kmicro / independent loop" in done.stdout
    assert "torch: " in done.stdout and "passes within 0.95-1.05" in done.stdout
    shown = kmicro("report", str(out))  # the same table from the file
    assert shown.returncode == 0 and "fidelity: kmicro / independent loop" in shown.stdout


def test_more_rounds_only_for_passes_whose_interval_crosses_the_band(kmicro, tmp_path):
    out = tmp_path / "fidelity.json"
    done = kmicro("calibrate", "--independent", "--stacks", "numpy", "--ops", "dense",
                  "--shapes", "8,16", "--set", "units=10", "--passes", "forward,backward",
                  "--rounds", "6", "--max-rounds", "7", "--no-same-cpu", "--json", str(out))
    assert done.returncode == 0, done.stderr
    records, by_pass = load(out), {}
    for r in records:
        if r["status"] == "ok":
            by_pass.setdefault(r["case"], []).append(r)
    assert len(by_pass) == 2  # units=10, with and without softmax
    for rs in by_pass.values():
        rounds = [r["round"] for r in rs]
        assert rounds == list(range(1, len(rs) + 1)) and 6 <= len(rs) <= 7
        # the seventh round exactly when the first six left the pass undecided
        assert fidelity.decided([r["ratio"] for r in rs[:6]]) == (len(rs) == 6)
        assert all("blocked loop" in r["timer"] for r in rs)
    every = sorted(os.sched_getaffinity(0))  # --no-same-cpu: both processes on every CPU
    assert all(not r["same_cpu"] and r["cpus"] == r["independent_cpus"] == every
               for rs in by_pass.values() for r in rs)
    # NumPy has no gradients: its backward passes are records saying so, not numbers
    unsupported = [r for r in records if r["status"] == "unsupported"]
    assert unsupported and {(r["stack"], r["pass"]) for r in unsupported} == {("numpy",
                                                                               "backward")}


def test_decided_once_the_interval_of_the_median_lies_inside_the_band():
    inside = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0]
    assert fidelity.decided(inside)
    assert not fidelity.decided(inside[:5])  # five rounds cannot cover 95 %
    assert not fidelity.decided(inside[:5] + [1.2])  # the range reaches past 1.05
    assert not fidelity.decided([0.9, 0.91, 0.88, 0.92, 0.9, 0.93])  # outside: every round


def test_the_independent_side_imports_nothing_of_kmicro():
    stack = stacks.resolve(["numpy"])[0]
    env = stacks.worker_env(stack, "cpu")  # kmicro is importable there, yet must not be used
    from kmicro.core import cases
    case = cases.select(["dense"], shapes=cases.parse_shapes("8,16"))[0]
    requests = [independent.request(case, "forward", 0.01),  # a whole measurement
                dict(independent.request(case, "forward"), prepare=True),  # paired blocks
                {"block": True}, {"block": True}]
    done = subprocess.run([str(stack.interpreter), "-X", "importtime", str(independent.SCRIPT)],
                          input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["ready"] and answers[1]["median_s"] > 0
    assert answers[2]["number"] >= 1 and answers[3]["s_per_call"] > 0 < answers[4]["s_per_call"]
    imported = [ln.split("|")[-1].strip() for ln in done.stderr.splitlines()
                if ln.startswith("import time:")]
    assert "keras" in imported
    assert not [m for m in imported if m.split(".")[0] == "kmicro"]


def test_bad_rounds_is_a_usage_error(kmicro):
    done = kmicro("calibrate", "--independent", "--stacks", "numpy", "--rounds", "0")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "--rounds" in done.stderr


def test_fewer_max_rounds_than_rounds_is_a_usage_error(kmicro):
    done = kmicro("calibrate", "--independent", "--stacks", "numpy", "--rounds", "6",
                  "--max-rounds", "3")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "--max-rounds" in done.stderr


def test_quick_is_refused_with_independent(kmicro):
    done = kmicro("calibrate", "--independent", "--stacks", "numpy", "--quick")
    assert done.returncode == 2 and "--rounds" in done.stderr


def test_overhead_mode_still_compares_with_a_bare_loop(kmicro, tmp_path):
    out = tmp_path / "overhead.json"
    done = kmicro("calibrate", "--stacks", "numpy", "--ops", "dense", "--shapes", "8,16",
                  "--rounds", "1", "--json", str(out))
    assert done.returncode == 0, done.stderr
    ok = [r for r in load(out) if r["status"] == "ok"]
    assert ok and all(r["bare_median_s"] > 0 for r in ok)
    assert "harness overhead" in done.stdout
