"""`kmicro` console script: builds the parser from the command modules, dispatches, and maps
errors to exit codes: 0 success (cases may still carry error statuses), 1 nothing could run,
2 bad usage, 130 interrupted.

A command is one module with `add_parser(subparsers)` (returning its parser) and
`run(args) -> int`; adding one means adding that module to COMMANDS, whose order is the order
of `kmicro --help`.
"""
from __future__ import annotations

import argparse
import sys

from kmicro.cli import (ab, attribute, bisect, calibrate, compare, diagnose, env, machine,
                        models, ops, report, stack, stacks, sweep)
from kmicro.core.errors import NothingRan, UsageError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS = (stacks, machine, ops, models, attribute, diagnose, calibrate, compare, report, stack,
            env, ab, bisect, sweep)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kmicro", description="Layer-level microbenchmarks for Keras backends.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    # Usage errors name the choices ("argument {stacks,ops,...}: invalid choice"), not `command`.
    sub.metavar = "{" + ",".join(sub.choices) + "}"
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except UsageError as exc:
        print(f"kmicro: error: {exc}", file=sys.stderr)
        return 2
    except NothingRan as exc:
        print(f"kmicro: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kmicro: interrupted; finished records are kept", file=sys.stderr)
        return 130
