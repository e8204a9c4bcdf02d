"""`kmicro env NAME --from STACK --set SPEC...`: a version variant of a stack, registered as one.

    kmicro env jax314 --from jax --set keras==3.14.0
    kmicro env kdev --from jax --set keras=/path/to/keras
    kmicro env kold --from jax --set keras@v3.14.0 --repo /path/to/keras
"""
from __future__ import annotations

import shutil
import time

from kmicro.cli import common
from kmicro.core import envs, user_stacks

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("env", help="create a stack: another stack's exact pins with "
                                          "some packages swapped (uv)")
    p.add_argument("name", help="the new stack's name")
    p.add_argument("--from", dest="base", required=True, metavar="STACK",
                   help="the stack whose pins, Python and backend to start from")
    p.add_argument("--set", dest="sets", action="append", required=True, metavar="SPEC",
                   help=f"repeatable: {envs.FORMS}")
    p.add_argument("--repo", metavar="PATH", help="git checkout that NAME@REV refers to")
    return p


def run(args) -> int:
    started = time.perf_counter()
    stack = user_stacks.create_variant(args.name, args.base,
                                       [envs.parse_set(s, args.repo) for s in args.sets])
    info = _probe(stack)
    versions = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
    common.make_console().print(
        f"created stack {stack.name} from {args.base} ({'; '.join(stack.overrides)}) in "
        f"{time.perf_counter() - started:.1f} s: {versions}\n  environment: "
        f"{stack.interpreter.parent.parent}\n  use it: kmicro ops --stacks {args.base},"
        f"{stack.name}", soft_wrap=True)
    return 0


def _probe(stack) -> dict:
    """What the new stack's worker sees; a stack whose worker cannot start is not kept."""
    from kmicro.core.errors import UsageError
    from kmicro.harness import runner

    info = runner.probe(stack, runner.Options())
    if "error" in info:
        user_stacks.remove(stack.name)
        shutil.rmtree(user_stacks.made_by_env(stack), ignore_errors=True)  # kmicro env made it
        raise UsageError(f"stack {stack.name} was created but its worker fails: "
                         f"{info['error']}; not registered")
    return info
