"""`kmicro` console script. Parses, dispatches, and maps errors to exit codes:
0 success (cases may still carry error statuses), 1 nothing could run, 2 bad usage.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kmicro.cli import attribute as attribute_command
from kmicro.core import cases, stacks
from kmicro.core.errors import NothingRan, UsageError
from kmicro.cli import models as models_command
from kmicro.core.stacks import DEVICES, JIT


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kmicro", description="Layer-level microbenchmarks for Keras backends.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, required=True,
                           metavar="{stacks,ops,models,attribute,diagnose,calibrate,compare,report}")
    s = sub.add_parser("stacks", help="stacks, installed or not, versions, device, machine peaks")
    s.add_argument("--device", choices=DEVICES, default="auto")
    s.add_argument("--no-peaks", action="store_true", help="skip measuring matmul/copy peaks")
    o = sub.add_parser("ops", help="time single layers on every stack")
    _common(o)
    o.add_argument("--ops", help=f"comma list of {','.join(cases.OPS)} (default: all)")
    o.add_argument("--passes", default=",".join(cases.PASSES),
                   help=f"comma list of {','.join(cases.PASSES)}")
    o.add_argument("--shapes", help="N,H,W,C or N,F shapes separated by ';' (replaces the seeds')")
    o.add_argument("--set", metavar="KEY=VALUE,...",
                   help="override layer options, e.g. filters=64,kernel_size=5,pool_size=3")
    o.add_argument("--data-format", default="auto", choices=cases.LAYOUTS,
                   help="auto: channels_last, plus channels_first twins of the BN cases")
    o.add_argument("--metric", default="time", choices=("time", "gflops", "gbps"))
    o.add_argument("--resume", action="store_true", help="skip cases already finished in --json")
    o.add_argument("--timeout", type=float, default=300.0, help="seconds per case (all passes)")
    d = sub.add_parser("diagnose", help="explain slow paths from the compiled Keras 2 graphs")
    d.add_argument("--stacks", help="comma list (default: installed Keras 2 stacks)")
    d.add_argument("--device", choices=DEVICES, default="auto")
    d.add_argument("--quick", action="store_true", help="64-sample predict, no inplace comparison")
    d.add_argument("--json", help="results file (default: results/diagnose-<time>.json)")
    c = sub.add_parser("calibrate", help="harness overhead: kmicro vs a bare synchronised loop")
    _common(c)
    c.add_argument("--ops", default="batchnorm,dense", help="comma list of ops to calibrate")
    c.add_argument("--rounds", type=int, default=5)
    cmp = sub.add_parser("compare", help="median ratios between two result files")
    cmp.add_argument("old")
    cmp.add_argument("new")
    cmp.add_argument("--tolerance", type=float, default=0.05, help="relative; default 0.05")
    cmp.add_argument("--min-time", type=float, default=100e-6,
                     help="ignore cases faster than this many seconds (default 1e-4)")
    r = sub.add_parser("report", help="print the tables of result files, or write them as HTML")
    r.add_argument("results", nargs="+")
    r.add_argument("--metric", default="time", choices=("time", "gflops", "gbps"))
    r.add_argument("-o", "--output", metavar="REPORT.html",
                   help="write one self-contained HTML report (tables, plots) instead")
    r.add_argument("--peaks", action="store_true",
                   help="measure this machine's matmul/copy peaks for the roofline "
                        "(only meaningful on the machine that ran the results)")
    models_command.add_parser(sub)
    attribute_command.add_parser(sub)
    return p


def _common(p):
    p.add_argument("--stacks", help=f"comma list of {','.join(stacks.STACKS)} (default: installed)")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--jit", choices=JIT, default="auto",
                   help="auto = what a Keras train step does per backend; on/off forces it")
    p.add_argument("--quick", action="store_true", help="fewer samples: smoke runs, not numbers")
    p.add_argument("--json", help="results file (default: results/ops-<time>.json)")


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args)
    except UsageError as exc:
        print(f"kmicro: error: {exc}", file=sys.stderr)
        return 2
    except NothingRan as exc:
        print(f"kmicro: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kmicro: interrupted; finished records are kept", file=sys.stderr)
        return 130


def _dispatch(args) -> int:
    from kmicro.cli import commands  # keeps `kmicro --help` fast

    return commands.HANDLERS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
