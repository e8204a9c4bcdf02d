"""Terminal tables of op results: one table per layer, rows = case x pass, columns = stacks."""
from __future__ import annotations

from collections import OrderedDict

from rich.table import Table
from rich.text import Text

PASS_LABELS = OrderedDict([("forward", "fwd"), ("forward_train", "fwd (train)"),
                           ("backward", "fwd+bwd"), ("backward_only", "bwd (diff)")])
METRICS = ("time", "gflops", "gbps")


def _stacks(records) -> list:
    return list(OrderedDict.fromkeys(r["stack"] for r in records))


def _value(record, metric):
    """Seconds for time (lower is better), rates otherwise (higher is better)."""
    if record["status"] != "ok":
        return None
    seconds = record["median_s"]
    if metric == "time" or not seconds:
        return seconds
    work = record.get("flops") if metric == "gflops" else record.get("bytes")
    return work / seconds / 1e9 if work else None


def _rows(records):
    """{(case, pass label): {stack: record}} in catalog order, plus derived backward-only rows."""
    rows = OrderedDict()
    for r in records:
        rows.setdefault((r["case"], r["pass"]), {})[r["stack"]] = r
        if r["pass"] == "backward" and r.get("backward_s") is not None:
            derived = dict(r, median_s=r["backward_s"], iqr_s=None, noisy=False,
                           flops=(r.get("flops") or 0) * 2 // 3)
            rows.setdefault((r["case"], "backward_only"), {})[r["stack"]] = derived
    order = list(PASS_LABELS)
    cases = list(OrderedDict.fromkeys(c for c, _ in rows))
    return [(c, p, rows[(c, p)]) for c in cases for p in order if (c, p) in rows]


def format_time(seconds) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _cell(record, metric, best) -> Text:
    if record is None:
        return Text("—", style="dim")
    value = _value(record, metric)
    if value is None:
        return Text(record["status"], style="red" if record["status"] != "unsupported" else "dim")
    if metric == "time":
        text, ratio = format_time(value), value / best
    else:
        text, ratio = f"{value:.3g}", best / value
    mark = "~" if record.get("noisy") else ""
    return Text(f"{mark}{text} ({ratio:.2g}x)", style="bold green" if ratio == 1 else "")


def ops_tables(records, metric="time") -> list:
    """One rich Table per op; cells are the median with the ratio to the best stack."""
    stacks = _stacks(records)
    devices = {s: _device(records, s) for s in stacks}
    tables = OrderedDict()
    for case, pass_name, by_stack in _rows(records):
        op = case.split("(")[0]
        if op not in tables:
            tables[op] = _new_table(op, stacks, devices, metric)
        values = [v for v in (_value(by_stack.get(s) or {"status": "-"}, metric) for s in stacks)
                  if v]
        best = (min(values) if metric == "time" else max(values)) if values else None
        tables[op].add_row(_short(case), PASS_LABELS[pass_name],
                           *[_cell(by_stack.get(s), metric, best) for s in stacks])
    return list(tables.values())


def _device(records, stack) -> str:
    devices = sorted({r["device"] for r in records if r["stack"] == stack and r.get("device")})
    return "/".join(devices) or "?"


def _new_table(op, stacks, devices, metric) -> Table:
    unit = {"time": "median time (ratio to fastest)", "gflops": "GFLOP/s (ratio to best)",
            "gbps": "GB/s (ratio to best)"}[metric]
    table = Table(title=f"{op} — {unit}; ~ = noisy (IQR/median > 10%)", title_justify="left")
    table.add_column("case")
    table.add_column("pass")
    for s in stacks:
        table.add_column(f"{s}\n[{devices[s]}]", justify="right")
    return table


def _short(case_id: str) -> str:
    return case_id.split("(", 1)[1].replace(")@", " @ ", 1) if "(" in case_id else case_id


def problems(records) -> list:
    """One line per record that is not ok (unsupported passes summarised once per stack)."""
    lines, unsupported = [], OrderedDict()
    for r in records:
        if r["status"] == "unsupported":
            unsupported.setdefault(r["stack"], r["error"])
        elif r["status"] != "ok":
            lines.append(f"{r['stack']} {r['case']} {r['pass']}: {r['status']}: {r['error']}")
    lines += [f"{s}: unsupported: {e}" for s, e in unsupported.items()]
    return lines


def status_counts(records) -> str:
    counts = OrderedDict()
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in counts.items())
