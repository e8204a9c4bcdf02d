"""kmicro bisect on throwaway Keras histories: it names the planted commit, and says "no
significant change" (exit 0, no commit) on the same history without the plant."""
import os
import subprocess

import pytest

from conftest import KMICRO, ROOT, load
from keras_repo import history

ENVS = ROOT / ".cache" / "test-envs"  # per-commit environments, kept between runs
CASE = ("--case", "dense(units=10)@32x512", "--pass", "forward", "--from", "numpy",
        "--package", "keras")


def bisect(repo, good, bad, tmp_path):
    env = dict(os.environ, KMICRO_CONFIG=str(tmp_path / "stacks.json"), KMICRO_ENVS=str(ENVS))
    return subprocess.run([*KMICRO, "bisect", "--repo", str(repo), "--good", good, "--bad", bad,
                           *CASE, "--json", str(tmp_path / "b.json")], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=1800)


@pytest.mark.slow
def test_bisect_names_the_planted_commit(tmp_path):
    commits = history(tmp_path / "keras", 8, planted=5)
    p = bisect(tmp_path / "keras", commits[0], commits[-1], tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"first slow commit: {commits[5][:10]}" in p.stdout, p.stdout
    tested = {r["commit"]: r for r in load(tmp_path / "b.json")}
    assert tested[commits[5]]["verdict"] == "slower"
    assert all(tested[c]["verdict"] == "same" for c in commits[1:5] if c in tested)
    assert 1.08 < tested[commits[-1]]["ratio"] < 1.4  # +15-20 %, not a sleep


@pytest.mark.slow
def test_bisect_without_a_change_names_no_commit(tmp_path):
    commits = history(tmp_path / "keras", 8)
    p = bisect(tmp_path / "keras", commits[0], commits[-1], tmp_path)
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
