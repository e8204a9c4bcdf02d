"""`kmicro report`: the tables of result files on the terminal, or one HTML file of them."""
from __future__ import annotations

from kmicro.cli import common

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("report", help="print the tables of result files, or write them "
                                             "as HTML")
    p.add_argument("results", nargs="+")
    p.add_argument("--metric", default="time", choices=("time", "gflops", "gbps", "memory"))
    p.add_argument("-o", "--output", metavar="REPORT.html",
                   help="write one self-contained HTML report (tables, plots) instead")
    p.add_argument("--peaks", action="store_true",
                   help="measure this machine's matmul/copy peaks for the roofline "
                        "(only meaningful on the machine that ran the results)")
    return p


def run(args) -> int:
    from kmicro.core import peaks
    from kmicro.core.records import kind_of
    from kmicro.report import html  # matplotlib: only for this command
    from kmicro.report import ab_tables, fidelity_tables, findings
    from kmicro.report import models as models_table
    from kmicro.report.tables import status_counts

    records = html.load(args.results)
    console = common.make_console()
    if args.output:
        machine = peaks.measure() if args.peaks else None
        out = html.write(records, args.output, machine)
        found = findings.for_records(records, machine)
        console.print(f"report: {out} ({status_counts(records)}; {len(found)} findings at its "
                      "top)", soft_wrap=True)
        return 0
    common.print_op_tables([r for r in records if kind_of(r) == "op"], args.metric, console)
    model_records = [r for r in records if kind_of(r) == "model"]
    if model_records:
        console.print(models_table.measured_table(model_records))
        console.print(models_table.caption(model_records))
    ab_records = [r for r in records if kind_of(r) == "ab"]
    pairs = dict.fromkeys((r["stack_a"], r["stack_b"]) for r in ab_records)
    for pair in pairs:
        mine = [r for r in ab_records if (r["stack_a"], r["stack_b"]) == pair]
        console.print(ab_tables.ab_table(mine))
        console.print(ab_tables.summary(mine), soft_wrap=True)
    fidelity = [r for r in records if kind_of(r) == "fidelity"]
    for renderable in fidelity_tables.render(fidelity) if fidelity else []:
        console.print(renderable, soft_wrap=True)
    common.print_findings(findings.for_records(records), console)
    return 0
