"""`kmicro sweep --asv DIR`: a sweep's ratios as asv results, so that `asv publish --config
DIR/asv.conf.json` draws each case and pass as a history graph, one line per base stack.

asv's x-axis is a git history. A commit sweep's points are the swept checkout's own commits
(asv reads their order and dates from it); a version sweep's are the commits of a small git
repository, DIR/versions, one empty commit per version, tagged with it, in the order given.
The value is the variant's time over its base's; asv's 99 % columns hold kmicro's interval
(95 %), which asv draws as the error band. Overlap cells are checks, not points: left out.
DIR holds one sweep: it is written again in full after every sweep.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import time
from itertools import product
from pathlib import Path

from kmicro.core.errors import UsageError

__all__ = ["BENCHMARK", "MACHINE", "PROJECT", "check_dir", "check_repo", "write"]

BENCHMARK = "sweep.Sweep.track_ratio"
MACHINE = "kmicro-sweep"
PROJECT = "kmicro sweep"  # what marks a folder this module wrote
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
           "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"]


def check_dir(directory):
    """DIR is new, empty, or one this module wrote: it is written again in full, so a folder
    of anything else is refused before anything is measured."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--asv {directory}: not a folder")
    if not directory.exists() or not any(directory.iterdir()):
        return
    try:
        ours = json.loads((directory / "asv.conf.json").read_text())["project"] == PROJECT
    except (OSError, ValueError, KeyError, TypeError):
        ours = False
    if not ours:
        raise UsageError(f"--asv {directory}: the folder holds files a sweep did not write; "
                         "give a new or empty folder, or one an earlier sweep wrote")


def check_repo(repo, last_sha: str) -> str:
    """The local branch of `repo` that holds the sweep's last commit: asv plots only commits
    on a configured branch. Checked before anything is measured."""
    out = _git(repo, "for-each-ref", "--contains", last_sha, "--format=%(refname:short)",
               "refs/heads")
    branches = out.split()
    if not branches:
        raise UsageError(f"--asv: no local branch of {repo} contains {last_sha[:10]}; asv "
                         "plots the commits of a branch (git branch NAME " f"{last_sha[:10]})")
    return "main" if "main" in branches else branches[0]


def write(directory, found: list, variants: list, repo=None) -> Path:
    """DIR/asv.conf.json and DIR/results for the records of `variants` in `found`;
    returns the config's path."""
    directory = Path(directory).resolve()
    labels = [v.label for v in variants]
    points = [r for r in found if r.get("role") == "cell" and r.get("variant") in labels]
    if repo:
        repo = str(Path(repo).resolve())
        shas = [_git(repo, "rev-parse", v.spec.partition("@")[2]).strip() for v in variants]
        branch = check_repo(repo, shas[-1])
        dates = [int(_git(repo, "show", "-s", "--format=%ct", s).strip()) * 1000 for s in shas]
    else:
        repo, branch = str(directory / "versions"), "main"
        shas, dates = _versions_repo(Path(repo), labels)
    cases = list(dict.fromkeys(r["case"] for r in points))
    passes = list(dict.fromkeys(r["pass"] for r in points))
    results = directory / "results"
    shutil.rmtree(results, ignore_errors=True)
    (results / MACHINE).mkdir(parents=True)
    benchmark = _benchmark(cases, passes)
    _dump(results / "benchmarks.json", {BENCHMARK: benchmark, "version": 2})
    _dump(results / MACHINE / "machine.json", _machine(points))
    for base in dict.fromkeys(r["base"] for r in points):
        for label, sha, date in zip(labels, shas, dates):
            got = {(r["case"], r["pass"]): r for r in points
                   if r["base"] == base and r["variant"] == label}
            if got:
                env = f"kmicro-{base}"
                _dump(results / MACHINE / f"{sha[:8]}-{env}.json",
                      _result(got, cases, passes, benchmark, sha, date, base, env))
    config = directory / "asv.conf.json"
    _dump(config, {"version": 1, "project": PROJECT, "project_url": "", "repo": repo,
                   "branches": [branch], "results_dir": "results", "html_dir": "html",
                   "environment_type": "virtualenv"})
    return config


def _benchmark(cases, passes) -> dict:
    params = [[repr(c) for c in cases], [repr(p) for p in passes]]
    version = hashlib.sha256(json.dumps(params).encode()).hexdigest()
    return {"name": BENCHMARK, "type": "track", "unit": "ratio", "param_names": ["case", "pass"],
            "params": params, "version": version, "timeout": 0,
            "code": "kmicro sweep: the variant's time over its base stack's, in interleaved "
                    "rounds on one node"}


def _result(got, cases, passes, benchmark, sha, date, base, env) -> dict:
    """One asv results file: every (case, pass) of one base and variant; a pass that failed
    is None (asv: failed), one not asked for NaN (asv: skipped)."""
    values, stats = [], {c: [] for c in COLUMNS[5:]}
    for key in product(cases, passes):
        r = got.get(key)
        ok = r is not None and r["status"] == "ok" and r.get("ratio") is not None
        values.append(r["ratio"] if ok else (None if r is not None else float("nan")))
        for column, value in zip(COLUMNS[5:], (r["ci_low"], r["ci_high"], None, None, 1,
                                               r.get("rounds")) if ok else (None,) * 6):
            stats[column].append(value)
    first = min(got.values(), key=lambda r: r.get("cell_start") or 0)
    row = [values, benchmark["params"], benchmark["version"],
           int((first.get("cell_start") or time.time()) * 1000),
           round((first.get("cell_end") or 0) - (first.get("cell_start") or 0), 3),
           *(stats[c] for c in COLUMNS[5:])]
    return {"commit_hash": sha, "env_name": env, "date": date,
            "params": {"machine": MACHINE, "base": base}, "python": platform.python_version(),
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS,
            "results": {BENCHMARK: row}, "durations": {}, "version": 2}


def _machine(points) -> dict:
    """The nodes that measured the points (a cluster's are named together)."""
    def named(field):
        return " / ".join(sorted({str((r.get("node") or {}).get(field) or "unknown")
                                  for r in points}))

    # arch and os are this machine's: the nodes' records do not carry them
    return {"machine": MACHINE, "cpu": named("cpu"), "num_cpu": named("cpus"),
            "arch": platform.machine(), "os": f"{platform.system()} {platform.release()}",
            "ram": "", "version": 1}


def _versions_repo(path: Path, labels: list) -> tuple:
    """A git repository with one empty commit per version, tagged with it: asv's x-axis for
    a version sweep. Made again each time, so its commits follow the labels' order."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    shas, dates, start = [], [], int(time.time())
    for n, label in enumerate(labels):
        stamp = f"{start + n} +0000"
        env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp,
               "GIT_AUTHOR_NAME": "kmicro", "GIT_AUTHOR_EMAIL": "kmicro@localhost",
               "GIT_COMMITTER_NAME": "kmicro", "GIT_COMMITTER_EMAIL": "kmicro@localhost"}
        _git(path, "commit", "-q", "--allow-empty", "-m", label, env=env)
        _git(path, "tag", re.sub(r"[^A-Za-z0-9._-]+", "-", label))
        shas.append(_git(path, "rev-parse", "HEAD").strip())
        dates.append((start + n) * 1000)
    return shas, dates


def _git(repo, *argv, env=None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        raise UsageError(f"--asv: git {argv[0]} in {repo} failed: "
                         f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return done.stdout


def _dump(path: Path, data):
    path.write_text(json.dumps(data, indent=1) + "\n")  # NaN as asv writes it
