"""Terminal tables of op results: one table per layer family, rows = layer x case x pass,
columns = stacks."""
from __future__ import annotations

from collections import OrderedDict

from rich.table import Table
from rich.text import Text

__all__ = ["METRICS", "NOISE", "PASS_LABELS", "QUIET", "case_rows", "family_of", "format_bytes",
           "format_time", "json_key",
           "layout_pairs", "layout_table", "metric_value", "ops_tables", "problems",
           "short_case", "case_label", "stack_device", "stack_names", "status_counts"]

PASS_LABELS = OrderedDict([("forward", "fwd"), ("forward_train", "fwd (train)"),
                           ("backward", "fwd+bwd"), ("backward_only", "bwd (diff)")])
METRICS = ("time", "gflops", "gbps", "memory")
LOWER_IS_BETTER = ("time", "memory")


def stack_names(records) -> list:
    """Stacks in the order the records first name them."""
    return list(OrderedDict.fromkeys(r["stack"] for r in records))


def metric_value(record, metric):
    """Seconds for time and peak bytes for memory (lower is better), rates otherwise (higher
    is better)."""
    if record["status"] != "ok":
        return None
    if metric == "memory":
        return record.get("peak_bytes")
    seconds = record["median_s"]
    if metric == "time" or not seconds:
        return seconds
    work = record.get("flops") if metric == "gflops" else record.get("bytes")
    return work / seconds / 1e9 if work else None


NOISE = "< noise"  # a derived backward within the spread of the fwd+bwd measurement
QUIET = ("unsupported", NOISE)  # statuses that are facts about the case, not failures


def case_rows(records):
    """[(case, pass, {stack: record})] in catalog order, plus derived backward-only rows."""
    rows = OrderedDict()
    for r in records:
        rows.setdefault((r["case"], r["pass"]), {})[r["stack"]] = r
        if r["pass"] == "backward" and r.get("backward_s") is not None:
            derived = dict(r, median_s=r["backward_s"], iqr_s=None, noisy=False,
                           flops=(r.get("flops") or 0) * 2 // 3, peak_bytes=None)
            # A difference within the fwd+bwd spread (launch-bound GPU cases) is not a time.
            if r["backward_s"] <= (r.get("iqr_s") or 0.0):
                derived.update(status=NOISE, median_s=None)
            rows.setdefault((r["case"], "backward_only"), {})[r["stack"]] = derived
    order = list(PASS_LABELS)
    cases = list(OrderedDict.fromkeys(c for c, _ in rows))
    return [(c, p, rows[(c, p)]) for c in cases for p in order if (c, p) in rows]


def format_time(seconds) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def format_bytes(n) -> str:
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _cell(record, metric, best) -> Text:
    if record is None or (metric == "memory" and "memory_method" not in record):
        return Text("—", style="dim")  # no record, or one from before memory was measured
    value = metric_value(record, metric)
    if value is None and record["status"] == "ok":  # memory_method says why
        return Text("not measured", style="dim")
    if value is None:
        return Text(record["status"], style="dim" if record["status"] in QUIET else "red")
    if metric in LOWER_IS_BETTER:
        text = format_time(value) if metric == "time" else format_bytes(value)
        if not best:  # a pass that holds nothing (a view): no ratio to it
            return Text(text, style="bold green" if value == 0 else "")
        ratio = value / best
    else:
        text, ratio = f"{value:.3g}", best / value
    mark = "~" if record.get("noisy") and metric != "memory" else ""
    times = f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.2g}x"  # 110x, not 1.1e+02x
    return Text(f"{mark}{text} ({times})", style="bold green" if ratio == 1 else "")


def family_of(record) -> str:
    """The layer family a record is reported under (records before families: from its op)."""
    if record.get("family"):
        return record["family"]
    from kmicro.core import ops

    try:
        return ops.get(record.get("op") or record["case"].split("(")[0]).family
    except ValueError:
        return "other"


def ops_tables(records, metric="time") -> list:
    """One rich Table per layer family, in Keras' family order; cells are the median with
    the ratio to the best stack."""
    from kmicro.core import ops

    stacks = stack_names(records)
    devices = {s: stack_device(records, s) for s in stacks}
    tables = OrderedDict()
    for case, pass_name, by_stack in case_rows(records):
        if metric == "memory" and pass_name == "backward_only":
            continue  # a difference of two times has no memory of its own
        family = family_of(next(iter(by_stack.values())))
        if family not in tables:
            tables[family] = _new_table(family, stacks, devices, metric)
        values = [v for v in (metric_value(by_stack.get(s) or {"status": "-"}, metric)
                              for s in stacks) if v is not None]
        best = (min(values) if metric in LOWER_IS_BETTER else max(values)) if values else None
        tables[family].add_row(case.split("(")[0], short_case(case), PASS_LABELS[pass_name],
                               *[_cell(by_stack.get(s), metric, best) for s in stacks])
    order = {f: i for i, f in enumerate(ops.FAMILIES + ("user",))}
    return [tables[f] for f in sorted(tables, key=lambda f: order.get(f, len(order)))]


def stack_device(records, stack) -> str:
    devices = sorted({r["device"] for r in records if r["stack"] == stack and r.get("device")})
    return "/".join(devices) or "?"


def _new_table(family, stacks, devices, metric) -> Table:
    unit = {"time": "median time (ratio to fastest)", "gflops": "GFLOP/s (ratio to best)",
            "gbps": "GB/s (ratio to best)",
            "memory": "peak bytes one call holds beyond its inputs and weights (ratio to "
                      "least)"}[metric]
    noisy = "" if metric == "memory" else "; ~ = noisy (IQR/median > 10%)"
    table = Table(title=f"{family} — {unit}{noisy}", title_justify="left")
    table.add_column("layer")
    table.add_column("case")
    table.add_column("pass")
    for s in stacks:
        table.add_column(f"{s}\n({devices[s]})", justify="right")
    return table


def short_case(case_id: str) -> str:
    """'conv2d(filters=32,...)@32x32x32x3/cl' -> 'filters=32,... @ 32x32x32x3/cl'."""
    if "(" not in case_id or ")@" not in case_id:
        return case_id
    config, shape = case_id.split("(", 1)[1].split(")@", 1)
    return f"{config or 'defaults'} @ {shape}"


def case_label(record) -> str:
    """A record's op and short case: 'conv2d filters=32,... @ 32x32x32x3/cl'."""
    return f"{record.get('op') or ''} {short_case(record['case'])}".strip()


def problems(records) -> list:
    """One line per record that is not ok (unsupported passes summarised once per stack and
    reason)."""
    lines, unsupported = [], OrderedDict()
    for r in records:
        if r["status"] == "unsupported":
            unsupported.setdefault((r["stack"], r["error"]), set()).add(r["case"])
        elif r["status"] != "ok":
            lines.append(f"{r['stack']} {r['case']} {r['pass']}: {r['status']}: {r['error']}")
    for (stack, error), found in unsupported.items():
        where = f" ({len(found)} cases)" if len(found) > 1 else ""
        lines.append(f"{stack}: unsupported{where}: {error}")
    return lines


def status_counts(records) -> str:
    counts = OrderedDict()
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def _nhwc(record) -> tuple:
    shape = tuple(record["input_shape"])
    return (shape[0], shape[2], shape[3], shape[1]) if record["data_format"] == "channels_first" \
        else shape


def layout_pairs(records) -> list:
    """[((op, config, NHWC shape, pass), {stack: {data_format: record}})] of the cases some
    stack ran in both layouts (shared by layout_table and the HTML report)."""
    pairs = OrderedDict()
    for r in records:
        if r["data_format"] and r["status"] in ("ok", "error", "wrong", "unsupported", "timeout"):
            key = (r["op"], json_key(r["config"]), _nhwc(r), r["pass"])
            pairs.setdefault(key, {}).setdefault(r["stack"], {})[r["data_format"]] = r
    return [(k, v) for k, v in pairs.items() if any(len(by_fmt) == 2 for by_fmt in v.values())]


def layout_table(records):
    """channels_first vs channels_last of the same layer and shape, per stack, with the ratio.

    This is report 001's question: does the BN layout change the cost on this backend?
    None when no case was run in both layouts.
    """
    rows = layout_pairs(records)
    if not rows:
        return None
    stacks = stack_names(records)
    table = Table(title="channels_first vs channels_last — median time, cf/cl ratio",
                  title_justify="left")
    for col in ("case", "pass", *stacks):
        table.add_column(col, justify="right" if col in stacks else "left")
    for (op, _, shape, pass_name), by_stack in rows:
        label = f"{op} @ {'x'.join(map(str, shape))} (NHWC)"
        table.add_row(label, PASS_LABELS[pass_name],
                      *[_layout_cell(by_stack.get(s, {})) for s in stacks])
    return table


def _layout_cell(by_fmt) -> Text:
    cl, cf = by_fmt.get("channels_last"), by_fmt.get("channels_first")
    if not (cl and cf):
        return Text("—", style="dim")
    if cl["status"] != "ok" or cf["status"] != "ok":
        return Text(f"cl {cl['status']} / cf {cf['status']}", style="red")
    ratio = cf["median_s"] / cl["median_s"]
    return Text(f"{format_time(cl['median_s'])} → {format_time(cf['median_s'])} ({ratio:.2f}x)",
                style="bold" if abs(ratio - 1) > 0.25 else "")


def json_key(config) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(dict(config).items()))
