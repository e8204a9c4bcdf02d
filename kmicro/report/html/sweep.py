"""The history section: `kmicro sweep` records, one chart per base stack (the ratio of every
case and pass against the base along the variants, its interval as a band), then the cells and
where they ran."""
from __future__ import annotations

from html import escape

from kmicro.report import plots
from kmicro.report.html.markup import bullets, cell, image, table

__all__ = ["section"]


def section(recs) -> str:
    swept = [r for r in recs if r.get("variant") and r.get("role") == "cell"]
    if not swept:
        return ""
    from kmicro.analysis import sweep

    parts = ["<h2 id='history'>History (kmicro sweep)</h2><p class='note'>Each point is one "
             "cell: the variant against its base stack in interleaved rounds on one node; the "
             "band is the 95% interval. Ratios are relative to the base measured on the same "
             "node, so cells of different nodes share one axis.</p>"]
    for base in dict.fromkeys(r["base"] for r in swept):
        mine = [r for r in swept if r["base"] == base]
        parts.append(f"<h3>against {escape(base)}</h3>"
                     + image(plots.history(mine, f"B/A against {base}"),
                             f"ratio against {base} per variant"))
    agreed = sweep.agreement(recs)
    if agreed["pairs"]:
        same = sum(a for _, _, a in agreed["pairs"])
        lines = [f"nodes agree on {same} of {len(agreed['pairs'])} passes measured on two nodes"]
        lines += [f"node {n[:12]} disagreed in most of its overlap passes: its cells are "
                  "flagged" for n in agreed["named"]]
        parts.append(bullets(lines))
    parts.append(table(["cell", "base + variant", "node", "host", "CPU", "wall"],
                       _cell_rows(recs)))
    return "".join(parts)


def _cell_rows(recs) -> list:
    seen, rows = set(), []
    for r in sorted((r for r in recs if r.get("variant")), key=lambda r: (r["cell"], r["role"])):
        if (r["cell"], r["role"]) in seen:
            continue
        seen.add((r["cell"], r["role"]))
        wall = (r["cell_end"] - r["cell_start"]) if r.get("cell_end") else None
        rows.append([cell(f"{r['cell']}{' (again)' if r['role'] == 'overlap' else ''}", "num"),
                     cell(f"{r['base']} + {r['variant']}"), cell(r["node"]["id"][:12]),
                     cell(r["node"].get("host", "")), cell(r["node"].get("cpu", "")),
                     cell(f"{wall:.0f} s" if wall is not None else "", "num")])
    return rows
