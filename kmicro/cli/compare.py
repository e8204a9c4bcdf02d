"""`kmicro compare`: median ratios new/old between two result files (screening only: two
separate runs cannot tell a small change from this machine's drift)."""
from __future__ import annotations

from kmicro.cli import common
from kmicro.core.errors import NothingRan

__all__ = ["add_parser", "run"]

NUMBERS = ("old", "new", "new/old")  # the right-aligned columns


def add_parser(subparsers):
    p = subparsers.add_parser("compare", help="median ratios between two result files")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--tolerance", type=float, default=0.05, help="relative; default 0.05")
    p.add_argument("--min-time", type=float, default=100e-6,
                   help="ignore cases faster than this many seconds (default 1e-4)")
    return p


def run(args) -> int:
    from kmicro.analysis import compare
    from kmicro.core import records
    from kmicro.report.tables import format_time

    pairs = compare.changes(records.load(args.old), records.load(args.new), args.min_time)
    if not pairs:
        raise NothingRan("no (stack, case, pass) was measured ok in both files")
    console = common.make_console()
    console.print(ratio_table(pairs, args))
    share = compare.agreement(pairs, args.tolerance)
    console.print(f"{share:.0%} of {len(pairs)} pairs with old median >= "
                  f"{format_time(args.min_time)} agree within {args.tolerance:.0%}")
    return 0


def ratio_table(pairs, args):
    """Largest changes first; red: slower beyond the tolerance, green: faster."""
    from rich.table import Table

    from kmicro.report.tables import format_time

    table = Table(title=f"{args.new} vs {args.old}: median ratio new/old")
    for col in ("stack", "case", "pass") + NUMBERS:
        table.add_column(col, justify="right" if col in NUMBERS else "left")
    for c in sorted(pairs, key=lambda c: -abs(c.ratio - 1)):
        style = "" if abs(c.ratio - 1) <= args.tolerance else ("red" if c.ratio > 1 else "green")
        table.add_row(*c.key, format_time(c.old_s), format_time(c.new_s),
                      f"[{style}]{c.ratio:.3f}[/{style}]" if style else f"{c.ratio:.3f}")
    return table
