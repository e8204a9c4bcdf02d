"""`kmicro diagnose`: explain slow paths of the Keras 2 and Keras 1 stacks from their compiled
graphs."""
from __future__ import annotations

from kmicro.cli import common
from kmicro.core.errors import NothingRan

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("diagnose", help="explain slow paths from the compiled Keras 2 "
                                               "and Keras 1 graphs")
    common.add_run_flags(
        p, "diagnose", stacks_help="comma list (default: installed Keras 2 and Keras 1 stacks)",
        jit_help=None, quick_help="64-sample predict, no inplace comparison")
    return p


def run(args) -> int:
    from kmicro.analysis import diagnose
    from kmicro.core import records, stacks
    from kmicro.report.tables import status_counts

    names = args.stacks or [n for n, s in stacks.STACKS.items()
                            if s.family in diagnose.FAMILIES and s.installed]
    chosen = stacks.resolve(names)
    if not chosen:
        raise NothingRan("no Keras 2 or Keras 1 stack is installed; run `make env` or "
                         "`make legacy`")
    parts = ("bn", "model") if args.quick else diagnose.PARTS
    found = diagnose.run(chosen, common.run_options(args), parts)
    path = common.results_path(args)
    out = records.ResultsFile(path)
    for r in found:
        out.append(r)
    console = common.make_console()
    console.print(diagnose.table(found))
    console.print(f"results: {path} ({status_counts(found)})")
    if any(r["status"] == "ok" for r in found):
        return 0
    raise NothingRan("no stack could be diagnosed (see the errors above)")
