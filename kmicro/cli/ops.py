"""`kmicro ops`: time single layers, pass by pass, on every stack."""
from __future__ import annotations

from kmicro.cli import common
from kmicro.core import cases, ops

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("ops", help="time single layers on every stack")
    common.add_run_flags(p, "ops", quick_help=common.QUICK_HELP, timeout=300.0,
                         timeout_help="seconds per case (all passes)")
    common.add_case_flags(p)
    p.add_argument("--metric", default="time", choices=("time", "gflops", "gbps", "memory"))
    p.add_argument("--resume", action="store_true", help="skip cases already finished in --json")
    p.add_argument("--list", action="store_true",
                   help="print the selected case ids (with their family and reference) and "
                        "exit, running nothing")
    return p


def run(args) -> int:
    from kmicro.core import records
    from kmicro.report import findings, tables

    if args.list:
        for case in common.cases_of(args):
            op = ops.get(case.op)
            print(f"{case.id}\t{op.family}\t{op.reference_kind}")
        return 0
    chosen, case_list = common.stacks_and_cases(args)
    console = common.make_console()
    common.warn_if_busy(console)
    passes = cases.with_passes(common.split(args.passes))
    path = common.results_path(args)
    out = records.ResultsFile(path, resume=args.resume)
    common.run_cases(chosen, case_list, passes, common.run_options(args), out.append,
                     out.finished() if args.resume else frozenset())
    ids = {c.id for c in case_list}
    names = {s.name for s in chosen}
    mine = [r for r in out.records if r["case"] in ids and r["stack"] in names]
    common.refuse_missing_gpu(mine, args.device)
    common.print_op_tables(mine, args.metric, console)
    console.print(f"results: {path} ({tables.status_counts(mine)})")
    common.print_findings(findings.op_findings(mine), console)
    return common.exit_code(mine)
