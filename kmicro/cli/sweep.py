"""`kmicro sweep`: a history of ratios — package versions or commits x base stacks, each cell
an interleaved A/B of the variant against its base, here or on a Ray cluster.

    kmicro sweep --set keras==3.13.0,3.14.0,3.15.1 --from jax,torch --ops conv2d,batchnorm
    kmicro sweep --repo ~/src/keras --package keras --revs v3.14.0..v3.15.0 --every 5 \\
                 --from jax --cluster ray://head:10001
"""
from __future__ import annotations

import functools
import sys
import time

from kmicro.cli import common
from kmicro.core import cases
from kmicro.core.errors import UsageError

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("sweep", help="versions or commits x stacks, each cell an A/B "
                                            "against its base stack, here or on a Ray cluster")
    what = p.add_argument_group("the variants (one of)")
    what.add_argument("--set", dest="versions", metavar="NAME==V1,V2,...",
                      help="versions of one package, e.g. keras==3.13.0,3.14.0,3.15.1")
    what.add_argument("--repo", metavar="PATH", help="a git checkout of --package, for --revs")
    what.add_argument("--package", help="the package --repo builds (with --revs)")
    what.add_argument("--revs", metavar="A..B", help="the commits after A up to B of --repo")
    what.add_argument("--every", type=int, default=1, metavar="N",
                      help="with --revs: every Nth commit (B always) (default 1)")
    p.add_argument("--from", dest="bases", required=True, metavar="STACKS",
                   help="comma list of base stacks: each variant is built from a base's pins "
                        "and compared with it")
    common.add_case_flags(p, layer_options=False)
    common.add_device_flag(p)
    common.add_judging_flags(p, "smallest change worth reporting, as a fraction (default 0.03)")
    common.add_budget_flag(p, "a cell")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per worker task (compiling a case's passes, one burst)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run the cells on a Ray cluster: auto, HOST:PORT or ray://HOST:PORT "
                        "(default: $RAY_ADDRESS, else this machine, one cell after another)")
    p.add_argument("--overlap", type=int, metavar="N",
                   help="cells measured again on a second node to check that nodes agree "
                        "(default: 2 with two or more nodes, else 0)")
    p.add_argument("--resume", action="store_true",
                   help="skip the cells already finished in --json")
    p.add_argument("--json", help="results file (default: results/sweep-<time>.json)")
    p.add_argument("--asv", metavar="DIR",
                   help="also write the series as asv results in DIR: `asv publish --config "
                        "DIR/asv.conf.json` draws them")
    return p


def run(args) -> int:
    from kmicro.analysis import sweep
    from kmicro.core import records
    from kmicro.harness import executors, ray_cluster
    from kmicro.report import sweep_asv, sweep_tables

    variants = _variants(args, sweep)
    if args.asv:
        sweep_asv.check_dir(args.asv)
    if args.asv and args.repo:
        sweep_asv.check_repo(args.repo, variants[-1].spec.partition("@")[2])
    bases = [s.name for s in common.stacks_to_run(common.split(args.bases))]
    case_list = common.cases_of(args)
    passes = cases.with_passes(common.split(args.passes))
    settings = common.judging_settings(args, budget_s=args.budget)
    if args.overlap is not None and args.overlap < 0:
        raise UsageError("expected --overlap N >= 0")
    if args.resume and not args.json:
        raise UsageError("--resume needs --json FILE: the results file to go on with")
    address = ray_cluster.address_from(args.cluster)
    executor = ray_cluster.Ray(address) if address else executors.Local()
    console = common.make_console()
    path = common.results_path(args)
    try:
        out = records.ResultsFile(path, resume=args.resume)
        cells = sweep.plan(bases, variants)
        kept = _finished_cells(out.records)
        todo = [c for c in cells if (c.base, c.variant.label) not in kept]
        say = _say
        if kept:
            say(f"{len(cells) - len(todo)} of {len(cells)} cells already in {path}")
        measure = functools.partial(sweep.measure, case_list=case_list,
                                    passes=passes, options=common.run_options(
                                        args, timeout_s=args.timeout), settings=settings)
        keep = _keeper(out, case_list, passes, say, sweep)
        nodes = executor.nodes()
        say(f"{len(todo)} cells on {executor.kind} ({len(nodes)} node"
            f"{'s' if len(nodes) != 1 else ''})")
        executor.map(measure, todo, keep)
        overlap = args.overlap if args.overlap is not None else (2 if len(nodes) >= 2 else 0)
        again = sweep.overlap_cells(_ran(out.records, cells), overlap, executor.nodes())
        if again:
            say(f"{len(again)} cells again on another node, to check that nodes agree")
            executor.map(measure, again, keep)
    finally:
        executor.close()
    agreed = sweep.agreement(out.records)
    for r in out.records:
        r["node_flagged"] = r.get("node", {}).get("id") in agreed["named"]
    out.rewrite()
    for table in sweep_tables.ratio_tables(out.records):
        console.print(table)
    console.print(sweep_tables.cell_table(out.records))
    for line in sweep_tables.agreement_lines(agreed):
        console.print(line, soft_wrap=True)
    console.print(f"results: {path}")
    if args.asv:
        config = sweep_asv.write(args.asv, out.records, variants, args.repo)
        console.print(f"asv results: {config.parent} (`asv publish --config {config}`, then "
                      f"`asv preview --config {config}`)", soft_wrap=True)
    return common.exit_code(out.records)


def _variants(args, sweep) -> list:
    by_revs = [f for f, given in (("--repo", args.repo), ("--revs", args.revs),
                                  ("--package", args.package)) if given]
    if args.versions and by_revs:
        raise UsageError(f"--set gives versions, {by_revs[0]} commits: choose one")
    if args.versions:
        return sweep.versions(args.versions)
    if len(by_revs) != 3:
        raise UsageError("which variants? --set NAME==V1,V2,... or --repo PATH --package NAME "
                         "--revs A..B")
    return sweep.revisions(args.repo, args.package, args.revs, args.every)


def _finished_cells(found) -> set:
    """(base, variant) of the cells whose every record is in with a final status."""
    from kmicro.core.records import FINAL

    cells = {}
    for r in found:
        if r.get("role") == "cell":
            cells.setdefault((r["base"], r["variant"]), []).append(r["status"] in FINAL)
    return {cell for cell, final in cells.items() if all(final)}


def _ran(found, cells) -> list:
    """[(cell, node id)] of the cells measured without an error."""
    by_label = {(c.base, c.variant.label): c for c in cells}
    seen = {}
    for r in found:
        if r.get("role") == "cell" and r["status"] == "ok":
            seen[(r["base"], r["variant"])] = r["node"]["id"]
    return [(by_label[k], node) for k, node in seen.items() if k in by_label]


def _keeper(out, case_list, passes, say, sweep):
    """on_done of the executor: a cell's records into the results file as soon as it is in
    (an exception: error records for each of its passes), and a progress line."""
    def keep(cell, result):
        received = time.time()  # with cell_end: how long a result takes to come back
        if isinstance(result, BaseException):
            error = f"{type(result).__name__}: {str(result).splitlines()[0] if str(result) else ''}"
            result = sweep.failed_cell(cell, [c.id for c in case_list], passes, error)
        for record in result:
            record["received"] = received
            out.append(record)
        ok = sum(r["status"] == "ok" for r in result)
        first = result[0] if result else {}
        where = first.get("node", {}).get("id", "?")[:12]
        wall = first.get("cell_end", 0) - first.get("cell_start", 0)
        say(f"cell {cell.number} ({cell.role}) {cell.label}: {ok}/{len(result)} passes "
            f"compared on node {where} in {wall:.0f} s"
            + ("" if ok else f" — {first.get('error', '')[:120]}"))
    return keep


def _say(text):
    print(f"kmicro sweep: {text}", file=sys.stderr, flush=True)
