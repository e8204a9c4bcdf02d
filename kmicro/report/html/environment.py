"""The environment section: per stack, what ran it (versions, device, jit), load and when."""
from __future__ import annotations

from collections import OrderedDict

from kmicro.report.html.markup import cell, table
from kmicro.report.tables import stack_names

__all__ = ["section"]

HEADER = ["stack", "backend", "versions", "python", "device", "device name", "jit",
          "load avg 1m", "time range"]


def section(records) -> str:
    rows = [_row([r for r in records if r["stack"] == stack]) for stack in stack_names(records)]
    return "<h2 id='environment'>Environment per stack</h2>" + table(HEADER, rows)


def _row(mine) -> list:
    first = mine[0]
    versions = ", ".join(f"{k} {v}" for k, v in (first.get("versions") or {}).items())
    loads = sorted(r["load_avg_1m"] for r in mine if r.get("load_avg_1m") is not None)
    times = sorted(r["time"] for r in mine if r.get("time"))
    return [cell(first["stack"]), cell(first.get("backend") or ""), cell(versions),
            cell(first.get("python") or ""), cell(_distinct(mine, "device")),
            cell(_distinct(mine, "device_name")), cell(_distinct(mine, "jit")),
            cell(f"{loads[0]}–{loads[-1]}" if loads else "—", "num"),
            cell(f"{times[0]} – {times[-1]}" if times else "—")]


def _distinct(records, field) -> str:
    """The field's different values, in first-seen order; "?" when no record has one."""
    return ", ".join(OrderedDict.fromkeys(str(r[field]) for r in records if r.get(field))) or "?"
