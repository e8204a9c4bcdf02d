"""`kmicro calibrate`: the harness's overhead, kmicro's median against a bare synchronised
loop over the same compiled function."""
from __future__ import annotations

from kmicro.cli import common

__all__ = ["add_parser", "run"]

PASSES = ("forward", "backward")
NUMBERS = ("kmicro", "bare loop", "overhead")  # the right-aligned columns


def add_parser(subparsers):
    p = subparsers.add_parser("calibrate", help="harness overhead: kmicro vs a bare "
                                                "synchronised loop")
    common.add_run_flags(p, "calibrate", quick_help=common.QUICK_HELP)
    p.add_argument("--ops", default="batchnorm,dense", help="comma list of ops to calibrate")
    p.add_argument("--rounds", type=int, default=5)
    return p


def run(args) -> int:
    from kmicro.core import records

    chosen, case_list = common.stacks_and_cases(args)
    console = common.make_console()
    common.warn_if_busy(console)
    path = common.results_path(args)
    out = records.ResultsFile(path)
    common.run_cases(chosen, case_list, PASSES,
                     common.run_options(args, calibrate_rounds=args.rounds), out.append)
    console.print(overhead_table(out.records, args.rounds))
    console.print(f"results: {path}")
    return 0


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
