"""`kmicro attribute`, CLI side: arguments, the run over the stacks, the tables.

The analysis (shares, remainder, rankings, ablation) is kmicro/attribution.py's; this module
only asks for it and renders it. Module-level imports stay light so `kmicro --help` is fast.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from kmicro.analysis.attribution import (DESCRIBE, REMAINDER_MEANING, TOLERATED, Request, ablation,
                                attribute, check_source, dominant_lines, measured_ok, ratio_ranking,
                                stacks_of, summary, type_ranking)
from kmicro.core.errors import NothingRan, UsageError
from kmicro.models import zoo
from kmicro.core.stacks import DEVICES, JIT


def _ms(seconds) -> str:
    return f"{seconds * 1e3:.3g} ms"


def layer_table(records):
    from rich.table import Table

    stacks = [st for st in stacks_of(records) if summary(records, st)]
    table = Table(title=f"{records[0]['model']}: fwd+bwd per layer (share of the step)",
                  title_justify="left")
    for col in ["layer"] + stacks:
        table.add_column(col, justify="left" if col == "layer" else "right")
    rows = {}
    for r in records:
        if r["pass"] == "backward":
            rows.setdefault(r["layer_key"], {"name": r["layer"]})[r["stack"]] = r
    for key, by in rows.items():
        table.add_row(f"{key} ({by['name']})", *[_layer_cell(by.get(st)) for st in stacks])
    sums = [summary(records, st) for st in stacks]
    table.add_section()
    table.add_row("sum of layers", *[f"{_ms(s['layers_s'])} {s['layers_s'] / s['step_s']:.0%}"
                                     for s in sums])
    table.add_row("measured step", *[_ms(s["step_s"]) for s in sums])
    table.add_row("remainder", *[f"{_ms(s['remainder_s'])} {s['remainder_share']:+.0%}"
                                 + (" !" if abs(s["remainder_share"]) > TOLERATED else "")
                                 for s in sums])
    return table


def _layer_cell(record) -> str:
    if record is None:
        return "—"
    if not measured_ok(record):
        return record["status"]
    return f"{'~' if record.get('noisy') else ''}{_ms(record['median_s'])} {record['share']:.0%}"


def type_table(records):
    from rich.table import Table

    ranking = type_ranking(records)
    stacks = [st for st in stacks_of(records) if summary(records, st)]
    table = Table(title="per layer type: fwd+bwd (share of step)",
                  title_justify="left")
    for col in ["layer type"] + stacks + ["slowest/fastest"]:
        table.add_column(col, justify="left" if col == "layer type" else "right")
    for t, cells, ratio in ranking:
        table.add_row(t, *[f"{_ms(cells[st][0])} {cells[st][1]:.0%}" if st in cells else "—"
                           for st in stacks], f"{ratio:.2f}x" if ratio else "—")
    return table


def ablation_table(records):
    from rich.table import Table

    rows = [(st, ablation(records, st)) for st in stacks_of(records)]
    rows = [(st, a) for st, a in rows if a]
    if not rows:
        return None
    table = Table(title=f"ablation: step without {rows[0][1]['ablate']}", title_justify="left")
    for col in ("stack", "step", "ablated step", "delta", "delta %"):
        table.add_column(col, justify="left" if col == "stack" else "right")
    for st, a in rows:
        table.add_row(st, _ms(a["step_s"]), _ms(a["ablated_s"]), _ms(a["delta_s"]),
                      f"{a['delta_pct']:+.1%}")
    return table


def print_report(records, console):
    if any(summary(records, st) for st in stacks_of(records)):
        console.print(layer_table(records))
        console.print(type_table(records))
        console.print("dominant layer types:", *dominant_lines(records), sep="\n  ")
        ratios = ", ".join(f"{t} {r:.2f}x" for t, r in ratio_ranking(records))
        if ratios:
            console.print(f"by cross-stack ratio (slowest/fastest stack): {ratios}",
                          soft_wrap=True)
        console.print(REMAINDER_MEANING + f" '!' marks |remainder| > {TOLERATED:.0%}.",
                      soft_wrap=True)
    table = ablation_table(records)
    if table:
        console.print(table)
    for r in records:
        if r["status"] != "ok":
            console.print(f"[yellow]![/yellow] {r['stack']} {r['case']} {r['pass']}: "
                          f"{r['status']}: {r['error']}", soft_wrap=True)


def add_parser(subparsers):
    p = subparsers.add_parser("attribute", help="split a model's training step into its layers "
                                                "on every stack (shares, ablation)")
    p.add_argument("--model", required=True, metavar="NAME|MODULE:FUNCTION",
                   help=f"built-in ({', '.join(zoo.MODELS)}) or a function returning an "
                        "uncompiled Keras 3 model")
    p.add_argument("--model-keras2", metavar="MODULE:FUNCTION",
                   help="the same model for Keras 2 stacks (theano, tf1)")
    p.add_argument("--stacks", help="comma list of stacks (default: installed stacks that train)")
    p.add_argument("--ablate", metavar="LAYER_TYPE",
                   help="also time the step without this shape-preserving layer type")
    p.add_argument("--steps", type=int, default=20, help="timed train steps (default 20)")
    p.add_argument("--batch", type=int,
                   help="batch size (default: the model's, 32 for user models)")
    p.add_argument("--quick", action="store_true", help="fewer samples per layer: smoke runs")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--jit", choices=JIT, default="auto",
                   help="auto = what a Keras train step does per backend; on/off forces it")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per job (default 600)")
    p.add_argument("--json", help="results file (default: results/attribute-<time>.json)")
    p.set_defaults(command="attribute", handler=run)
    return p


def request_from(args) -> Request:
    if args.steps < 1 or (args.batch is not None and args.batch < 1):
        raise UsageError("--steps and --batch must be at least 1")
    if args.model not in zoo.MODELS:
        check_source(args.model, "--model")
    if args.model_keras2:
        if args.model in zoo.MODELS:
            raise UsageError("--model-keras2 goes with a module:function --model; built-in "
                             "models are defined once for every Keras")
        check_source(args.model_keras2, "--model-keras2")
    return Request(args.model, args.model_keras2, args.ablate, args.steps, args.batch,
                   args.quick, cwd=os.getcwd())


def run(args) -> int:
    from rich.console import Console

    from kmicro.cli import common
    from kmicro.core import records as results, stacks
    from kmicro.harness import runner
    from kmicro.cli.common import exit_code, refuse_missing_gpu

    request = request_from(args)
    chosen = stacks.resolve(args.stacks) if args.stacks else \
        [s for s in stacks.resolve(None) if s.backward]  # numpy cannot train
    if not chosen:
        raise NothingRan("no stack is installed; run `make env` first")
    path = Path(args.json) if args.json else common.default_json("attribute")
    out = results.ResultsFile(path)
    options = runner.Options(device=args.device, jit=args.jit, quick=args.quick,
                             timeout_s=args.timeout, worker_module="kmicro.harness.attribute_worker")
    attribute(request, chosen, options, out, _progress)
    refuse_missing_gpu(out.records, args.device)
    print_report(out.records, Console(highlight=False, width=None if sys.stdout.isatty() else 160))
    print(f"results: {path}")
    return exit_code(out.records)


def _progress(stack, label):
    if label != DESCRIBE:  # a usage error found by the describe job stays one line on stderr
        print(f"kmicro attribute: {stack} {label} done", file=sys.stderr, flush=True)
