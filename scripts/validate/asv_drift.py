"""The relative asv suite's own check (the `asv-drift` claim of docs/validation.md): an A/A
history and a planted commit.

A throwaway clone of this repository at HEAD gets four commits that change nothing timed (a
comment in README.md) and then one plant: kmicro's JAX forward of Conv2D also convolves 5
of the batch's 32 samples again and adds 0 x their mean (XLA cannot drop it: 0 x NaN is NaN),
+15.6 % of the layer's forward work by construction. One `asv run --interleave-rounds` over
the six commits times the relative suite (benchmarks/relative.py, this checkout's) and three
absolute `time_pass` cases beside it; `asv publish` then writes its regressions page. The
script prints every series over the six commits, the A/A spread, the plant's step, the
regressions listed and the wall time, and last the same as one JSON object.

    make asv-machine asv-reference BACKENDS=jax
    .venv/bin/python scripts/validate/asv_drift.py [--work /tmp/kmicro-relhist]
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kmicro import asvconf  # noqa: E402
from kmicro.core import stacks  # noqa: E402

ABSOLUTE = ("Ops.time_pass\\(.(conv2d\\(filters=32,kernel_size=3,padding=same\\)@32x32x32x3/cl|"
            "batchnorm\\(\\)@32x32x32x16/cl|dense\\(units=10\\)@32x512)., .forward.\\)")
PLANTED_FROM = "            return layer.stateless_call(tv, ntv, x, **kw)[0]\n"
PLANTED_TO = """            y = layer.stateless_call(tv, ntv, x, **kw)[0]
            if type(layer).__name__ == "Conv2D":  # planted: 5 of 32 samples again
                again = layer.stateless_call(tv, ntv, x[:5], **kw)[0]
                y = y + jax.numpy.mean(again) * 0.0
            return y
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/kmicro-relhist"))
    p.add_argument("--backend", default="jax", choices=["jax"])  # the plant is JAX's
    args = p.parse_args()
    work = args.work
    if work.exists():
        sys.exit(f"{work} exists: remove it or name another --work")
    if f"asv-ref-{args.backend}" not in stacks.all_stacks():
        sys.exit(f"no reference stack: run `make asv-reference BACKENDS={args.backend}`")
    repo = work / "repo"
    _history(repo)
    config = asvconf.config([args.backend], keras2=False)
    config.update(repo=str(repo), benchmark_dir=str(ROOT / "benchmarks"))
    (work / "asv.conf.json").write_text(json.dumps(config, indent=1))
    # virtualenv finds the stacks' Python (this venv's base) on PATH; asv's benchmark
    # processes get kmicro's allocator policy, as `make asv-run` gives them
    env = dict(os.environ, GLIBC_TUNABLES=stacks.MALLOC_TUNABLES,
               PATH=f"{Path(sys.base_prefix) / 'bin'}:{os.environ['PATH']}")
    asv = [str(ROOT / ".venv/bin/asv"), "--config", str(work / "asv.conf.json")]
    started = time.monotonic()
    subprocess.run(asv + ["run", "--launch-method", "forkserver", "--interleave-rounds",
                          "HEAD~6..HEAD", "-b", "Relative.track_ratio", "-b", ABSOLUTE],
                   cwd=work, env=env, check=True)
    wall = time.monotonic() - started
    subprocess.run(asv + ["publish"], cwd=work, env=env, check=True)
    _summary(work, repo, wall)


def _git(repo, *argv) -> str:
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True,
                          text=True).stdout.strip()


def _history(repo):
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    _git(repo, "config", "user.email", "history@example.invalid")
    _git(repo, "config", "user.name", "relative history")
    for i in range(1, 5):
        with open(repo / "README.md", "a") as f:
            f.write(f"<!-- A/A commit {i}: nothing timed changes -->\n")
        _git(repo, "commit", "-qam", f"A/A {i}: a comment in README.md")
    source = repo / "kmicro" / "backends" / "keras3" / "jax_backend.py"
    text = source.read_text()
    assert text.count(PLANTED_FROM) == 1, "the JAX forward changed: update the plant"
    source.write_text(text.replace(PLANTED_FROM, PLANTED_TO))
    _git(repo, "commit", "-qam", "plant: JAX Conv2D forward convolves 5 of 32 samples again")


def _summary(work, repo, wall):
    commits = _git(repo, "log", "--format=%H", "-6", "--reverse").split()
    series = {}  # (benchmark, params) -> {commit: value}
    for path in (work / ".asv" / "results").glob("*/*.json"):
        data = json.loads(path.read_text())
        if "commit_hash" not in data:
            continue
        columns = data["result_columns"]
        for name, row in data["results"].items():
            row = dict(zip(columns, row))
            combos = _combinations(row["params"])
            for combo, value in zip(combos, row["result"] or []):
                series.setdefault((name, combo), {})[data["commit_hash"]] = value
    print(f"wall time of asv run: {wall:.0f} s for 6 commits ({wall / 6 / 60:.1f} min each)")
    print("commits:", " ".join(c[:8] for c in commits), "(the last is the plant)")
    outside5 = outside3 = 0
    ratios, steps = 0, {}
    for (name, combo), by_commit in sorted(series.items()):
        values = [by_commit.get(c) for c in commits]
        values = [None if v is None or v != v else v for v in values]  # NaN: not selected
        if all(v is None for v in values):
            continue
        before = [v for v in values[:5] if v is not None]
        cells = " ".join("n/a" if v is None else f"{v:.4g}" for v in values)
        spread = f"A/A {min(before):.4g}-{max(before):.4g}" if before else "A/A n/a"
        print(f"{name.split('.')[-1]} {', '.join(combo)}: {cells}  ({spread})")
        if name.endswith("track_ratio") and before:
            ratios += 1
            outside5 += any(abs(v - 1) > 0.05 for v in before)
            outside3 += any(abs(v - 1) > 0.03 for v in before)
            if values[-1] is not None:
                steps[", ".join(combo)] = values[-1] / sorted(before)[len(before) // 2]
    print(f"ratio series: {ratios}; with an A/A point outside ±5 %: {outside5}, "
          f"outside ±3 %: {outside3}")
    regressions = work / ".asv" / "html" / "regressions.json"
    listed = json.loads(regressions.read_text())["regressions"] if regressions.exists() else []
    print(f"asv publish's regressions page lists {len(listed)}:")
    for name, _, params, _, last, best, _ in listed:
        print(f"   {name} {json.dumps(params)}: {best:.4g} -> {last:.4g}")
    print(json.dumps({"wall_s": wall, "commits": len(commits), "ratio_series": ratios,
                      "aa_outside_5": outside5, "aa_outside_3": outside3,
                      "plant_step": steps, "regressions": [r[0] for r in listed]}))


def _combinations(params) -> list:
    """asv's params (a list of value lists) as the tuples of its result order."""
    combos = [()]
    for values in params:
        combos = [c + (v.strip("'"),) for c in combos for v in values]
    return combos


if __name__ == "__main__":
    main()
