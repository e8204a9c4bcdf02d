"""What the subcommands share, written once: their run flags, the console, progress output,
stack and case selection, result paths and exit codes.

Every command module imports this one while `kmicro --help` builds the parser, so rich and
the harness are imported inside the functions that use them, not here.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from kmicro.core import cases, stacks
from kmicro.core.errors import NothingRan, UsageError
from kmicro.core.stacks import DEVICES, JIT

__all__ = ["STACKS_HELP", "TRAINING_STACKS_HELP", "JIT_HELP", "QUICK_HELP", "add_device_flag",
           "add_run_flags", "add_case_flags", "add_judging_flags", "add_budget_flag", "judging_settings", "make_console", "warn_if_busy", "progress_bar",
           "progress_lines",
           "print_op_tables", "print_findings", "split", "stacks_to_run", "stacks_and_cases", "cases_of",
           "run_cases", "run_options", "default_json", "results_path", "refuse_missing_gpu",
           "exit_code"]

STACKS_HELP = (f"comma list of {','.join(stacks.STACKS)} or user stacks "
               "(default: installed built-in ones)")
TRAINING_STACKS_HELP = "comma list of stacks (default: installed stacks that train)"
JIT_HELP = "auto = what a Keras train step does per backend; on/off forces it"
QUICK_HELP = "fewer samples: smoke runs, not numbers"


def add_device_flag(parser):
    parser.add_argument("--device", choices=DEVICES, default="auto")


def add_judging_flags(parser, min_effect_help):
    """--min-effect, --rounds, --processes, --same-cpu: how `kmicro ab` and `kmicro bisect`
    judge a pair."""
    parser.add_argument("--min-effect", type=float, default=0.03, help=min_effect_help)
    # Defaults as in kmicro.analysis.ab.Settings (not imported here: it loads the runner).
    parser.add_argument("--rounds", type=int, default=80,
                        help="most rounds per comparison (default 80; settled passes stop "
                             "sooner, most of them by 25, and the budget may end them first)")
    parser.add_argument("--processes", type=int,
                        help="pairs of worker processes the rounds are split over (default: "
                             "one per 5 rounds): each pair is a fresh sample "
                             "of a process's own speed")
    parser.add_argument("--same-cpu", action=argparse.BooleanOptionalAction, default=True,
                        help="time both sides of a round on one CPU (on a larger machine, "
                             "one half of the CPUs), drawn per round (default): a VM's vCPUs "
                             "drift apart, and this cancels it; --no-same-cpu lets both "
                             "sides use every CPU")


def add_budget_flag(parser, scope):
    """--budget: the seconds of `scope`'s rounds (default: analysis.ab.default_budget)."""
    parser.add_argument("--budget", type=float,
                        help=f"seconds from {scope}'s first round on, later worker pairs' "
                             "starts included, all passes together (default: 2 a pass "
                             "compared, within twice the least `kmicro ops` could take for "
                             "them here, at least 100); passes still unsure then stop")


def judging_settings(args, **more):
    """The analysis.ab.Settings of add_judging_flags' flags (plus `more`), checked."""
    from kmicro.analysis import ab

    if not 0 <= args.min_effect < 1:
        raise UsageError("expected 0 <= --min-effect < 1")
    if "min_rounds" in more and not 2 <= more["min_rounds"] <= args.rounds:
        raise UsageError("expected 2 <= --min-rounds <= --rounds")
    if args.rounds < 1:
        raise UsageError("expected --rounds >= 1")
    if more.get("budget_s") is not None and not more["budget_s"] > 0:
        raise UsageError("expected --budget > 0 (seconds)")
    processes = args.processes
    if processes is None:
        processes = ab.pairs_for(args.rounds)
    if not 1 <= processes <= args.rounds:
        raise UsageError("expected 1 <= --processes <= --rounds")
    return ab.Settings(min_effect=args.min_effect, max_rounds=args.rounds,
                       processes=processes, same_cpu=args.same_cpu, **more)


def add_run_flags(parser, command, stacks_help=STACKS_HELP, jit_help=JIT_HELP, quick_help=None,
                  timeout=None, timeout_help=None):
    """--stacks, --device, --jit, --quick, --timeout and --json, in that order. A command
    without --jit, --quick or --timeout passes None as that flag's help."""
    parser.add_argument("--stacks", help=stacks_help)
    add_device_flag(parser)
    if jit_help:
        parser.add_argument("--jit", choices=JIT, default="auto", help=jit_help)
    if quick_help:
        parser.add_argument("--quick", action="store_true", help=quick_help)
    if timeout_help:
        parser.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    parser.add_argument("--json", help=f"results file (default: results/{command}-<time>.json)")


def make_console():
    from rich.console import Console

    # Wide enough that tables in logs (not a terminal) don't wrap; a terminal sets its own width.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def warn_if_busy(console):
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > 0.5 * cores:
        console.print(f"[yellow]! machine busy: load average {load:.1f} on {cores} cores; "
                      "timings will be noisy (multi-threaded kernels wait on descheduled "
                      "threads)[/yellow]")


@contextmanager
def progress_bar(total):
    """Yields the runner's `progress(stack, label)` callback: a bar on an interactive
    terminal, gone when the run ends; None (no output) when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("starting", total=total)
        yield lambda stack, label: bar.update(task, advance=1,
                                              description=f"{stack} {label[:40]}")


def run_cases(chosen, case_list, passes, options, sink, finished=frozenset()):
    """runner.run, with a progress bar while stderr is an interactive terminal."""
    from kmicro.harness import runner

    with progress_bar(len(chosen) * len(case_list)) as progress:
        runner.run(chosen, case_list, passes, options, sink, finished, progress=progress)


def progress_lines(command, quiet=()):
    """The runner's `progress(stack, label)` callback for long jobs: one line on stderr per
    job done, in logs as on a terminal; labels in `quiet` print nothing."""
    def progress(stack, label):
        if label not in quiet:
            print(f"kmicro {command}: {stack} {label} done", file=sys.stderr, flush=True)
    return progress


def print_op_tables(records, metric, console):
    """The tables of op records (one per op, layouts side by side), then their problems."""
    from kmicro.report import tables

    timed = [r for r in records if r["status"] == "ok"]
    if metric == "memory" and timed and not any("memory_method" in r for r in timed):
        raise UsageError("--metric memory: these records have no memory figure (written before "
                         "kmicro measured memory); run kmicro ops again for it")
    for table in tables.ops_tables(records, metric):
        console.print(table)
    layouts = tables.layout_table(records)
    if layouts:
        console.print(layouts)
    for line in tables.problems(records):
        console.print(f"[yellow]![/yellow] {line}", soft_wrap=True)


def print_findings(found, console):
    """The findings (kmicro/report/findings.py), the last thing a command prints."""
    from rich.markup import escape

    if found:
        console.print("[bold]Findings[/bold]")
    for f in found:
        console.print(("[red]![/red] " if f.problem else "- ") + escape(f.text), soft_wrap=True)


def split(text) -> list:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def stacks_to_run(names, train=False) -> list:
    """The stacks named, else the installed default ones; `train`: only those that can train
    (numpy cannot; it still runs, as unsupported, when named)."""
    if names:
        chosen = stacks.resolve(names)
        missing = [s for s in chosen if not s.installed]
        if missing:  # named on purpose: say how to get it, before anything runs
            raise UsageError(f"stack {missing[0].name} is not installed; "
                             f"{missing[0].install_hint}")
        return chosen
    chosen = [s for s in stacks.resolve(None) if s.backward or not train]
    if not chosen:
        raise NothingRan("no stack is installed; run `make env` first")
    return chosen


def add_case_flags(parser, layer_options=True):
    """--catalog, --ops, --case, --layer, --passes, --shapes, --set and --data-format: which
    layer cases and passes (`layer_options` False: without --set, which `kmicro sweep` has
    for package versions)."""
    parser.add_argument("--catalog", default="seed", choices=cases.CATALOGS,
                        help="seed: the seed models' layers (default); keras: one case per "
                             "class of Keras' layer benchmark; all: both")
    parser.add_argument("--ops", help="comma list of ops (default: the catalog's); "
                                      "`kmicro ops --list` prints them with their case ids")
    parser.add_argument("--case", action="append", metavar="ID",
                        help="one case by its id, in the catalog or not (repeatable), e.g. "
                             "'conv2d(filters=8,kernel_size=1,padding=same)@32x16x16x8/cl'")
    parser.add_argument("--layer", metavar="MODULE:CLASS(KEY=VALUE,...)",
                        help="your own Keras layer class with its arguments, at --shapes, "
                             "e.g. 'mypkg.layers:MyLayer(units=64)'")
    parser.add_argument("--passes", default=",".join(cases.PASSES),
                        help=f"comma list of {','.join(cases.PASSES)}")
    parser.add_argument("--shapes",
                        help="input shapes, batch first, separated by ';' (N,F to N,D,H,W,C; "
                             "each replaces the shapes of the cases of its rank)")
    if layer_options:
        parser.add_argument("--set", metavar="KEY=VALUE,...",
                            help="override layer options, e.g. filters=64,kernel_size=5,"
                                 "pool_size=3")
    parser.add_argument("--data-format", default="auto", choices=cases.LAYOUTS,
                        help="auto: channels_last, plus channels_first twins of the BN cases")


def stacks_and_cases(args) -> tuple:
    """The stacks of --stacks and the layer cases of --ops, and of --shapes, --set and
    --data-format where the command has them."""
    return stacks_to_run(args.stacks), cases_of(args)


def cases_of(args) -> list:
    """The layer cases of --catalog and --ops, or of --case and --layer, and of --shapes,
    --set and --data-format where the command has them."""
    shapes = cases.parse_shapes(args.shapes) if getattr(args, "shapes", None) else None
    named, layer = getattr(args, "case", None), getattr(args, "layer", None)
    if named or layer:
        return _named_cases(args, named or [], layer, shapes)
    overrides = cases.parse_overrides(args.set) if getattr(args, "set", None) else None
    case_list = cases.select(split(args.ops), getattr(args, "data_format", "auto"),
                             shapes, overrides, getattr(args, "catalog", "seed"))
    if not case_list:
        raise UsageError("no case matches these --ops/--shapes (each shape replaces those of "
                         "the cases of its rank: N,H,W,C for 2-D layers, N,F for dense)")
    return case_list


def _named_cases(args, ids, layer, shapes) -> list:
    """--case ids and --layer (at every --shapes shape): exactly the cases named."""
    clashing = [flag for flag, given in (
        ("--ops", args.ops), ("--set", getattr(args, "set", None)),
        ("--catalog", args.catalog != "seed"),
        ("--data-format", getattr(args, "data_format", "auto") != "auto")) if given]
    if clashing or (shapes and not layer):
        raise UsageError(f"--case names whole cases: drop {(clashing or ['--shapes'])[0]} "
                         "(or use --ops instead of --case)")
    found = [cases.parse_id(i) for i in ids]
    if layer:
        if not shapes:
            raise UsageError("--layer needs --shapes: the input shape(s) to call it with, "
                             "e.g. --shapes 32,128,64")
        found += [cases.user_layer_case(layer, shape) for shape in shapes]
    return list(dict.fromkeys(found))


def run_options(args, **fields):
    """runner.Options from the run flags the command has (the others keep runner's defaults);
    `fields` add to them or override them."""
    from kmicro.harness import runner

    given = {"device": args.device, "jit": getattr(args, "jit", "auto"),
             "quick": getattr(args, "quick", False)}
    if getattr(args, "timeout", None) is not None:
        given["timeout_s"] = args.timeout
    return runner.Options(**dict(given, **fields))


def default_json(kind: str) -> Path:
    return Path("results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}.json"


def results_path(args) -> Path:
    """--json, else a new file named after the command and the time."""
    return Path(args.json) if args.json else default_json(args.command)


def refuse_missing_gpu(records, device):
    """--device gpu where no stack has one is bad usage: one line, records kept on disk."""
    if device == "gpu" and records and all("DeviceUnavailable" in (r["error"] or "")
                                           for r in records):
        raise UsageError("--device gpu, but none of the stacks sees a GPU "
                         f"({', '.join(sorted({r['stack'] for r in records}))}); "
                         "use --device cpu or auto")


def exit_code(records) -> int:
    """0 when anything ran, else NothingRan (exit 1)."""
    if any(r["status"] == "ok" for r in records):
        return 0
    raise NothingRan("nothing ran successfully (see the errors above)")
