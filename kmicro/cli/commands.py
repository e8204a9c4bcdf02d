"""The subcommands behind `kmicro`. Each takes parsed args and returns an exit code."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kmicro.cli import attribute as attribute_command
from kmicro.core import cases, peaks, records as results, stacks
from kmicro.analysis import compare
from kmicro.report import tables as report
from kmicro.harness import runner
from kmicro.cli.common import default_json, exit_code, refuse_missing_gpu, split
from kmicro.core.errors import NothingRan, UsageError
from kmicro.cli import models as models_command

# Wide enough that tables in logs (not a terminal) don't wrap; a terminal sets its own width.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def _options(args, **extra) -> runner.Options:
    return runner.Options(device=args.device, jit=args.jit, quick=args.quick,
                          timeout_s=getattr(args, "timeout", 300.0), **extra)


def _selected(args):
    chosen = stacks.resolve(args.stacks)
    if not chosen:
        raise NothingRan("no stack is installed; run `make env` first")
    shapes = cases.parse_shapes(args.shapes) if getattr(args, "shapes", None) else None
    overrides = cases.parse_overrides(args.set) if getattr(args, "set", None) else None
    case_list = cases.select(split(args.ops), getattr(args, "data_format", "auto"),
                             shapes, overrides)
    if not case_list:
        raise UsageError("no case matches these --ops/--shapes (N,H,W,C for spatial layers, "
                         "N,F for dense)")
    return chosen, case_list


def _run(chosen, case_list, passes, options, sink, finished=frozenset()):
    """runner.run with a progress bar on an interactive terminal."""
    if not sys.stderr.isatty():
        return runner.run(chosen, case_list, passes, options, sink, finished)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("starting", total=len(chosen) * len(case_list))
        runner.run(chosen, case_list, passes, options, sink, finished,
                   progress=lambda stack, label: bar.update(
                       task, advance=1, description=f"{stack} {label[:40]}"))


def _warn_if_busy():
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > 0.5 * cores:
        console.print(f"[yellow]! machine busy: load average {load:.1f} on {cores} cores; "
                      "timings will be noisy (multi-threaded kernels wait on descheduled "
                      "threads)[/yellow]")


def ops(args) -> int:
    chosen, case_list = _selected(args)
    _warn_if_busy()
    passes = cases.with_passes(split(args.passes))
    path = Path(args.json) if args.json else default_json("ops")
    out = results.ResultsFile(path, resume=args.resume)
    _run(chosen, case_list, passes, _options(args), out.append,
         out.finished() if args.resume else frozenset())
    ids = {c.id for c in case_list}
    names = {s.name for s in chosen}
    mine = [r for r in out.records if r["case"] in ids and r["stack"] in names]
    refuse_missing_gpu(mine, args.device)
    _print_tables(mine, args.metric)
    console.print(f"results: {path} ({report.status_counts(mine)})")
    return exit_code(mine)


def _print_tables(records, metric):
    for table in report.ops_tables(records, metric):
        console.print(table)
    layouts = report.layout_table(records)
    if layouts:
        console.print(layouts)
    for line in report.problems(records):
        console.print(f"[yellow]![/yellow] {line}", soft_wrap=True)


def stacks_(args) -> int:
    table = Table(title="kmicro stacks")
    for col in ("stack", "installed", "python", "backend", "versions", "device"):
        table.add_column(col)
    options = runner.Options(device=args.device)
    for s in stacks.STACKS.values():
        info = runner.probe(s, options) if s.installed else {}
        versions = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
        device = info.get("error") or f"{info.get('device', '')} ({info.get('device_name', '')})"
        table.add_row(s.name, "yes" if s.installed else f"no (`make env`)",
                      info.get("python", s.python), s.backend, versions,
                      device if s.installed else "")
    console.print(table)
    if not args.no_peaks:
        p = peaks.measure()
        console.print(f"machine peaks (NumPy, host CPU): matmul {p['matmul_gflops']:.1f} GFLOP/s "
                      f"(float32), copy {p['copy_gbps']:.1f} GB/s")
    return 0


def calibrate(args) -> int:
    chosen, case_list = _selected(args)
    _warn_if_busy()
    path = Path(args.json) if args.json else default_json("calibrate")
    out = results.ResultsFile(path)
    _run(chosen, case_list, ("forward", "backward"),
         _options(args, calibrate_rounds=args.rounds), out.append)
    table = Table(title="harness overhead: kmicro median vs bare synchronised loop "
                        f"(medians of {args.rounds} interleaved rounds)")
    for col in ("stack", "case", "pass", "kmicro", "bare loop", "overhead"):
        table.add_column(col, justify="right" if col in ("kmicro", "bare loop", "overhead") else "left")
    for r in out.records:
        if r["status"] == "ok":
            over = r["median_s"] / r["bare_median_s"] - 1
            table.add_row(r["stack"], r["case"], r["pass"], report.format_time(r["median_s"]),
                          report.format_time(r["bare_median_s"]), f"{over:+.1%}")
        else:
            table.add_row(r["stack"], r["case"], r["pass"], r["status"], "", r["error"] or "")
    console.print(table)
    console.print(f"results: {path}")
    return 0


def report_(args) -> int:
    from kmicro.report import html as html_report  # matplotlib: only for this command

    records = html_report.load(args.results)
    if args.output:
        out = html_report.write(records, args.output, peaks.measure() if args.peaks else None)
        console.print(f"report: {out} ({report.status_counts(records)})")
        return 0
    _print_tables([r for r in records if html_report.kind(r) == "op"], args.metric)
    model_records = [r for r in records if html_report.kind(r) == "model"]
    if model_records:
        from kmicro.report import models as models_table

        console.print(models_table.measured_table(model_records))
        console.print(models_table.caption(model_records))
    return 0



def compare_(args) -> int:
    pairs = compare.changes(results.load(args.old), results.load(args.new), args.min_time)
    if not pairs:
        raise NothingRan("no (stack, case, pass) was measured ok in both files")
    table = Table(title=f"{args.new} vs {args.old}: median ratio new/old")
    for col in ("stack", "case", "pass", "old", "new", "new/old"):
        table.add_column(col, justify="right" if col in ("old", "new", "new/old") else "left")
    for c in sorted(pairs, key=lambda c: -abs(c.ratio - 1)):
        style = "" if abs(c.ratio - 1) <= args.tolerance else ("red" if c.ratio > 1 else "green")
        table.add_row(*c.key, report.format_time(c.old_s), report.format_time(c.new_s),
                      f"[{style}]{c.ratio:.3f}[/{style}]" if style else f"{c.ratio:.3f}")
    console.print(table)
    share = compare.agreement(pairs, args.tolerance)
    console.print(f"{share:.0%} of {len(pairs)} pairs with old median >= "
                  f"{report.format_time(args.min_time)} agree within {args.tolerance:.0%}")
    return 0


def diagnose_(args) -> int:
    from kmicro.analysis import diagnose

    names = args.stacks or [n for n, s in stacks.STACKS.items()
                            if s.family == "keras2" and s.installed]
    chosen = stacks.resolve(names)
    if not chosen:
        raise NothingRan("no Keras 2 stack is installed; run `make env` or `make legacy`")
    parts = ("bn", "model") if args.quick else diagnose.PARTS
    records = diagnose.run(chosen, runner.Options(device=args.device, quick=args.quick), parts)
    path = Path(args.json) if args.json else default_json("diagnose")
    out = results.ResultsFile(path)
    for r in records:
        out.append(r)
    console.print(diagnose.table(records))
    console.print(f"results: {path} ({report.status_counts(records)})")
    if any(r["status"] == "ok" for r in records):
        return 0
    raise NothingRan("no stack could be diagnosed (see the errors above)")


HANDLERS = {"stacks": stacks_, "ops": ops, "calibrate": calibrate, "report": report_,
            "compare": compare_, "diagnose": diagnose_, "models": models_command.run,
            "attribute": attribute_command.run}
