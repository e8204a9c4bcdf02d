"""asv find on a throwaway history: one commit slows the timed path, bisection names it.

The history is this checkout's tracked files (as in the working tree) followed by harmless
commits, one of which plants a sleep in the numpy backend's sync. Real `asv machine` and
`asv find` run in a virtualenv from `python -m kmicro.asvconf --backends numpy --no-keras2
--lean` (Keras, NumPy and friends, and JAX, which Keras' numpy backend imports; no TensorFlow
or torch), into which asv reinstalls kmicro at every commit it bisects (an `existing`
environment would not: docs/guide-asv.md). The environment lives in ~/.cache/kmicro/
asv-env-find ($KMICRO_ASV_FIND_ENV) and is reused while its pins match (measured: about
4.5 min cold, 1 min warm).
asv gets its own HOME, so ~/.asv-machine.json is left alone.
"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("asv_find")

# Outside the checkout, like pip's cache, so a fresh clone (CI) reuses the environment.
ENV_DIR = Path(os.environ.get("KMICRO_ASV_FIND_ENV", Path.home() / ".cache/kmicro/asv-env-find"))
MACHINE = "kmicro-find-test"
DENSE_FORWARD = r"Ops.time_pass\(.dense\(units=10\)@32x512., .forward.\)"
HARMLESS = 7  # commits after the base
PLANTED = 5  # the 5th of them slows the timed path
SLEEP_S = 0.003  # per call; the case itself takes ~0.3 ms on the numpy backend here
PLANT = f"""
# Planted by tests/test_asv_find.py: a regression asv find must name.
import time as _time


def _slow_sync(out):
    _time.sleep({SLEEP_S})
    return out


Numpy.synchroniser = lambda self: _slow_sync
"""
GIT_ID = {"GIT_AUTHOR_NAME": "kmicro test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
          "GIT_COMMITTER_NAME": "kmicro test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}


def git(repo, *args):
    env = dict(os.environ, **GIT_ID)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def copy_tracked(dst):
    """This checkout's tracked files as they are in the working tree (what pytest tests)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)


def make_history(repo):
    """Base commit + HARMLESS commits; returns (base, planted, last) hashes."""
    repo.mkdir()
    copy_tracked(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: kmicro as checked out")
    base = planted = git(repo, "rev-parse", "HEAD")
    adapter = repo / "kmicro" / "backends" / "keras3" / "numpy_backend.py"
    assert "class Numpy(" in adapter.read_text(), "the numpy backend moved: update PLANT"
    for i in range(1, HARMLESS + 1):
        if i == PLANTED:
            adapter.write_text(adapter.read_text() + PLANT)
        else:
            with open(repo / "BISECT_NOTES", "a") as f:
                f.write(f"harmless change {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {i}")
        if i == PLANTED:
            planted = git(repo, "rev-parse", "HEAD")
    return base, planted, git(repo, "rev-parse", "HEAD")


def write_config(repo):
    """The numpy-only config, its environment kept in ENV_DIR."""
    text = subprocess.run([sys.executable, "-m", "kmicro.asvconf", "--backends", "numpy",
                           "--no-keras2", "--lean"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout
    conf = json.loads("".join(ln for ln in text.splitlines(True) if not ln.startswith("//")))
    conf["env_dir"] = str(ENV_DIR)
    path = repo / "find.conf.json"  # untracked; asv resolves paths from the config's folder
    path.write_text(json.dumps(conf, indent=4))
    return path


def asv_env(home):
    """asv with its own HOME (machine file), the user's pip/virtualenv config and caches kept,
    and the Python this venv was made from first on PATH (asv's virtualenv plugin finds 3.11)."""
    real = Path.home()
    env = dict(os.environ, HOME=str(home))
    for var, default in [("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"),
                         ("XDG_DATA_HOME", ".local/share")]:
        env.setdefault(var, str(real / default))
    env["PATH"] = os.pathsep.join([str(Path(sys.base_prefix) / "bin"), env.get("PATH", "")])
    return env


def asv(conf, env, *args, timeout=3000):
    return subprocess.run([sys.executable, "-m", "asv", "--config", str(conf), *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


UNIT = {"s": 1.0, "ms": 1e-3, "\u03bcs": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}


def times(out) -> dict:
    """{commit[:8]: seconds} of the case at every commit asv find ran."""
    found, commit = {}, None
    for line in out.splitlines():
        head = re.search(r"For kmicro commit ([0-9a-f]{8})", line)
        cell = re.search(r"dense\(units=10\)@32x512 +forward +([0-9.]+)\S*?(\w?s) ", line + " ")
        if head:
            commit = head.group(1)
        elif cell and commit:
            found[commit] = float(cell.group(1)) * UNIT[cell.group(2)]
    return found


def summary(out):
    """asv find's steps: each commit it ran, the case's time there, the verdict."""
    keep = re.compile(r"Testing|For kmicro|Greatest|dense\(units=10\)@32x512 +forward ")
    return "\n".join(ln for ln in out.splitlines() if keep.search(ln))


@pytest.mark.timing
@pytest.mark.slow
@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the Keras 3 stack is Python 3.11")
def test_asv_find_names_the_commit_that_slowed_the_numpy_forward(tmp_path):
    repo = tmp_path / "repo"
    base, planted, last = make_history(repo)
    conf = write_config(repo)
    (tmp_path / "home").mkdir()
    env = asv_env(tmp_path / "home")

    p = asv(conf, env, "machine", "--yes", "--machine", MACHINE)
    assert p.returncode == 0, p.stdout + p.stderr
    ENV_DIR.mkdir(parents=True, exist_ok=True)
    with open(ENV_DIR / ".lock", "w") as lock:  # two test runs at once would share the env
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.perf_counter()
        p = asv(conf, env, "find", "-E", "virtualenv:3.11", "--machine", MACHINE,
                "--show-stderr", f"{base}..{last}", DENSE_FORWARD)
        took = time.perf_counter() - start
    out = p.stdout + p.stderr
    print(f"asv find: {took:.0f} s\n{summary(out)}")
    assert p.returncode == 0, out
    # A failing benchmark does not stop asv find: it still names a commit (docs/guide-asv.md).
    assert not re.search(r"\d+/\d+ failed", out), out
    found = re.search(r"Greatest regression found: ([0-9a-f]{8})", out)
    assert found, out
    assert found.group(1) == planted[:8], f"planted {planted[:8]}\n{summary(out)}"
    # The verdict alone can be right by chance (noise, or an `existing` environment that never
    # installs the planted commit): the slowdown must be in the numbers too.
    seconds = times(out)
    assert seconds[planted[:8]] > 2 * min(seconds.values()), summary(out)
