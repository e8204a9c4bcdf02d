"""kmicro sweep and bisect --cluster: a throwaway Keras history swept here and on a real Ray
cluster of this machine (ray.cluster_utils: a head and worker nodes, each offering the
`kmicro` resource), the same records either way; no two cells at once on a node; a node killed
mid-sweep loses no finished cell; a k-ary bisection names the planted commit, or none; bad
input is one line and exit 2."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import KMICRO, ROOT, load, run_kmicro
from keras_repo import history
from test_bisect import CASE as BISECT_CASE, ENVS

from kmicro.analysis import sweep

# The bisect tests' environments (the same commits): built once, shared.
pytestmark = pytest.mark.xdist_group("bisect")

CASES = ("--case", "dense(units=10)@32x512", "--case", "dense(units=16)@32x512",
         "--passes", "forward", "--from", "numpy", "--package", "keras")
# A small cell: two worker pairs, at most 10 rounds (the plant is +30-40 %).
SMALL = ("--rounds", "10", "--processes", "2", "--min-effect", "0.05")


def sweep_cmd(repo, revs, out, *more):
    return [*KMICRO, "sweep", "--repo", str(repo), "--revs", revs, *CASES, *SMALL,
            "--json", str(out), *more]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A history of 4 commits after Keras 3.15.1, the second planted."""
    repo = tmp_path_factory.mktemp("sweep") / "keras"
    return repo, history(repo, 4, planted=2)


@pytest.fixture
def envs(monkeypatch):
    """The shared environments, for this process and the Ray nodes it starts."""
    for key, value in (("KMICRO_CONFIG", str(ENVS / "stacks.json")), ("KMICRO_ENVS", str(ENVS))):
        monkeypatch.setenv(key, value)


@pytest.fixture
def cluster(envs):
    """A Ray cluster on this machine: a head with no `kmicro` resource and two worker nodes
    with one each, each node on a CPU of its own (as `taskset -c N ray start` would place it:
    a node's processes inherit its mask, and kmicro places its workers within it). Nodes that
    shared both CPUs timed bursts on the CPU the other node was timing on: rounds read 0.76x
    and 2.83x for a +40 % plant, and its interval took in 1."""
    from ray.cluster_utils import Cluster

    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                         "include_dashboard": False})
    everywhere = os.sched_getaffinity(0)
    for i in range(2):
        os.sched_setaffinity(0, {sorted(everywhere)[i % len(everywhere)]})
        try:
            made.add_node(num_cpus=1, resources={"kmicro": 1})
        finally:
            os.sched_setaffinity(0, everywhere)
    made.wait_for_nodes()
    yield made
    made.shutdown()


def _by_cell(found):
    return {(r["variant"], r["case"], r["pass"], r["role"]): r for r in found}


def _check_planted(found, commits, verdicts=True):
    """Commit 1 is harmless, commit 2 the plant: the plant's cells are slower (`verdicts`:
    called so; otherwise their median rounds read so)."""
    cells = _by_cell(found)
    for case in ("dense(units=10)@32x512", "dense(units=16)@32x512"):
        plant = cells[(f"keras@{commits[2][:10]}", case, "forward", "cell")]
        assert plant["verdict"] == "slower" if verdicts else plant["ratio"] > 1.15, plant
        assert cells[(f"keras@{commits[1][:10]}", case, "forward", "cell")]["ratio"] < 1.15


def _published(directory) -> dict:
    """Real `asv publish` of a sweep's --asv DIR: {base: {commit position: [ratio per (case,
    pass)]}}, and the tags asv read."""
    config = directory / "asv.conf.json"
    done = subprocess.run([sys.executable, "-m", "asv", "--config", str(config), "publish"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    series = {}
    for graph in (directory / "html" / "graphs").glob("**/sweep.Sweep.track_ratio.json"):
        bases = [p.split("-", 1)[1] for p in graph.parts if p.startswith("base-")]
        if not bases:  # graphs/summary/: asv's summary over all lines
            continue
        series[bases[0]] = {rev: values for rev, values in json.loads(graph.read_text())}
    tags = json.loads((directory / "html" / "index.json").read_text())["tags"]
    return series, tags


def _no_two_cells_at_once(found):
    runs = {}
    for r in found:
        runs[(r["node"]["id"], r["cell"], r["role"])] = (r["cell_start"], r["cell_end"])
    by_node = {}
    for (node, _, _), span in runs.items():
        by_node.setdefault(node, []).append(span)
    for spans in by_node.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start, spans


@pytest.mark.timing
@pytest.mark.slow
def test_a_sweep_on_a_ray_cluster_gives_the_records_the_local_one_does(planted, cluster,
                                                                       tmp_path):
    repo, commits = planted
    revs = f"{commits[0]}..{commits[2]}"
    local = subprocess.run(sweep_cmd(repo, revs, tmp_path / "local.json", "--asv",
                                     str(tmp_path / "asv")), cwd=ROOT,
                           capture_output=True, text=True, timeout=1200)
    assert local.returncode == 0, local.stderr
    on_ray = subprocess.run(sweep_cmd(repo, revs, tmp_path / "ray.json", "--cluster",
                                      cluster.address), cwd=ROOT, capture_output=True,
                            text=True, timeout=1200)
    assert on_ray.returncode == 0, on_ray.stderr
    here, there = load(tmp_path / "local.json"), load(tmp_path / "ray.json")
    firsts = [r for r in there if r["role"] == "cell"]
    assert len(here) == len(firsts) == 4  # 2 commits x 2 cases x forward
    assert {k for k in _by_cell(here)} == {k for k in _by_cell(firsts)}
    for a, b in zip(sorted(here, key=lambda r: (r["cell"], r["case"])),
                    sorted(firsts, key=lambda r: (r["cell"], r["case"]))):
        assert set(a) == set(b)
    _check_planted(here, commits)
    # A test node has one CPU, beside the head's and this driver's processes: up to 3 of a
    # 10-round cell's rounds lost the plant there (0.92-0.95 among 1.33-1.72), which an
    # interval of 10 rounds takes in. The cells' medians must show it; the calls are checked
    # on the local run's records, above.
    _check_planted(there, commits, verdicts=False)
    assert {r["node"]["id"] for r in here} == {f"local:{os.uname().nodename}"}
    assert len({r["node"]["id"] for r in firsts}) == 2  # both nodes worked
    # two nodes: two cells measured again, each on the node that did not measure it first
    again = [r for r in there if r["role"] == "overlap"]
    assert len({r["cell"] for r in again}) == 2
    first_node = {r["cell"]: r["node"]["id"] for r in firsts}
    assert all(r["node"]["id"] != first_node[r["cell"]] for r in again)
    assert "nodes agree on" in on_ray.stdout
    _no_two_cells_at_once(there)
    # --asv: the swept commits, in their order, each point the record's ratio
    series, _ = _published(tmp_path / "asv")
    (points,) = series.values()
    assert len(points) == 2 and min(points) < max(points)
    planted_ratios = sorted(r["ratio"] for r in here if r["variant"].endswith(commits[2][:10]))
    assert sorted(points[max(points)]) == pytest.approx(planted_ratios)


@pytest.mark.timing
@pytest.mark.slow
def test_a_node_killed_mid_sweep_loses_no_finished_cell(planted, cluster, tmp_path):
    repo, commits = planted
    out = tmp_path / "s.json"
    proc = subprocess.Popen(sweep_cmd(repo, f"{commits[0]}..{commits[4]}", out, "--cluster",
                                      cluster.address, "--overlap", "0"),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []

    def read():
        for line in proc.stderr:
            lines.append(line)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.time() + 600
    while not any("passes compared" in line for line in lines) and time.time() < deadline:
        time.sleep(0.5)  # the first cell is in: the other node is mid-cell
    finished_before = {r["cell"] for r in load(out)}
    victim = next(n for n in cluster.worker_nodes)
    cluster.remove_node(victim, allow_graceful=False)
    proc.stdout.read()
    proc.wait(timeout=1200)
    reader.join(5)
    assert proc.returncode == 0, "".join(lines)
    found = load(out)
    assert {r["cell"] for r in found} == {1, 2, 3, 4}
    assert finished_before <= {r["cell"] for r in found}
    assert all(r["status"] == "ok" for r in found), [r["error"] for r in found]
    _no_two_cells_at_once(found)


@pytest.mark.slow
def test_a_version_that_does_not_exist_is_an_error_cell_and_the_sweep_goes_on(envs, tmp_path):
    p = run_kmicro("sweep", "--set", "keras==0.0.1,3.15.1", "--from", "numpy", "--case",
                   "dense(units=10)@32x512", "--passes", "forward", *SMALL,
                   "--json", str(tmp_path / "s.json"), "--asv", str(tmp_path / "asv"),
                   timeout=900)
    assert p.returncode == 0, p.stderr
    found = {r["variant"]: r for r in load(tmp_path / "s.json")}
    assert found["keras==0.0.1"]["status"] == "error"
    assert "keras==0.0.1" in found["keras==0.0.1"]["error"]
    assert found["keras==3.15.1"]["status"] == "ok"
    # --asv: one point per version, tagged with it; the one that failed is no value
    series, tags = _published(tmp_path / "asv")
    assert set(tags) == {"keras-0.0.1", "keras-3.15.1"}
    points = series["numpy"]
    assert points[tags["keras-3.15.1"]] == [pytest.approx(found["keras==3.15.1"]["ratio"])]
    assert points.get(tags["keras-0.0.1"], [None]) == [None]
    # the finished file: --resume runs nothing again
    again = run_kmicro("sweep", "--set", "keras==0.0.1,3.15.1", "--from", "numpy", "--case",
                       "dense(units=10)@32x512", "--passes", "forward", *SMALL, "--resume",
                       "--json", str(tmp_path / "s.json"), timeout=900)
    assert again.returncode == 0, again.stderr
    assert "1 of 2 cells already in" in again.stderr


@pytest.mark.parametrize("args, text", [
    (["--from", "jax"], "which variants?"),
    (["--set", "keras", "--from", "jax"], "expected NAME==VERSION"),
    (["--set", "keras==3.14.0", "--revs", "a..b", "--from", "jax"], "choose one"),
    (["--set", "keras==3.14.0", "--from", "nosuchstack"], "valid stacks"),
    (["--set", "keras==3.14.0", "--from", "jax", "--cluster", "127.0.0.1:9"],
     "cannot reach a Ray cluster at 127.0.0.1:9"),
    (["--set", "keras==3.14.0", "--from", "jax", "--cluster", "nonsense"], "malformed --cluster"),
    (["--set", "keras==3.14.0", "--from", "jax", "--resume"], "--resume needs --json"),
    (["--set", "keras==3.14.0", "--from", "jax", "--asv", "docs"], "holds files a sweep did not"),
])
def test_bad_input_is_one_line_and_exit_2(args, text, tmp_path):
    p = run_kmicro("sweep", *args, "--ops", "dense", timeout=120)
    assert p.returncode == 2, p.stderr
    assert text in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (ROOT / "results").exists() or not list((ROOT / "results").glob("sweep-*"))


def test_asv_output_of_commits_on_no_branch_is_refused_before_measuring(tmp_path):
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for n in range(3):
        if n == 2:
            subprocess.run([*git, "checkout", "-q", "--detach"], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", str(n)], check=True)
    p = run_kmicro("sweep", "--repo", str(repo), "--package", "keras", "--revs", "HEAD~2..HEAD",
                   "--from", "jax", "--ops", "dense", "--asv", str(tmp_path / "asv"),
                   timeout=120)
    assert p.returncode == 2, p.stderr
    assert "no local branch" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "asv").exists()


@pytest.mark.slow
def test_a_cluster_without_the_resource_says_how_to_start_one(tmp_path):
    from ray.cluster_utils import Cluster

    bare = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                         "include_dashboard": False})
    try:
        p = run_kmicro("sweep", "--set", "keras==3.14.0", "--from", "numpy", "--ops", "dense",
                       "--cluster", bare.address, timeout=180)
    finally:
        bare.shutdown()
    assert p.returncode == 2, p.stderr
    assert "offers the 'kmicro' resource" in p.stderr and "--resources" in p.stderr, p.stderr


def test_overlap_cells_are_spread_over_the_nodes_and_disagreeing_nodes_are_named():
    variants = [sweep.Variant(f"keras=={v}", f"keras=={v}") for v in ("1", "2", "3", "4")]
    cells = sweep.plan(["jax"], variants)
    done = list(zip(cells, ["n1", "n1", "n2", "n2"]))
    again = sweep.overlap_cells(done, 2, ["n1", "n2"])
    assert [(c.number, c.avoid_node, c.role) for c in again] == [(1, "n1", "overlap"),
                                                                (3, "n2", "overlap")]
    assert sweep.overlap_cells(done, 2, ["n1"]) == []

    def rec(cell, node, role, ratio):
        return dict(cell=cell, case="c", status="ok", node={"id": node}, role=role,
                    ratio=ratio, ci_low=ratio - 0.01, ci_high=ratio + 0.01, **{"pass": "forward"})
    found = [rec(1, "n1", "cell", 1.0), rec(1, "n2", "overlap", 1.0),
             rec(3, "n2", "cell", 1.0), rec(3, "n3", "overlap", 1.3),
             rec(4, "n2", "cell", 1.0), rec(4, "n1", "overlap", 1.0)]
    agreed = sweep.agreement(found)
    assert [agree for _, _, agree in agreed["pairs"]] == [True, False, True]
    assert agreed["named"] == ["n3"]  # n2 agreed in 2 of its 3 comparisons


def _bisect_on(cluster, repo, commits, tmp_path, extend):
    return subprocess.run([*KMICRO, "bisect", "--repo", str(repo), "--good", commits[0],
                           "--bad", commits[-1], *BISECT_CASE, "--extend", str(extend),
                           "--cluster", cluster.address, "--json", str(tmp_path / "b.json")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)


@pytest.mark.timing
@pytest.mark.slow
def test_bisect_on_a_cluster_judges_commits_at_once_and_names_the_planted_one(planted, cluster,
                                                                             tmp_path):
    repo, commits = planted
    p = _bisect_on(cluster, repo, commits, tmp_path, extend=4)
    assert p.returncode == 0, p.stderr
    assert f"first slow commit: {commits[2][:10]}" in p.stdout, p.stdout
    tested = load(tmp_path / "b.json")
    # two nodes: after the ends, commits 1 and 2 in one step, on both nodes
    assert [r["commit"] for r in tested[1:]] and {r["commit"] for r in tested[1:]} == \
        {commits[1], commits[2]}
    assert len({r["node"] for r in tested[1:]}) == 2


@pytest.mark.timing
@pytest.mark.slow
def test_bisect_on_a_cluster_without_a_change_names_no_commit(cluster, tmp_path):
    repo = tmp_path / "keras"
    commits = history(repo, 4)
    p = _bisect_on(cluster, repo, commits, tmp_path, extend=0)  # as in test_bisect
    assert p.returncode == 0, p.stderr
    assert "no significant change" in p.stdout and "first slow commit" not in p.stdout


def test_a_k_ary_step_probes_evenly_and_binary_is_the_middle():
    from kmicro.analysis.bisect import _probes

    assert _probes(-1, 24, 1) == [11]  # what the binary search took
    assert _probes(-1, 3, 2) == [0, 1]
    assert _probes(-1, 24, 4) == [4, 9, 14, 19]
    assert _probes(3, 5, 4) == [4]  # never more probes than commits in between


def test_a_speed_up_is_bisected_like_a_slowdown_mirrored():
    from kmicro.analysis.bisect import _step_call

    # the bad end is 0.8x good: the midpoint is 0.894
    faster = dict(verdict="faster", ratio=0.8, ci_low=0.78, ci_high=0.82)
    near_good = dict(verdict="same", ratio=0.99, ci_low=0.95, ci_high=1.02)
    between = dict(verdict="same", ratio=0.88, ci_low=0.80, ci_high=0.97)
    assert _step_call(faster, 0.8, False, "faster") == dict(call="faster", settled=True)
    assert _step_call(near_good, 0.8, False, "faster") == dict(call="not faster", settled=True)
    assert _step_call(between, 0.8, False, "faster") == dict(call=None, settled=False)
    assert _step_call(between, 0.8, True, "faster") == dict(call="faster", settled=False)
    # and the slowdown's calls are unchanged
    assert _step_call(dict(verdict="same", ratio=1.0, ci_low=0.97, ci_high=1.05), 1.2, False) \
        == dict(call="not slower", settled=True)
