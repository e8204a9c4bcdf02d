"""The claims of docs/validation.md, each a procedure that runs kmicro's own commands on this
machine and reads their records into (measurement, value) rows.

A claim marked quick runs, smaller, in `make validate-quick`. A procedure raises Skip when
the machine lacks what it needs (a stack, a Keras clone); any other failure is reported as
such with the log's last line, and the next claim runs.
"""
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.append(str(ROOT / "tests"))  # the throwaway Keras histories and known-memory cases

from kmicro.analysis import fidelity  # noqa: E402
from kmicro.core import stacks  # noqa: E402

__all__ = ["CLAIMS", "Claim", "Context", "Skip", "measure", "git_head"]

KMICRO = [sys.executable, "-m", "kmicro.cli"]


class Skip(Exception):
    """The machine lacks what a claim needs; the message says what."""


@dataclass
class Claim:
    id: str
    title: str
    quick: bool
    procedure: object  # (Context) -> [(measurement, value)]


class Context:
    """Where a claim's files go, how big it runs, and the commands it ran."""

    def __init__(self, out, quick, keras_repo=None, repeats=5):
        self.out, self.quick, self.keras_repo = Path(out), quick, keras_repo
        self.repeats = 1 if quick else repeats
        self.commands, self.step = [], lambda text: None
        # Stacks a claim adds (the planted one) live in a config of this run's own, so the
        # user's `kmicro stack list` is left as it was.
        self.env = dict(os.environ, KMICRO_CONFIG=str(self.out / "stacks.json"))

    def kmicro(self, *argv, name, env=None) -> tuple:
        """Runs `kmicro ARGV --json OUT/NAME.json`; (its records, wall seconds)."""
        path = self.out / f"{name}.json"
        wall = self.run([*KMICRO, *argv, "--json", str(path)], name, env)
        return json.loads(path.read_text()), wall

    def run(self, argv, name, env=None) -> float:
        """Runs `argv` from the repository root, output in OUT/NAME.log; its wall seconds.
        A non-zero exit is a RuntimeError with the log's last line."""
        shown = (" ".join(str(a) for a in argv).replace(sys.executable + " -m kmicro.cli", "kmicro")
                 .replace(str(self.out) + "/", "OUT/").replace(str(ROOT) + "/", ""))
        self.commands.append(shown)
        self.step(shown[:90])
        log = self.out / f"{name}.log"
        started = time.monotonic()
        with open(log, "w") as f:
            done = subprocess.run([str(a) for a in argv], cwd=ROOT, stdout=f,
                                  stderr=subprocess.STDOUT, env=env or self.env)
        if done.returncode != 0:
            lines = log.read_text().strip().splitlines() or ["no output"]
            raise RuntimeError(f"`{shown}` exited {done.returncode}: {lines[-1][:160]}")
        return time.monotonic() - started


def measure(claim, context) -> dict:
    """The claim's result: status ok, skipped or failed, its rows, wall time and commands."""
    context.commands = []
    started, rows, status, why = time.monotonic(), [], "ok", ""
    try:
        rows = claim.procedure(context)
    except Skip as exc:
        status, why = "skipped", str(exc)
    except Exception as exc:  # a claim that fails is reported; the next one runs
        status, why = "failed", f"{type(exc).__name__}: {exc}"
    return {"id": claim.id, "title": claim.title, "status": status, "why": why,
            "rows": [{"measurement": m, "value": v} for m, v in rows],
            "wall_s": time.monotonic() - started, "commands": list(context.commands)}


def git_head() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    return done.stdout.strip() or "unknown"


def _installed(*names) -> list:
    known = stacks.all_stacks()
    return [n for n in names if n in known and known[n].installed]


def _ok(records) -> list:
    return [r for r in records if r["status"] == "ok"]


def _pct(x) -> str:
    return f"{x:.1%}"


def _label(r) -> str:
    return f"{r['stack']} {r['case']} {r['pass']}"


def overhead(ctx) -> list:
    argv = ["--stacks", "jax", "--ops", "dense", "--rounds", "3"] if ctx.quick else []
    records, wall = ctx.kmicro("calibrate", *argv, name="overhead")
    over = {_label(r): r["median_s"] / r["bare_median_s"] - 1 for r in _ok(records)}
    if not over:
        raise RuntimeError("no pass was measured")
    worst = max(over, key=lambda k: abs(over[k]))
    measured = ", ".join(sorted({r["stack"] for r in _ok(records)}))
    return [("passes measured", f"{len(over)} ({measured})"),
            ("median overhead, kmicro against a bare synchronised loop",
             f"{statistics.median(over.values()):+.1%}"),
            ("largest overhead", f"{over[worst]:+.1%} ({worst})"),
            ("wall", f"{wall:.0f} s")]


def fidelity_claim(ctx) -> list:
    argv = ["--stacks", "jax", "--ops", "dense"] if ctx.quick else []
    records, wall = ctx.kmicro("calibrate", "--independent", *argv, name="fidelity")
    summaries, failed = fidelity.summarize(records)
    if not summaries:
        raise RuntimeError("no pass was measured")
    within = [s for s in summaries if s.within_target]
    outside = [f"{s.stack} {s.case} {s.pass_name} {s.ratio:.3f}" for s in summaries
               if not s.within_target]
    lo, hi = fidelity.TARGET
    rows = [(f"passes whose kmicro/independent median ratio lies in {lo}-{hi}",
             f"{len(within)} of {len(summaries)}"),
            ("median ratio (range)", f"{statistics.median(s.ratio for s in summaries):.3f} "
                                     f"({min(s.ratio for s in summaries):.3f}-"
                                     f"{max(s.ratio for s in summaries):.3f})"),
            ("wall", f"{wall:.0f} s")]
    if outside:
        rows.insert(1, ("outside", "; ".join(outside[:4])))
    if failed:
        rows.append(("not measured", f"{len(failed)} passes"))
    return rows


def aa(ctx) -> list:
    chosen = _installed("jax") if ctx.quick else _installed("jax", "torch", "tensorflow")
    if not chosen:
        raise Skip("none of jax, torch, tensorflow is installed")
    argv = ["--ops", "batchnorm,dense", "--budget", "100"] if ctx.quick else []
    rows = []
    for stack in chosen:
        records, wall = ctx.kmicro("ab", stack, stack, *argv, name=f"aa-{stack}")
        measured = _ok(records)
        flagged = [r for r in measured if r["verdict"] != "same"]
        rows += [(f"`kmicro ab {stack} {stack}`: passes flagged",
                  f"{len(flagged)} of {len(measured)} ({len(flagged) / len(measured):.1%})"),
                 (f"`kmicro ab {stack} {stack}`: median MDE",
                  _pct(statistics.median(r["mde"] for r in measured))),
                 (f"`kmicro ab {stack} {stack}`: wall", f"{wall:.0f} s")]
        if not ctx.quick:
            _, ops_wall = ctx.kmicro("ops", "--stacks", f"{stack},{stack}", name=f"ops-{stack}")
            rows.append((f"`kmicro ab {stack} {stack}`: wall / `kmicro ops --stacks "
                         f"{stack},{stack}`", f"{wall / ops_wall:.2f}x ({ops_wall:.0f} s)"))
    return rows


PLANT = "Conv2D"


def planted(ctx) -> list:
    """jax against jax with one more reduction over Conv2D's output (scripts/plant_layer)."""
    if not _installed("jax"):
        raise Skip("the jax stack is not installed")
    ctx.run([*KMICRO, "stack", "add", "validate-jaxplant", "--python",
             str(ROOT / ".venv" / "bin" / "python"), "--backend", "jax", "--env",
             f"PYTHONPATH={ROOT / 'scripts' / 'plant_layer'}", "--env",
             f"PLANT_LAYER={PLANT}"], "planted-stack")
    ops = "conv2d,dense" if ctx.quick else "conv2d,dense,batchnorm"
    planted_recs, controls, walls = [], [], []
    for seed in range(1, ctx.repeats + 1):
        records, wall = ctx.kmicro("ab", "jax", "validate-jaxplant", "--ops", ops, "--passes",
                                   "forward", "--seed", str(seed), name=f"planted-{seed}")
        walls.append(wall)
        for r in _ok(records):
            (planted_recs if r["op"] == "conv2d" else controls).append(r)
    rows = []
    for case in sorted({r["case"] for r in planted_recs}):
        got = [r for r in planted_recs if r["case"] == case]
        slower = sum(r["verdict"] == "slower" for r in got)
        ratios = " ".join(f"{r['ratio']:.3f}" for r in got)
        rows.append((f"planted {case} forward: called slower", f"{slower} of {len(got)} "
                                                               f"(ratios {ratios})"))
    flagged = [r for r in controls if r["verdict"] != "same"]
    return rows + [
        ("other passes flagged", f"{len(flagged)} of {len(controls)}"),
        ("median MDE", _pct(statistics.median(r["mde"] for r in planted_recs + controls))),
        ("wall per run", f"{statistics.median(walls):.0f} s")]


def bisect_claim(ctx) -> list:
    from keras_repo import CACHE, history

    rows = []
    pins = hashlib.sha1((ROOT / "requirements" / "keras3.txt").read_bytes()).hexdigest()[:10]
    envs = CACHE / f"bisect-envs-{pins}"  # shared with the tests' bisections
    env = dict(ctx.env, KMICRO_CONFIG=str(envs / "stacks.json"), KMICRO_ENVS=str(envs))
    case = ["--case", "dense(units=10)@32x512", "--pass", "forward", "--from", "numpy",
            "--package", "keras"]
    for planted_at, label in ((2, "planted"), (None, "clean")):
        commits = history(ctx.out / f"keras-{label}", 4, planted=planted_at)
        path = ctx.out / f"bisect-{label}.json"
        wall = ctx.run([*KMICRO, "bisect", "--repo", ctx.out / f"keras-{label}", "--good",
                        commits[0], "--bad", commits[-1], *case, "--json", path],
                       f"bisect-{label}", env)
        text = (ctx.out / f"bisect-{label}.log").read_text()
        if planted_at:
            named = f"first slow commit: {commits[planted_at][:10]}" in text
            rows.append(("throwaway Keras history, 4 commits, Dense forward planted in the 2nd: "
                         "planted commit named", f"{'yes' if named else 'no'} ({wall:.0f} s)"))
        else:
            rows.append(("the same history without the plant: \"no significant change\"",
                         f"{'yes' if 'no significant change' in text else 'no'} ({wall:.0f} s)"))
    if ctx.quick:
        return rows
    if not ctx.keras_repo:
        return rows + [("real Keras history (25 commits, BatchNormalization planted)",
                        "skipped: needs --keras-repo PATH (a clone of keras-team/keras)")]
    return rows + _real_keras_bisect(ctx)


def _real_keras_bisect(ctx) -> list:
    """scripts/plant_keras_history.sh's 25 commits: planted, then without the plant."""
    dest = ctx.out / "keras-history"
    ctx.run(["bash", ROOT / "scripts" / "plant_keras_history.sh", ctx.keras_repo, dest],
            "keras-history")
    rows = []
    for bad, label in (("planted-history", "planted"), ("v3.15.0", "clean")):
        wall = ctx.run([*KMICRO, "bisect", "--repo", dest, "--good", "v3.15.0~25", "--bad", bad,
                        "--from", "jax", "--package", "keras", "--case",
                        "batchnorm()@32x32x32x16/cl", "--pass", "forward", "--json",
                        ctx.out / f"keras-{label}.json"], f"keras-bisect-{label}")
        text = (ctx.out / f"keras-bisect-{label}.log").read_text()
        found = next((line for line in text.splitlines() if "first slow commit" in line), "")
        if label == "planted":
            rows.append(("real Keras history, 25 commits, BN forward planted: named",
                         f"{found.split('(')[0].strip() or 'none'} ({wall:.0f} s)"))
        else:
            rows.append(("the same without the plant: \"no significant change\"",
                         f"{'yes' if 'no significant change' in text else 'no'} ({wall:.0f} s)"))
    return rows


def memory(ctx) -> list:
    from known_memory import CONV, DENSE, FLOORS, within

    chosen = _installed("jax", "torch", "numpy")
    if not chosen:
        raise Skip("none of jax, torch, numpy is installed")
    argv = ["--case", DENSE.id, "--case", CONV.id, "--stacks", ",".join(chosen), "--quick"]
    runs = [ctx.kmicro("ops", *argv, name=f"memory-{n}")[0] for n in (1, 2)]
    first = {_label(r): r for r in _ok(runs[0]) if r["peak_bytes"] is not None}
    second = {_label(r): r for r in _ok(runs[1]) if r["peak_bytes"] is not None}
    held = [within(r["peak_bytes"], FLOORS[r["case"]][r["pass"]]) for r in first.values()]
    factor = max(r["peak_bytes"] / FLOORS[r["case"]][r["pass"]] for r in first.values())
    diffs = [abs(first[k]["peak_bytes"] - second[k]["peak_bytes"]) for k in first if k in second]
    return [("figures at least their floor and at most 8x floor + 64 KiB",
             f"{sum(held)} of {len(held)} ({', '.join(chosen)})"),
            ("largest figure / floor", f"{factor:.1f}x"),
            ("the same bytes in a second run", f"{diffs.count(0)} of {len(diffs)} "
                                               f"(largest difference {max(diffs)} B)")]


def in_situ(ctx) -> list:
    if not _installed("torch"):
        raise Skip("the torch stack is not installed")
    ctx.run([ROOT / ".venv" / "bin" / "python", HERE / "in_situ.py", "resnet_bn", "8"],
            "in-situ")
    medians = json.loads((ctx.out / "in-situ.log").read_text().strip().splitlines()[-1])
    plain = medians["median_s"]["plain"]
    return [(f"resnet_bn train step under torch, {mode}",
             f"x{m / plain:.2f} ({m * 1e3:.0f} ms)")
            for mode, m in medians["median_s"].items() if mode != "plain"]


def asv_drift(ctx) -> list:
    if "asv-ref-jax" not in stacks.all_stacks():
        raise Skip("no asv reference stack: run `make asv-machine asv-reference BACKENDS=jax`")
    ctx.run([ROOT / ".venv" / "bin" / "python", HERE / "asv_drift.py", "--work",
             ctx.out / "asv-drift"], "asv-drift")
    got = json.loads((ctx.out / "asv-drift.log").read_text().strip().splitlines()[-1])
    steps = ", ".join(f"{k} {v:.3f}" for k, v in got["plant_step"].items())
    return [("ratio series over 5 A/A commits with a point outside ±3 % / ±5 %",
             f"{got['aa_outside_3']} / {got['aa_outside_5']} of {got['ratio_series']}"),
            ("ratio at the planted commit (Conv2D forward +15.6 % of work)", steps),
            ("regressions asv publish lists", str(len(got["regressions"]))),
            ("wall of asv run", f"{got['wall_s'] / got['commits'] / 60:.1f} min per commit")]


SWEEP_VERSIONS = "keras==3.13.0,3.14.0,3.15.1"


def sweep_claim(ctx) -> list:
    """The seed layers of three Keras versions on jax and torch, swept here and on a 2-node
    Ray cluster of this machine (the nodes share its cores: no speed-up claim)."""
    chosen = _installed("jax", "torch")
    if not chosen:
        raise Skip("neither jax nor torch is installed")
    argv = ["sweep", "--set", SWEEP_VERSIONS, "--from", ",".join(chosen)]
    if ctx.quick:
        argv += ["--ops", "batchnorm,dense", "--passes", "forward"]
    here, _ = ctx.kmicro(*argv, name="sweep-local")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources={"kmicro": 1})
        cluster.wait_for_nodes()
        started = time.time()
        there, _ = ctx.kmicro(*argv, "--cluster", cluster.address, name="sweep-ray")
    finally:
        cluster.shutdown()
    rows = [(f"local: cell wall, {_cells(here)[0][1]['base']} + ...",
             ", ".join(f"{r['variant'].split('==')[-1]} {r['cell_end'] - r['cell_start']:.0f} s"
                       for _, r in _cells(here)))]
    firsts = [r for r in there if r["role"] == "cell"]
    verdicts = {(r["cell"], r["case"], r["pass"]): r["verdict"] for r in here}
    same = sum(verdicts.get((r["cell"], r["case"], r["pass"])) == r["verdict"] for r in firsts)
    rows.append(("2-node Ray cluster: verdicts equal to the local sweep's",
                 f"{same} of {len(firsts)}"))
    overhead = _ray_overhead(there, started)
    rows.append(("2-node Ray cluster: Ray's scheduling overhead per cell (dispatch + return)",
                 f"median {statistics.median(overhead):.2f} s, most {max(overhead):.2f} s"))
    again = [r for r in there if r["role"] == "overlap" and r["status"] == "ok"]
    if again:
        from kmicro.analysis import sweep

        pairs = sweep.agreement(there)["pairs"]
        rows.append(("overlap cells: passes whose two nodes' 95 % intervals overlap",
                     f"{sum(a for _, _, a in pairs)} of {len(pairs)}"))
    return rows


def _cells(found) -> list:
    """[(cell, its first record)] of the first measurements, in cell order."""
    firsts = {}
    for r in found:
        if r.get("role") == "cell":
            firsts.setdefault(r["cell"], r)
    return sorted(firsts.items())


def _ray_overhead(found, started) -> list:
    """Per cell run: the wait between its node finishing the previous cell (or the sweep or
    its overlap phase starting) and this one starting, plus the time its records took to
    reach the driver."""
    runs = {}
    for r in found:
        if r["status"] == "ok":
            runs[(r["cell"], r["role"])] = r
    # Overlap cells are sent once every first cell is in: that wait is the sweep's, not Ray's.
    phase_end = max((r["cell_end"] for r in runs.values() if r["role"] == "cell"), default=0)
    by_node, overhead = {}, []
    for r in sorted(runs.values(), key=lambda r: r["cell_start"]):
        previous = by_node.get(r["node"]["id"], started)
        if r["role"] == "overlap":
            previous = max(previous, phase_end)
        overhead.append(max(0.0, r["cell_start"] - previous) + (r["received"] - r["cell_end"]))
        by_node[r["node"]["id"]] = r["cell_end"]
    return overhead


def ci_time(ctx) -> list:
    wall = ctx.run(["make", "test"], "ci-time")
    tail = [line for line in (ctx.out / "ci-time.log").read_text().splitlines()
            if " passed" in line]
    return [("`make test` wall", f"{wall / 60:.1f} min"),
            ("pytest groups", "; ".join(line.strip("= ") for line in tail))]


CLAIMS = (
    Claim("overhead", "Harness overhead", True, overhead),
    Claim("fidelity", "Fidelity against an independent loop", True, fidelity_claim),
    Claim("aa", "A/A false-positive rate and MDE", True, aa),
    Claim("planted", "Planted-effect detection", True, planted),
    Claim("bisect", "Bisection of a planted commit", True, bisect_claim),
    Claim("memory", "Peak bytes against arithmetic", True, memory),
    Claim("in-situ", "In-situ profiler overhead", False, in_situ),
    Claim("asv-drift", "Relative asv history under drift", False, asv_drift),
    Claim("sweep", "Sweeps on a Ray cluster", False, sweep_claim),
    Claim("ci-time", "CI time", False, ci_time),
)
