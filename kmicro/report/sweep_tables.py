"""Terminal tables of `kmicro sweep` records: per base stack, one row per case and pass, one
column per variant (the ratio to the base and its verdict); then the cells, their nodes and
wall times, and whether nodes agreed on the cells measured twice."""
from __future__ import annotations

from rich.table import Table

from kmicro.report.ab_tables import VERDICT_STYLE, verdict_label
from kmicro.report.tables import PASS_LABELS, case_label

__all__ = ["ratio_tables", "cell_table", "agreement_lines"]


def ratio_tables(found) -> list:
    """One table per base: B/A of each variant against the base, per case and pass."""
    firsts = [r for r in found if r.get("role") == "cell"]
    tables = []
    for base in dict.fromkeys(r["base"] for r in firsts):
        mine = [r for r in firsts if r["base"] == base]
        variants = list(dict.fromkeys(r["variant"] for r in sorted(mine, key=lambda r: r["cell"])))
        table = Table(title=f"each variant against {base}: ratio B/A and verdict (95% CI in the "
                            "results file)")
        table.add_column("case")
        table.add_column("pass")
        for variant in variants:
            table.add_column(variant, justify="right")
        rows = {}
        for r in mine:
            rows.setdefault((r["case"], r["pass"]), {})[r["variant"]] = r
        for (case, pass_name), got in rows.items():
            table.add_row(case_label(next(iter(got.values()))),
                          PASS_LABELS.get(pass_name, pass_name),
                          *(_cell_text(got.get(v)) for v in variants))
        tables.append(table)
    return tables


def _cell_text(r) -> str:
    if r is None:
        return ""
    if r["status"] != "ok":
        return r["status"]
    style = VERDICT_STYLE[r["verdict"]]
    text = f"{r['ratio']:.3f} {verdict_label(r)}"
    flag = " [yellow](node flagged)[/yellow]" if r.get("node_flagged") else ""
    return (f"[{style}]{text}[/{style}]" if style else text) + flag


def cell_table(found) -> Table:
    """One row per cell run (overlaps too): where it ran and how long it took."""
    table = Table(title="cells: the node that measured each, and its wall time")
    for col in ("cell", "base + variant", "role", "node", "host", "build", "wall", "passes"):
        table.add_column(col, justify="right" if col in ("cell", "build", "wall", "passes")
                         else "left")
    runs = {}
    for r in found:
        runs.setdefault((r["cell"], r["role"]), []).append(r)
    for (cell, role), rs in sorted(runs.items()):
        first = rs[0]
        ok = sum(r["status"] == "ok" for r in rs)
        table.add_row(str(cell), f"{first['base']} + {first['variant']}", role,
                      first["node"]["id"][:12], first["node"]["host"], f"{first['build_s']:.0f} s",
                      f"{first['cell_end'] - first['cell_start']:.0f} s", f"{ok}/{len(rs)} ok")
    return table


def agreement_lines(agreed) -> list:
    """What the overlap cells say about the nodes."""
    pairs = agreed["pairs"]
    if not pairs:
        return []
    same = sum(agree for _, _, agree in pairs)
    lines = [f"nodes agree on {same} of {len(pairs)} passes measured on two nodes (95% "
             "intervals overlap)"]
    for before, again, agree in pairs:
        if not agree:
            lines.append(f"  {case_label(before)} {PASS_LABELS.get(before['pass'], before['pass'])}"
                         f" of {before['base']} + {before['variant']}: {before['ratio']:.3f} "
                         f"({before['ci_low']:.3f}-{before['ci_high']:.3f}) on "
                         f"{before['node']['id'][:12]}, {again['ratio']:.3f} "
                         f"({again['ci_low']:.3f}-{again['ci_high']:.3f}) on "
                         f"{again['node']['id'][:12]}")
    for node in agreed["named"]:
        lines.append(f"node {node[:12]} disagreed in most of its overlap passes: its cells are "
                     "flagged (same instance type? another job on it?)")
    return lines
