"""Any environment is a stack: `kmicro stack add/remove`, `kmicro env`, kmicro outside the checkout.

Real interpreters, real uv environments, real git repositories. Environments made by
`kmicro env` live in a cache shared across test runs (as the asv find test's), so a second run
reuses uv's cache and takes seconds.
"""
import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import KMICRO, ROOT, load
from keras_repo import commit, keras_repo

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("user_stacks")

VENV_PY = str(ROOT / ".venv" / "bin" / "python")
THEANO_PY = ROOT / ".envs" / "theano" / "bin" / "python"
ENVS = ROOT / ".cache" / "test-envs"  # kept between runs: uv relinks from its cache
# The kmicro revision `make asv-reference` pins its reference stacks at.
ASV_REFERENCE_REV = re.search(r"^ASV_REFERENCE_REV \?= (\w+)$", (ROOT / "Makefile").read_text(),
                              re.M).group(1)
DENSE = ("--ops", "dense", "--shapes", "2,8", "--passes", "forward", "--quick")


@pytest.fixture
def user(tmp_path):
    """Runs kmicro with its own stack config (and env home) file, as a user would."""
    env = dict(os.environ, KMICRO_CONFIG=str(tmp_path / "stacks.json"), KMICRO_ENVS=str(ENVS))

    def run(*args, cwd=ROOT, exe=None, timeout=900):
        cmd = [exe, *args] if exe else [*KMICRO, *args]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env,
                              timeout=timeout)
    run.config = tmp_path / "stacks.json"
    run.env = env
    return run


def one_line_exit_2(p, text):
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert text in p.stderr, p.stderr


def names(config):
    return [e["name"] for e in json.loads(config.read_text())] if config.exists() else []


def test_added_stack_runs_in_ops_and_its_env_reaches_the_worker(user, tmp_path):
    p = user("stack", "add", "mine", "--python", VENV_PY, "--backend", "numpy")
    assert p.returncode == 0, p.stderr
    assert names(user.config) == ["mine"]
    out = tmp_path / "r.json"
    p = user("ops", "--stacks", "mine,numpy", *DENSE, "--json", str(out))
    assert p.returncode == 0, p.stderr
    records = load(out)
    assert {r["stack"] for r in records} == {"mine", "numpy"}
    assert all(r["status"] == "ok" and r["backend"] == "numpy" for r in records)
    listed = user("stacks", "--stacks", "mine,numpy", "--no-peaks")
    assert listed.returncode == 0 and "mine" in listed.stdout and "numpy" in listed.stdout
    assert "tensorflow" not in listed.stdout and "jax" not in listed.stdout  # only those asked
    # A stack's --env values reach its worker (and win): this one kills the dense case.
    p = user("stack", "add", "faulty", "--python", VENV_PY, "--backend", "numpy",
             "--env", "KMICRO_FAULT=die:dense")
    assert p.returncode == 0, p.stderr
    p = user("ops", "--stacks", "faulty", *DENSE, "--json", str(out))
    assert load(out)[0]["status"] == "error" and "code 17" in load(out)[0]["error"]
    assert user("stack", "remove", "faulty").returncode == 0
    assert names(user.config) == ["mine"]


@pytest.mark.parametrize("args, text", [
    (["stack", "add", "x", "--python", "/no/such/python", "--backend", "jax"], "does not exist"),
    (["stack", "add", "jax", "--python", VENV_PY, "--backend", "jax"], "built-in stack"),
    (["stack", "add", "x", "--python", VENV_PY, "--backend", "cntk"], "valid backends"),
    (["stack", "add", "x", "--python", VENV_PY, "--backend", "jax", "--env", "NOEQUALS"],
     "KEY=VALUE"),
    (["stack", "remove", "nobody"], "no user stack"),
    (["stack", "remove", "jax"], "built-in stack"),
    (["env", "x", "--from", "nosuch", "--set", "keras==3.14.0"], "valid stacks"),
    (["env", "x", "--from", "jax", "--set", "keras"], "NAME==VERSION"),
    (["env", "x", "--from", "jax", "--set", "keras=/tmp"], "not a Python package"),
    (["env", "x", "--from", "jax", "--set", "kerass==1.0"], "not a package of the base stack"),
    (["env", "x", "--from", "jax", "--set", "keras@HEAD"], "needs --repo"),
    (["env", "x", "--from", "jax", "--set", "keras@nosuchrev", "--repo", str(ROOT)],
     "no such revision"),
    (["env", "jax", "--from", "jax", "--set", "keras==3.14.0"], "built-in stack"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_registered(user, args, text):
    one_line_exit_2(user(*args), text)
    assert names(user.config) == []


@pytest.mark.skipif(not THEANO_PY.exists(), reason="the theano stack is built by make env")
def test_interpreter_without_the_backend_is_refused(user):
    p = user("stack", "add", "x", "--python", str(THEANO_PY), "--backend", "jax")
    one_line_exit_2(p, "cannot import jax")
    assert names(user.config) == []


@pytest.fixture(scope="module")
def env_lock():
    """Two test runs at once would rebuild the same cached environment under each other."""
    ENVS.mkdir(parents=True, exist_ok=True)
    with open(ENVS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.mark.slow
def test_env_variant_of_a_released_version_runs_beside_its_base(user, env_lock, tmp_path):
    p = user("env", "jax314", "--from", "jax", "--set", "keras==3.14.0")
    assert p.returncode == 0, p.stderr
    assert "jax314" in p.stdout and "keras 3.14.0" in p.stdout
    out = tmp_path / "r.json"
    p = user("ops", "--stacks", "jax,jax314", *DENSE, "--json", str(out))
    assert p.returncode == 0, p.stderr
    keras = {r["stack"]: r["versions"]["keras"] for r in load(out)}
    assert keras == {"jax": "3.15.1", "jax314": "3.14.0"}
    assert all(r["status"] == "ok" for r in load(out))


def keras_history(repo):
    """Keras 3.15.1's source, then a commit that only changes its version string, so the two
    revisions are told apart by what they report."""
    keras_repo(repo)
    commit(repo, Path("keras") / "src" / "version.py", '"3.15.1"', '"3.15.1.dev7"',
           "a later commit")


@pytest.mark.slow
def test_env_from_a_git_revision_of_a_local_checkout(user, env_lock, tmp_path):
    repo = tmp_path / "keras"
    keras_history(repo)
    p = user("env", "kjax-old", "--from", "jax", "--set", "keras@HEAD~1", "--repo", str(repo))
    assert p.returncode == 0, p.stderr
    p = user("env", "kjax-new", "--from", "jax", "--set", f"keras={repo}")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "r.json"
    p = user("ops", "--stacks", "kjax-old,kjax-new", *DENSE, "--json", str(out))
    assert p.returncode == 0, p.stderr
    keras = {r["stack"]: r["versions"]["keras"] for r in load(out)}
    assert keras == {"kjax-old": "3.15.1", "kjax-new": "3.15.1.dev7"}


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the Keras 3 stack is Python 3.11")
def test_kmicro_installed_into_another_environment_runs_there(user, env_lock, tmp_path):
    """kmicro's wheel in a `kmicro env` environment, run from outside the checkout."""
    p = user("env", "jax314", "--from", "jax", "--set", "keras==3.14.0")
    assert p.returncode == 0, p.stderr
    env_py = ENVS / "jax314" / "bin" / "python"
    uv = ROOT / ".venv" / "bin" / "uv"
    subprocess.run([str(uv), "pip", "install", "-q", "--python", str(env_py), "--no-deps",
                    str(ROOT)], check=True, env=dict(user.env, UV_NO_CACHE="1"))
    kmicro = str(env_py.parent / "kmicro")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    p = user("stack", "add", "here", "--python", str(env_py), "--backend", "jax", exe=kmicro,
             cwd=outside)
    assert p.returncode == 0, p.stderr
    out = outside / "r.json"
    p = user("ops", "--stacks", "here", *DENSE, "--json", str(out), exe=kmicro, cwd=outside)
    assert p.returncode == 0, p.stderr
    record = load(out)[0]
    assert record["status"] == "ok" and record["versions"]["keras"] == "3.14.0"


@pytest.mark.slow
def test_env_with_kmicro_at_a_revision_runs_its_own_kmicro(user, env_lock, tmp_path):
    """`--set kmicro@REV` adds kmicro (never pinned: the checkout is on the workers' path) and
    the stack's workers run that installed kmicro: the relative asv suite's reference, at the
    revision `make asv-reference` pins, whose older workers must serve this kmicro's jobs."""
    p = user("env", "kref", "--from", "numpy", "--set", f"kmicro@{ASV_REFERENCE_REV}", "--repo",
             str(ROOT))
    assert p.returncode == 0, p.stderr
    assert "kref" in user("stack", "list").stdout.split()
    installed = subprocess.run([str(ENVS / "kref" / "bin" / "python"), "-c",
                                "import kmicro, sys; sys.stdout.write(kmicro.__file__)"],
                               capture_output=True, text=True, cwd=tmp_path)
    assert str(ENVS / "kref") in installed.stdout, installed.stdout + installed.stderr
    out = tmp_path / "ab.json"
    p = user("ab", "numpy", "kref", "--ops", "dense", "--passes", "forward", "--shapes", "32,64",
             "--rounds", "6", "--min-rounds", "6", "--processes", "2", "--min-effect", "0.5",
             "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert {r["status"] for r in load(out)} == {"ok"}
