"""asv: the committed config is kmicro's stacks, and real asv discovers and runs the suites."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

from kmicro import asvconf
from kmicro.core import stacks

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("asv")

ASV = [sys.executable, "-m", "asv"]
EXISTING = f"existing:{sys.executable}"
DENSE = r"Ops.time_pass\(.dense\(units=10\)@32x512., .{}.\)"  # asv quotes str params


def asv(*args, backend="numpy", timeout=600, env=None):
    """Real asv in the repository root on the current (test) environment."""
    env = dict(os.environ, KERAS_BACKEND=backend, **(env or {}))
    return subprocess.run([*ASV, *args], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_committed_config_is_the_generated_one():
    committed = (ROOT / "asv.conf.json").read_text()
    assert committed == asvconf.render(asvconf.config()), \
        "asv.conf.json is stale: python -m kmicro.asvconf > asv.conf.json"


def test_every_stack_is_an_asv_environment_with_exact_pins():
    conf = asvconf.config()
    keras3 = [s for s in stacks.STACKS.values() if s.family == "keras3"]
    assert conf["matrix"]["env_nobuild"]["KERAS_BACKEND"] == [s.backend for s in keras3]
    assert conf["pythons"] == [keras3[0].python]
    # Only Keras is in the environment's name; every other pin is installed by the install step.
    assert conf["matrix"]["req"] == {"keras": asvconf.pins(keras3[0].requirements)["keras"]}
    installed = asvconf.install_pins(conf)
    wanted = {k: v for k, v in asvconf.pins(keras3[0].requirements).items()
              if k not in asvconf.TOOLING and k != "keras"}
    assert wanted.items() <= installed[keras3[0].python].items()
    assert installed[keras3[0].python]["certifi"] == "2026.10.19.post1"  # whole, no asv parsing
    theano = stacks.STACKS["theano"]
    (include,) = conf["include"]
    assert include["python"] == theano.python and include["req"] == {"keras": "2.3.1"}
    assert {k: v for k, v in asvconf.pins(theano.requirements).items()
            if k != "keras"}.items() <= installed[theano.python].items()
    assert include["env_nobuild"] == {"KERAS_BACKEND": "theano"}  # THEANO_FLAGS: benchmarks


def test_environment_names_are_short():
    """What varies is in the name, nothing else (asv's names were ~1,500 characters)."""
    from asv.config import Config
    from asv.environment import get_environments

    path = ROOT / "asv.conf.json"
    names = [e.name for e in get_environments(Config.load(str(path)), None, False)]
    assert "virtualenv-py3.11-keras3.15.1-KERAS_BACKENDjax" in names
    assert max(len(n) for n in names) < 60, names


def test_vary_makes_one_environment_per_version_and_keeps_the_rest_of_the_pins():
    committed = asvconf.config()["matrix"]["req"]
    conf = asvconf.config(["jax"], asvconf.parse_vary("keras=3.15.1,3.14.0"), keras2=False)
    assert conf["matrix"]["req"] == dict(committed, keras=["3.15.1", "3.14.0"])  # 3.15.1: reused
    assert conf["matrix"]["env_nobuild"]["KERAS_BACKEND"] == ["jax"] and conf["include"] == []
    assert "keras" not in asvconf.install_pins(conf)[None]  # the install step keeps the varied one
    lean = asvconf.install_pins(asvconf.config(["numpy"], keras2=False, lean=True))[None]
    assert "torch" not in lean and "tensorflow-cpu" not in lean
    assert "jax" in lean  # Keras' numpy backend imports it


@pytest.mark.parametrize("args, message", [
    (["--vary", "kears=1,2"], "valid: absl-py"),
    (["--vary", "keras=3.15.1"], "PACKAGE=V1,V2"),
    (["--backends", "theano"], "valid: tensorflow, jax, torch, numpy"),
])
def test_asvconf_bad_input_is_one_line_exit_2(args, message):
    p = subprocess.run([sys.executable, "-m", "kmicro.asvconf", *args], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr


@pytest.mark.slow
def test_asv_check_discovers_the_suites():
    p = asv("-v", "check", "-E", EXISTING)
    assert p.returncode == 0 and "No problems found" in p.stdout, p.stdout + p.stderr


@pytest.mark.slow
def test_quick_asv_run_times_a_case_and_skips_what_the_stack_cannot_run():
    """The CI subset's way: real `asv run -n` in the existing environment, nothing saved."""
    p = asv("run", "-E", EXISTING, "--quick", "-n", "--launch-method", "forkserver",
            "-b", DENSE.format("forward"), "-b", DENSE.format("backward"),
            "-b", r"Ops.time_pass\(.lstm\(units=4\)@2x5x3., .forward.\)",
            env={"KMICRO_ASV_CASES": "lstm(units=4)@2x5x3"})  # any case id, not in a catalog
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert re.search(r"dense\(units=10\)@32x512\s+forward\s+[0-9.]+±[0-9.]+\S*s", out), out
    assert re.search(r"dense\(units=10\)@32x512\s+backward\s+n/a", out), out  # numpy: skipped
    assert re.search(r"lstm\(units=4\)@2x5x3\s+forward\s+[0-9.]+±[0-9.]+\S*s", out), out


@pytest.mark.timing
@pytest.mark.slow
def test_relative_suite_stores_each_ratio_against_the_reference():
    """benchmarks/relative.py in real asv: the numpy stack as its own reference (A/A), so
    every forward ratio is near 1; numpy's backward is skipped; the sidecar keeps the CIs."""
    sidecars = ROOT / ".asv" / "relative"
    before = set(sidecars.glob("*.json")) if sidecars.exists() else set()
    p = asv("run", "-E", EXISTING, "--quick", "-n", "--launch-method", "forkserver",
            "-b", "Relative.track_ratio", env={"KMICRO_ASV_REFERENCE": "numpy",
                                               "KMICRO_ASV_OPS": "dense",
                                               "KMICRO_ASV_ROUNDS": "25"})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    ratios = re.findall(r"dense\(units=10\)@32x512\s+forward\s+([0-9.]+)", out)
    assert ratios and 0.8 < float(ratios[0]) < 1.25, out
    assert re.search(r"dense\(units=10\)@32x512\s+backward\s+n/a", out), out
    (sidecar,) = set(sidecars.glob("*.json")) - before
    records = json.loads(sidecar.read_text())
    sidecar.unlink()
    (dense,) = [r for r in records if r["case"] == "dense(units=10)@32x512"
                and r["pass"] == "forward"]
    assert dense["kind"] == "ab" and dense["stack_a"] == "numpy"
    assert dense["ci_low"] <= dense["ratio"] <= dense["ci_high"]
    assert dense["rounds"] <= 25 and set(dense["round_pairs"]) <= set(range(5))


# --- keras1-theano: an existing asv environment (Python 3.6), `make asv-keras1` --------------
KERAS1_PY = ROOT / ".asv" / "keras1-theano" / "python"  # the Makefile's ASV_KERAS1_PY


def _keras1_python():
    if not stacks.STACKS["keras1-theano"].installed:
        pytest.skip("stack keras1-theano is not installed (make legacy)")
    if not KERAS1_PY.exists():
        pytest.skip(f"no {KERAS1_PY.relative_to(ROOT)} (make asv-keras1)")
    return f"existing:{KERAS1_PY.relative_to(ROOT)}"


def test_keras1_runner_is_the_release_asv_drives():
    runner36 = asvconf.pins("requirements/asv-runner-py3.6.txt")
    assert runner36["asv-runner"] == asvconf.pins("requirements/keras3.txt")["asv-runner"]


def test_benchmarks_run_the_keras1_adapter_at_python_3_6():
    python = stacks.STACKS["keras1-theano"].interpreter
    if not python.exists():
        pytest.skip("stack keras1-theano is not installed (make legacy)")
    # The suites' modules on Python 3.6 (discovery imports them all; Keras is imported later).
    code = ("import benchmarks.ops, benchmarks.models, benchmarks.relative as r; "
            "from benchmarks import common as c; print(c.STACK.name, c.FAMILY)")
    p = subprocess.run([str(python), "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, KERAS_BACKEND="theano", PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr[-800:]
    assert p.stdout.split() == ["keras1-theano", "keras1"]


@pytest.mark.slow
def test_asv_check_and_a_quick_run_on_keras1_theano():
    env = _keras1_python()
    p = asv("-v", "check", "-E", env)
    assert p.returncode == 0 and "No problems found" in p.stdout, p.stdout + p.stderr
    p = asv("run", "-E", env, "--quick", "-n", "--launch-method", "forkserver",
            "-b", DENSE.format("forward"), "-b", DENSE.format("backward"))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for pass_name in ("forward", "backward"):  # Keras 1 has gradients: both are timed
        assert re.search(rf"dense\(units=10\)@32x512\s+{pass_name}\s+[0-9.]+±[0-9.]+\S*s",
                         out), out
