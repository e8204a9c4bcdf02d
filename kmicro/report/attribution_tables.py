"""The terminal tables of `kmicro attribute`: per layer, per layer type, and the ablation.

The numbers (shares, remainder, rankings, deltas) come from kmicro.analysis.attribution;
this module only lays them out.
"""
from __future__ import annotations

from rich.table import Table

from kmicro.analysis.attribution import (REMAINDER_MEANING, TOLERATED, ablation, dominant_lines,
                                         measured_ok, ratio_ranking, stacks_of, summary,
                                         type_ranking)

__all__ = ["layer_table", "type_table", "ablation_table", "print_report"]


def _ms(seconds) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _measured_stacks(records) -> list:
    return [st for st in stacks_of(records) if summary(records, st)]


def layer_table(records) -> Table:
    stacks = _measured_stacks(records)
    table = Table(title=f"{records[0]['model']}: fwd+bwd per layer (share of the step)",
                  title_justify="left")
    for col in ["layer"] + stacks:
        table.add_column(col, justify="left" if col == "layer" else "right")
    rows = {}
    for r in records:
        if r["pass"] == "backward":
            rows.setdefault(r["layer_key"], {"name": r["layer"]})[r["stack"]] = r
    for key, by in rows.items():
        table.add_row(f"{key} ({by['name']})", *[_layer_cell(by.get(st)) for st in stacks])
    sums = [summary(records, st) for st in stacks]
    table.add_section()
    table.add_row("sum of layers", *[f"{_ms(s['layers_s'])} {s['layers_s'] / s['step_s']:.0%}"
                                     for s in sums])
    table.add_row("measured step", *[_ms(s["step_s"]) for s in sums])
    table.add_row("remainder", *[f"{_ms(s['remainder_s'])} {s['remainder_share']:+.0%}"
                                 + (" !" if abs(s["remainder_share"]) > TOLERATED else "")
                                 for s in sums])
    return table


def _layer_cell(record) -> str:
    if record is None:
        return "—"
    if not measured_ok(record):
        return record["status"]
    return f"{'~' if record.get('noisy') else ''}{_ms(record['median_s'])} {record['share']:.0%}"


def type_table(records) -> Table:
    stacks = _measured_stacks(records)
    table = Table(title="per layer type: fwd+bwd (share of step)",
                  title_justify="left")
    for col in ["layer type"] + stacks + ["slowest/fastest"]:
        table.add_column(col, justify="left" if col == "layer type" else "right")
    for t, cells, ratio in type_ranking(records):
        table.add_row(t, *[f"{_ms(cells[st][0])} {cells[st][1]:.0%}" if st in cells else "—"
                           for st in stacks], f"{ratio:.2f}x" if ratio else "—")
    return table


def ablation_table(records):
    """The step with and without the ablated layer type per stack; None when nothing was
    ablated."""
    rows = [(st, ablation(records, st)) for st in stacks_of(records)]
    rows = [(st, a) for st, a in rows if a]
    if not rows:
        return None
    table = Table(title=f"ablation: step without {rows[0][1]['ablate']}", title_justify="left")
    for col in ("stack", "step", "ablated step", "delta", "delta %"):
        table.add_column(col, justify="left" if col == "stack" else "right")
    for st, a in rows:
        table.add_row(st, _ms(a["step_s"]), _ms(a["ablated_s"]), _ms(a["delta_s"]),
                      f"{a['delta_pct']:+.1%}")
    return table


def print_report(records, console):
    """Every table of an attribution run that has numbers, then one line per failed job."""
    if any(summary(records, st) for st in stacks_of(records)):
        console.print(layer_table(records))
        console.print(type_table(records))
        console.print("dominant layer types:", *dominant_lines(records), sep="\n  ")
        ratios = ", ".join(f"{t} {r:.2f}x" for t, r in ratio_ranking(records))
        if ratios:
            console.print(f"by cross-stack ratio (slowest/fastest stack): {ratios}",
                          soft_wrap=True)
        console.print(REMAINDER_MEANING + f" '!' marks |remainder| > {TOLERATED:.0%}.",
                      soft_wrap=True)
    table = ablation_table(records)
    if table:
        console.print(table)
    for r in records:
        if r["status"] != "ok":
            console.print(f"[yellow]![/yellow] {r['stack']} {r['case']} {r['pass']}: "
                          f"{r['status']}: {r['error']}", soft_wrap=True)
