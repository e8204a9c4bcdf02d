"""`kmicro ab STACK_A STACK_B`: is B slower than A? Interleaved rounds, paired ratios, a verdict.

The same stack twice is an A/A run: how often this machine's noise alone is called a change.
"""
from __future__ import annotations

from kmicro.cli import common
from kmicro.core import cases

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("ab", help="compare two stacks in interleaved rounds: ratio B/A, "
                                         "95%% CI, slower/faster/same")
    p.add_argument("stack_a", metavar="STACK_A", help="the reference (e.g. the older version)")
    p.add_argument("stack_b", metavar="STACK_B", help="the candidate; ratios are B/A")
    common.add_case_flags(p)
    common.add_device_flag(p)
    p.add_argument("--jit", choices=common.JIT, default="auto", help=common.JIT_HELP)
    common.add_judging_flags(p, "smallest change worth reporting, as a fraction (default 0.03)")
    p.add_argument("--min-rounds", type=int, default=6,
                   help="rounds before a pass may stop early (default 6)")
    common.add_budget_flag(p, "the run")
    p.add_argument("--seed", type=int, default=0, help="order of the rounds and sides")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per worker task (compiling a case's passes, one burst)")
    p.add_argument("--json", help="results file (default: results/ab-<time>.json)")
    return p


def run(args) -> int:
    from kmicro.analysis import ab
    from kmicro.core import records
    from kmicro.report import ab_tables, findings, tables

    stack_a, stack_b = common.stacks_to_run([args.stack_a, args.stack_b])
    settings = common.judging_settings(args, min_rounds=args.min_rounds, budget_s=args.budget,
                                       seed=args.seed)
    case_list = common.cases_of(args)
    passes = cases.with_passes(common.split(args.passes))
    console = common.make_console()
    common.warn_if_busy(console)
    path = common.results_path(args)
    out = records.ResultsFile(path)
    with common.progress_bar(len(case_list) + settings.max_rounds) as progress:
        ab.run(stack_a, stack_b, case_list, passes,
               common.run_options(args, timeout_s=args.timeout), settings, out.append, progress)
    common.refuse_missing_gpu(out.records, args.device)
    console.print(ab_tables.ab_table(out.records))
    console.print(ab_tables.summary(out.records), soft_wrap=True)
    for line in ab_tables.power_lines(out.records):
        console.print(line, soft_wrap=True)
    hint = ab_tables.noise_hint(out.records)
    if hint:
        console.print(hint, soft_wrap=True)
    for line in tables.problems(out.records):
        console.print(f"[yellow]![/yellow] {line}", soft_wrap=True)
    console.print(f"results: {path} ({tables.status_counts(out.records)})")
    common.print_findings(findings.ab_findings(out.records), console)
    return common.exit_code(out.records)
