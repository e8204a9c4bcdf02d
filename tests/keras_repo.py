"""Throwaway git histories of Keras' own source (its 3.15.1 sdist), for kmicro env and bisect."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kmicro.core import stacks

# Kept between runs and checkouts (CI clones afresh): the sdist, and the bisect tests' stacks.
CACHE = stacks._user_cache() / "tests"
SDIST = CACHE / "sdist"  # downloaded once
DENSE = Path("keras") / "src" / "layers" / "core" / "dense.py"
# A real slowdown, not a sleep: two more elementwise passes over Dense's input (one made
# +15-20 % on dense(units=10)@32x512 forward with the numpy backend on the 2-core VM, and the
# bisection then took three A/B runs to call the commit before it "not slower").
PLANT = ("        x = ops.matmul(inputs, self.kernel)\n",
         "        x = ops.matmul(ops.add(ops.add(inputs, 0.0), 0.0), self.kernel)\n")


# Fixed authors and dates: the same history has the same commits in every run, so the
# environments built for them (named by commit) are found again instead of rebuilt.
GIT_ENV = dict(GIT_AUTHOR_NAME="kmicro test", GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_NAME="kmicro test",
               GIT_COMMITTER_EMAIL="test@example.invalid",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env=dict(os.environ, **GIT_ENV))


def keras_repo(repo: Path) -> Path:
    """A git repository holding Keras 3.15.1's source as one commit."""
    if not list(SDIST.glob("keras-3.15.1.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", str(SDIST), "keras==3.15.1"], check=True)
    unpack = repo.parent / (repo.name + "-unpack")
    unpack.mkdir(parents=True)
    subprocess.run(["tar", "--no-same-owner", "-xzf", str(SDIST / "keras-3.15.1.tar.gz"),
                    "-C", str(unpack)], check=True)
    shutil.move(str(unpack / "keras-3.15.1"), str(repo))
    unpack.rmdir()
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "keras 3.15.1")
    return repo


def commit(repo: Path, path, old: str, new: str, message: str):
    file = repo / path
    text = file.read_text()
    assert old in text, f"{path} changed upstream: update tests/keras_repo.py"
    file.write_text(text.replace(old, new, 1))
    _git(repo, "commit", "-qam", message)


def history(repo: Path, n: int, planted=None) -> list:
    """keras_repo + `n` commits (each touching the README; commit number `planted` plants the
    slowdown instead); returns every commit, oldest first."""
    keras_repo(repo)
    for i in range(1, n + 1):
        if i == planted:
            commit(repo, DENSE, *PLANT, f"commit {i}: the planted slowdown")
        else:
            commit(repo, "README.md", "# Keras 3", f"# Keras 3 ({i})", f"commit {i}: harmless")
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "HEAD"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()
