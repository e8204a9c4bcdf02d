"""`kmicro stack add|remove|list|cache`: user-defined stacks — any interpreter with Keras and a
backend — and the environments kmicro caches for itself.

Stored in the file `kmicro.core.stack_config.path()` names; every command's --stacks takes them.
"""
from __future__ import annotations

import shutil

from kmicro.cli import common
from kmicro.core import stack_config, stacks, user_stacks

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("stack", help="add, remove or list user-defined stacks")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p),
                               metavar="{add,remove,list,cache}")
    a = actions.add_parser("add", help="register an interpreter as a stack")
    a.add_argument("name")
    a.add_argument("--python", required=True, metavar="PATH",
                   help="the interpreter (it must import keras and the backend)")
    a.add_argument("--backend", required=True, help=f"one of {', '.join(user_stacks.BACKENDS)}")
    a.add_argument("--family", choices=user_stacks.FAMILIES,
                   help="Keras API family (default: keras2 for theano, else keras3)")
    a.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment variable of the stack's workers (repeatable; wins over "
                        "kmicro's defaults; PYTHONPATH is prepended)")
    r = actions.add_parser("remove", help="forget a user-defined stack (and delete the "
                                          "environment if `kmicro env` made it)")
    r.add_argument("name")
    actions.add_parser("list", help="the user-defined stacks whose interpreter exists, one "
                                    "name per line (no probing: `kmicro stacks` probes)")
    c = actions.add_parser("cache", help="the environments bisect and sweep built for "
                                         "themselves (not your stacks): list, or --prune")
    c.add_argument("--prune", action="store_true", help="delete them (all, or --older-than)")
    c.add_argument("--older-than", type=float, default=0.0, metavar="DAYS",
                   help="with --prune: only those built at least DAYS ago")
    return p


def run(args) -> int:
    console = common.make_console()
    if args.action == "list":
        for stack in stacks.all_stacks().values():
            if not stack.builtin and not stack.cached and stack.installed:
                print(stack.name)
        return 0
    if args.action == "cache":
        return _cache(args, console)
    if args.action == "add":
        stack = user_stacks.make(args.name, args.python, args.backend, args.family,
                                 user_stacks.parse_env(args.env))
        user_stacks.save(stack)
        console.print(f"added stack {stack.name}: Python {stack.python} at {stack.interpreter}, "
                      f"KERAS_BACKEND={stack.backend} ({stack.family}); "
                      f"stored in {stack_config.path()}", soft_wrap=True)
        return 0
    stack = user_stacks.remove(args.name)
    made = user_stacks.made_by_env(stack)
    if made:
        shutil.rmtree(made, ignore_errors=True)
    console.print(f"removed stack {stack.name}" + (f" and its environment {made}" if made else ""),
                  soft_wrap=True)
    return 0


def _cache(args, console) -> int:
    from rich.table import Table

    from kmicro.core import variant_cache
    from kmicro.core.errors import UsageError

    if args.older_than < 0:
        raise UsageError("expected --older-than DAYS >= 0")
    if args.prune:
        gone = variant_cache.prune(args.older_than)
        console.print(f"pruned {len(gone)} cached environments, "
                      f"{sum(size for _, size in gone) / 2**30:.1f} GiB freed", soft_wrap=True)
        return 0
    found = variant_cache.listing()
    table = Table(title=f"environments kmicro built for bisect and sweep ({len(found)}; "
                        "`kmicro stack cache --prune` deletes them)")
    for col in ("stack", "base", "swapped", "frees", "built"):
        table.add_column(col, justify="right" if col in ("frees", "built") else "left")
    for stack, size, age in found:
        table.add_row(stack.name, stack.base, ", ".join(stack.overrides),
                      f"{size / 2**20:.0f} MiB", "gone" if age is None else f"{age:.1f} days ago")
    console.print(table)
    return 0
