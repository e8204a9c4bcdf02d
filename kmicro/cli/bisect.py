"""`kmicro bisect`: which commit of a package made one layer pass slower (or faster, when the
bad end is the faster one) — or "no change".

    kmicro bisect --repo ~/src/keras --good v3.14.0 --bad v3.15.0 --from jax --package keras \\
                  --case 'batchnorm()@32x32x32x16/cl' --pass forward
"""
from __future__ import annotations

import sys

from kmicro.cli import common
from kmicro.core import cases

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("bisect", help="find the commit of a package that slowed a pass, "
                                             "or sped it up (each step an interleaved A/B "
                                             "against the good end)")
    p.add_argument("--repo", required=True, metavar="PATH", help="git checkout of the package")
    p.add_argument("--good", required=True, metavar="REV")
    p.add_argument("--bad", required=True, metavar="REV")
    p.add_argument("--from", dest="base", required=True, metavar="STACK",
                   help="the stack whose pins and backend every tested commit gets")
    p.add_argument("--package", required=True, help="the package the repository builds")
    p.add_argument("--case", required=True, metavar="ID",
                   help="a case id, in the catalog or not, e.g. 'batchnorm()@32x32x32x16/cl' "
                        "(`kmicro ops --list` prints the catalog's)")
    p.add_argument("--pass", dest="pass_name", default="forward", choices=cases.PASSES)
    common.add_judging_flags(p, "smallest slowdown worth finding, as a fraction (default 0.03)")
    p.add_argument("--extend", type=int, default=2, metavar="N",
                   help="more kmicro ab runs (fresh worker pairs) for a commit whose call is "
                        "not settled (default 2)")
    common.add_device_flag(p)
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="judge k commits at once on a Ray cluster of k nodes (k-ary search): "
                        "auto, HOST:PORT or ray://HOST:PORT (default: $RAY_ADDRESS, else this "
                        "machine, one commit after another); --repo must be at the same path "
                        "on every node")
    p.add_argument("--json", help="results file (default: results/bisect-<time>.json)")
    return p


def run(args) -> int:
    from kmicro.analysis import bisect
    from kmicro.core import records
    from kmicro.core.errors import UsageError
    from kmicro.harness import executors, ray_cluster
    from kmicro.report import ab_tables

    case = cases.parse_id(args.case)
    settings = common.judging_settings(args)
    if not 0 <= args.extend <= 10:
        raise UsageError("expected 0 <= --extend <= 10")
    path, kept = common.results_path(args), []

    def keep(record):  # the file appears with the first judged commit, not on bad input
        if not kept:
            kept.append(records.ResultsFile(path))
        kept[0].append(record)

    address = ray_cluster.address_from(args.cluster)
    executor = ray_cluster.Ray(address) if address else executors.Local()
    try:
        result = bisect.run(args.repo, args.good, args.bad, args.base, args.package,
                            case, args.pass_name,
                            common.run_options(args, timeout_s=300.0), settings,
                            lambda text: print(f"kmicro bisect: {text}", file=sys.stderr,
                                               flush=True),
                            keep, extend=args.extend, executor=executor)
    finally:
        executor.close()
    console = common.make_console()
    console.print(_table(result))
    if result.ends_differ:
        first = result.first_changed
        slow = next(r for c, r in result.tested if c == first)
        kind = "slow" if result.direction == "slower" else "fast"
        console.print(f"first {kind} commit: {first.sha[:10]} {first.subject} (ratio "
                      f"{slow['ratio']:.3f}, 95% CI {slow['ci_low']:.3f}-{slow['ci_high']:.3f} "
                      f"against {result.good.sha[:10]})", soft_wrap=True)
        guessed = [c.sha[:10] for c, r in result.tested if not r["settled"]]
        if guessed:
            console.print(f"not settled after every extra run, called by the side of the "
                          f"midpoint their estimate lies on: {', '.join(guessed)}",
                          soft_wrap=True)
    else:
        end = result.tested[0][1]
        console.print(f"no significant change between {result.good.sha[:10]} and "
                      f"{result.bad.sha[:10]}: ratio {end['ratio']:.3f}, 95% CI "
                      f"{end['ci_low']:.3f}-{end['ci_high']:.3f}, detectable effect "
                      f"{end['mde']:.1%}, minimum effect {args.min_effect:.0%}; no commit named",
                      soft_wrap=True)
        if not end["settled"]:
            console.print(f"  (after {end['rounds']} rounds the interval still reaches "
                          f"{end['ci_high'] - 1:+.1%}: a slowdown that small is not ruled out)",
                          soft_wrap=True)
    hint = ab_tables.noise_hint([r for _, r in result.tested])
    if hint:
        console.print(hint, soft_wrap=True)
    console.print(f"results: {path}")
    return 0


def _table(result):
    from rich.table import Table

    table = Table(title=f"every tested commit against good {result.good.sha[:10]} "
                        f"({result.good.subject[:40]})")
    for col in ("commit", "subject", "B/A", "95% CI", "MDE", "verdict", "call", "rounds"):
        table.add_column(col, justify="right" if col in ("B/A", "95% CI", "MDE", "rounds")
                         else "left")
    for commit, r in result.tested:
        table.add_row(commit.sha[:10], commit.subject[:44], f"{r['ratio']:.3f}",
                      f"{r['ci_low']:.3f}-{r['ci_high']:.3f}", f"{r['mde']:.1%}", r["verdict"],
                      r["call"] + ("" if r["settled"] else " (not settled)"), str(r["rounds"]))
    return table
