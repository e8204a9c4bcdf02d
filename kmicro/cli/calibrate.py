"""`kmicro calibrate`: the harness's overhead, kmicro's median against a bare synchronised
loop over the same compiled function; with --independent, kmicro's times against an
independent loop that builds the layer with plain Keras and times it with the framework's
own timer (kmicro/analysis/fidelity.py)."""
from __future__ import annotations

import argparse

from kmicro.cli import common
from kmicro.core import cases
from kmicro.core.errors import UsageError

__all__ = ["add_parser", "run"]

PASSES = ("forward", "backward")
NUMBERS = ("kmicro", "bare loop", "overhead")  # the right-aligned columns
DEFAULT_OPS = {False: "batchnorm,dense", True: "batchnorm,dense,conv2d"}


def add_parser(subparsers):
    p = subparsers.add_parser("calibrate", help="harness overhead (kmicro vs a bare loop) or, "
                                                "with --independent, fidelity (kmicro vs an "
                                                "independent loop)")
    common.add_run_flags(p, "calibrate", quick_help=common.QUICK_HELP)
    common.add_case_flags(p)
    p.set_defaults(passes=",".join(PASSES))
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds per case (default 5; with --independent at least this many, "
                        "default 6: the fewest whose 95 %% interval of a median is covered)")
    p.add_argument("--max-rounds", type=int, default=None,
                   help="--independent: more rounds, up to this many (default 18), for a pass "
                        "until the 95 %% interval of its median ratio lies inside the target")
    p.add_argument("--independent", action="store_true",
                   help="kmicro's measurement against a separate process timing the layer "
                        "with plain Keras and the framework's own timer, in turns")
    p.add_argument("--seed", type=int, default=0,
                   help="--independent: the draw of each round's CPU")
    p.add_argument("--same-cpu", action=argparse.BooleanOptionalAction, default=True,
                   help="--independent: both processes of a round on one CPU, drawn per "
                        "round with --seed, each seeing one CPU from its start (default; "
                        "--no-same-cpu lets them use every CPU, where one side's idle "
                        "helper threads spin while the other is timed)")
    return p


def run(args) -> int:
    from kmicro.core import records

    if args.rounds is None:
        args.rounds = 6 if args.independent else 5
    if args.rounds < 1:
        raise UsageError("expected --rounds >= 1")
    if args.max_rounds is None:
        args.max_rounds = max(args.rounds, 18)
    if args.max_rounds < args.rounds and args.independent:
        raise UsageError(f"expected --max-rounds >= --rounds ({args.rounds})")
    if args.independent and args.quick:
        raise UsageError("--quick measures less than the independent loop does; "
                         "use --rounds to make --independent shorter")
    args.ops = args.ops or DEFAULT_OPS[args.independent]  # the seed cases' layers
    chosen, case_list = common.stacks_and_cases(args)
    passes = cases.with_passes(common.split(args.passes))
    if args.independent:
        chosen = _keras3_only(chosen, named=bool(args.stacks))
    console = common.make_console()
    common.warn_if_busy(console)
    path = common.results_path(args)
    out = records.ResultsFile(path)
    if args.independent:
        _independent(args, chosen, case_list, passes, out, console)
    else:
        common.run_cases(chosen, case_list, passes,
                         common.run_options(args, calibrate_rounds=args.rounds), out.append)
        console.print(overhead_table(out.records, args.rounds))
    console.print(f"results: {path}")
    return common.exit_code(out.records)


def _keras3_only(chosen, named) -> list:
    """The independent loop builds layers with Keras 3's API: Keras 2 stacks are refused when
    named, left out by default."""
    others = [s for s in chosen if s.family != "keras3"]
    if named and others:
        raise UsageError(f"--independent times Keras 3 stacks only; {others[0].name} is a "
                         f"{others[0].family} stack")
    return [s for s in chosen if s.family == "keras3"]


def _independent(args, chosen, case_list, passes, out, console):
    from kmicro.analysis import fidelity
    from kmicro.report import fidelity_tables

    with common.progress_bar(len(chosen) * len(case_list) * args.rounds) as progress:
        fidelity.run(chosen, case_list, passes, args.rounds, common.run_options(args),
                     out.append, progress, seed=args.seed, max_rounds=args.max_rounds,
                     same_cpu=args.same_cpu)
    for renderable in fidelity_tables.render(out.records):
        console.print(renderable, soft_wrap=True)


def overhead_table(records, rounds):
    from rich.table import Table

    from kmicro.report.tables import format_time

    table = Table(title="harness overhead: kmicro median vs bare synchronised loop "
                        f"(medians of {rounds} interleaved rounds)")
    for col in ("stack", "case", "pass") + NUMBERS:
        table.add_column(col, justify="right" if col in NUMBERS else "left")
    for r in records:
        if r["status"] == "ok":
            over = r["median_s"] / r["bare_median_s"] - 1
            table.add_row(r["stack"], r["case"], r["pass"], format_time(r["median_s"]),
                          format_time(r["bare_median_s"]), f"{over:+.1%}")
        else:
            table.add_row(r["stack"], r["case"], r["pass"], r["status"], "", r["error"] or "")
    return table
