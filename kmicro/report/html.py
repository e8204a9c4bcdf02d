"""One self-contained HTML file of result records: tables, plots, environment, references.

No external URL, no script: CSS is inline and plots are base64 PNG data URIs, so the file
opens from disk, from a CI artifact or an e-mail. Records are grouped by kind, without
importing the code that wrote them: `op` -> op tables, `model` -> model tables,
kind "attribution" -> layer-type shares of a model's step (plot and table),
`finding`/`findings` or kind "diagnose" -> key/value findings. Every text is escaped.
"""
from __future__ import annotations

import base64
import json
import time
from collections import OrderedDict
from html import escape
from pathlib import Path

from kmicro.report import plots, tables as report
from kmicro.core import records as results
from kmicro.core.errors import UsageError

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;
 max-width:1300px;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;border-bottom:1px solid #ddd;
 padding-bottom:4px;margin-top:32px}h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;margin:6px 0 14px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;vertical-align:top}
th{background:#f4f4f6;text-align:left}td.num{text-align:right;white-space:nowrap}
tr:nth-child(even) td{background:#fafafb}
.best{color:#137333;font-weight:600}.flag{font-weight:700}.bad{color:#b3261e}.dim{color:#888}
.note{color:#555;font-size:12.5px}.ref{background:#fff8e1;border:1px solid #f0d98c;
 padding:8px 14px;border-radius:4px}.meaning td{background:#eef5ff!important}
img{max-width:100%;display:block;margin:8px 0 18px}code{font-size:12.5px}
nav a{margin-right:12px}
"""


# ---- loading and grouping ----------------------------------------------------------------

def load(paths) -> list:
    """Records of every file. Files results.load rejects are accepted when they are JSON
    lists of dicts with a `stack` (diagnose records need not carry case/pass)."""
    records = []
    for path in paths:
        try:
            records += results.load(path)
        except UsageError:
            records += _lenient(path)
    return records


def _lenient(path) -> list:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        data = None
    if not isinstance(data, list) or not all(isinstance(r, dict) and "stack" in r for r in data):
        return results.load(path)  # raises the one-line UsageError
    return data


kind = results.kind_of


def group(records) -> dict:
    groups = OrderedDict((k, []) for k in ("op", "model", "attribution", "diagnose", "other"))
    for r in records:
        groups[kind(r)].append(r)
    return groups


# ---- small HTML helpers ------------------------------------------------------------------

def _cell(text, cls=None, title=None, tag="td") -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' title="{escape(str(title))}"' if title else ""
    return f"<{tag}{attrs}>{escape(str(text))}</{tag}>"


def _table(header, rows) -> str:
    """`header`: texts; `rows`: lists of ready <td> strings (from _cell)."""
    head = "".join(_cell(h, tag="th") for h in header)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _seconds(value) -> str:
    return report.format_time(value) if isinstance(value, (int, float)) else "—"


# ---- sections ----------------------------------------------------------------------------

def _summary(groups, records) -> str:
    times = sorted(r["time"] for r in records if r.get("time"))
    span = f"{times[0]} – {times[-1]}" if times else "unknown"
    rows = []
    for k, recs in groups.items():
        if recs:
            rows.append([_cell(k), _cell(len(recs), "num"), _cell(report.status_counts(recs))])
    return (f"<h2 id='summary'>Summary</h2><p>Generated {escape(time.strftime('%Y-%m-%d %H:%M'))}"
            f" from {len(records)} records measured {escape(span)}.</p>"
            + _table(["kind", "records", "per status"], rows))


def _op_cell(record, best) -> str:
    if record is None:
        return _cell("—", "num dim")
    if record["status"] != "ok":
        cls = "num dim" if record["status"] in report.QUIET else "num bad"
        return _cell(record["status"], cls, title=record.get("error") or record["status"])
    median, iqr = record["median_s"], record.get("iqr_s")
    text = ("~" if record.get("noisy") else "") + report.format_time(median)
    text += f" ± {report.format_time(iqr)}" if iqr else ""
    ratio = median / best
    cls = "num best" if ratio == 1 else "num"
    return _cell(f"{text} ({ratio:.2g}x)", cls, title=f"{record.get('n_samples')} samples, "
                 f"compile {_seconds(record.get('compile_s'))}, "
                 f"max rel err {record.get('max_rel_err')}")


def _op_tables(ops) -> str:
    stacks = report._stacks(ops)
    header = ["case", "pass"] + [f"{s} ({report._device(ops, s)})" for s in stacks]
    tables = OrderedDict()
    for case, pass_name, by_stack in report._rows(ops):
        values = [v for v in (report._value(r, "time") for r in by_stack.values()) if v]
        best = min(values) if values else None
        row = [_cell(report._short(case)), _cell(report.PASS_LABELS[pass_name])]
        row += [_op_cell(by_stack.get(s), best) for s in stacks]
        tables.setdefault(case.split("(")[0], []).append(row)
    parts = [f"<h3>{escape(op)}</h3>" + _table(header, rows) for op, rows in tables.items()]
    return "".join(parts)


def _ops_section(ops) -> str:
    if not ops:
        return ""
    note = ("<p class='note'>Median ± IQR per call, ratio to the fastest stack in brackets "
            "(fastest in green); ~ marks a noisy cell (IQR/median above the threshold). "
            "<code>bwd (diff)</code> = fwd+bwd minus fwd (train), derived. Hover a failed cell "
            "for its error.</p>")
    problems = report.problems(ops)
    listing = ("<h3>Problems</h3><ul>" + "".join(f"<li>{escape(p)}</li>" for p in problems)
               + "</ul>") if problems else ""
    return "<h2 id='ops'>Layers</h2>" + note + _op_tables(ops) + _layout(ops) + listing


def _layout_cell(by_fmt) -> str:
    cl, cf = by_fmt.get("channels_last"), by_fmt.get("channels_first")
    if not (cl and cf):
        return _cell("—", "num dim")
    if cl["status"] != "ok" or cf["status"] != "ok":
        return _cell(f"cl {cl['status']} / cf {cf['status']}", "num bad",
                     title=cl.get("error") or cf.get("error"))
    ratio = cf["median_s"] / cl["median_s"]
    text = f"{_seconds(cl['median_s'])} → {_seconds(cf['median_s'])} ({ratio:.2f}x)"
    return _cell(text, "num flag" if abs(ratio - 1) > 0.25 else "num")


def _layout(ops) -> str:
    pairs = report.layout_pairs(ops)
    if not pairs:
        return ""
    stacks = report._stacks(ops)
    rows = [[_cell(f"{op} @ {'x'.join(map(str, shape))} (NHWC)"),
             _cell(report.PASS_LABELS[p])] + [_layout_cell(by.get(s, {})) for s in stacks]
            for (op, _, shape, p), by in pairs]
    return ("<h3>channels_last → channels_first</h3><p class='note'>Same layer and shape in "
            "both layouts: cl time → cf time (cf/cl ratio; bold when they differ by more "
            "than 25%). Report 001's question.</p>" + _table(["case", "pass"] + stacks, rows))


def _plots_section(ops, peaks) -> str:
    if not any(r["status"] == "ok" for r in ops):
        return ""
    parts = ["<h2 id='plots'>Plots</h2>"]
    for op in OrderedDict.fromkeys(r["op"] for r in ops):
        if any(r["op"] == op and r["status"] == "ok" for r in ops):
            parts.append(_img(plots.comparison(ops, op), f"{op} stack comparison"))
    note = ("measured peaks: matmul {matmul_gflops:.1f} GFLOP/s, copy {copy_gbps:.1f} GB/s "
            "(NumPy on the host CPU)".format(**peaks) if peaks else
            "no machine peaks given: points only")
    if plots.roofline_points(ops):
        parts.append(f"<p class='note'>Roofline with textbook FLOPs and bytes; "
                     f"{escape(note)}.</p>" + _img(plots.roofline(ops, peaks), "roofline"))
    return "".join(parts)


MODEL_FIELDS = ("epoch_s", "step_s", "eval_s", "compile_s")


def _models_section(models) -> str:
    if not models:
        return ""
    rows = []
    for r in models:
        ok = r["status"] == "ok"
        status = _cell(r["status"], None if ok else "bad", title=r.get("error"))
        rows.append([_cell(r["stack"]), _cell(r.get("case") or r["model"]), status]
                    + [_cell(_seconds(r.get(f)) if ok else "—", "num") for f in MODEL_FIELDS]
                    + [_cell(f"{r.get('device') or '?'} {r.get('device_name') or ''}")])
    header = ["stack", "model", "status", "epoch", "step", "eval", "compile", "device"]
    return ("<h2 id='models'>Models</h2><p class='note'>Per stack and model: epoch (measured "
            "or extrapolated from the median step), median training step, evaluation, "
            "first-call compile.</p>" + _table(header, rows))


def _signed(value) -> str:
    return ("-" if value < 0 else "") + _seconds(abs(value))


def _attribution_rows(attribution, recs, stacks) -> list:
    """Per layer type (by mean share): time (share) per stack and slowest/fastest; then the
    remainder, the measured step and the ablated step."""
    rows = []
    for t, cells, ratio in attribution.type_ranking(recs):
        rows.append([_cell(t)] + [_cell(f"{_seconds(cells[s][0])} ({cells[s][1]:.0%})"
                                        if s in cells else "—", "num") for s in stacks]
                    + [_cell(f"{ratio:.2f}x" if ratio else "—", "num")])
    sums = {s: attribution.summary(recs, s) for s in stacks}
    rows.append([_cell("remainder")] + [_cell(f"{_signed(sums[s]['remainder_s'])} "
                                              f"({sums[s]['remainder_share']:+.0%})", "num")
                                        for s in stacks] + [_cell("")])
    rows.append([_cell("measured step")] + [_cell(_seconds(sums[s]["step_s"]), "num")
                                            for s in stacks] + [_cell("")])
    cuts = {s: attribution.ablation(recs, s) for s in stacks}
    if any(cuts.values()):
        label = next(c["ablate"] for c in cuts.values() if c)
        rows.append([_cell(f"step without {label}")] + [
            _cell(f"{_seconds(c['ablated_s'])} ({c['delta_pct']:+.0%})" if c else "—", "num")
            for c in cuts.values()] + [_cell("")])
    return rows


def _attribution_section(recs) -> str:
    if not recs:
        return ""
    from kmicro.analysis import attribution  # framework-free analysis of attribution records

    parts = ["<h2 id='attribution'>Attribution</h2><p class='note'>Forward+backward time of "
             "each layer type, timed layer by layer, as a share of the measured training step "
             "(bar labels: share of the bar; black tick: the measured step). "
             + escape(attribution.REMAINDER_MEANING) + "</p>"]
    for model in OrderedDict.fromkeys(r["model"] for r in recs):
        mine = [r for r in recs if r["model"] == model]
        stacks = [s for s in attribution.stacks_of(mine) if attribution.summary(mine, s)]
        parts.append(f"<h3>{escape(model)}</h3>")
        if stacks:
            steps = {s: attribution.summary(mine, s)["step_s"] for s in stacks}
            png = plots.stacked_shares(attribution.shares_by_stack(mine), steps=steps,
                                       title=f"{model}: fwd+bwd per layer type; "
                                             "| = measured step")
            parts.append(_img(png, f"{model} layer-type shares"))
            parts.append(_table(["layer type"] + stacks + ["slowest/fastest"],
                                _attribution_rows(attribution, mine, stacks)))
            parts.append("<ul>" + "".join(f"<li>{escape(line)}</li>"
                                          for line in attribution.dominant_lines(mine)) + "</ul>")
        problems = [f"{r['stack']} {r['case']} {r['pass']}: {r['status']}: {r['error']}"
                    for r in mine if r["status"] != "ok"]
        if problems:
            parts.append("<ul>" + "".join(f"<li class='bad'>{escape(p)}</li>" for p in problems)
                         + "</ul>")
    return "".join(parts)


def _value_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _kv(mapping) -> str:
    rows = []
    for k, v in mapping.items():
        cls = ' class="meaning"' if k == "meaning" else ""
        rows.append(f"<tr{cls}>{_cell(k, tag='th')}{_cell(_value_text(v))}</tr>")
    return f"<table><tbody>{''.join(rows)}</tbody></table>"


# Shown in a finding's heading, in the environment table, or not at all.
_NOT_FINDINGS = {"stack", "case", "data_format", "status", "error", "kind", "findings", "schema",
                 "versions", "backend", "python", "device_name", "jit", "time", "load_avg_1m",
                 "cpu_count"}


def _findings(record) -> list:
    """Key/value mappings to show: each item of `findings`, else the record's own fields
    (a `finding` dict is flattened into them)."""
    if isinstance(record.get("findings"), list):
        facts = [record["facts"]] if isinstance(record.get("facts"), dict) and record["facts"] \
            else []
        return [f if isinstance(f, dict) else {"finding": f} for f in record["findings"]] + facts
    fields = {k: v for k, v in record.items() if k not in _NOT_FINDINGS}
    if isinstance(fields.get("finding"), dict):
        fields.update(fields.pop("finding"))
    return [fields]


def _diagnose_section(diag) -> str:
    if not diag:
        return ""
    parts = ["<h2 id='diagnose'>Diagnose findings</h2>"]
    for r in diag:
        title = " · ".join(str(r[k]) for k in ("stack", "case", "data_format", "status")
                           if r.get(k))
        error = f"<p class='bad'>{escape(str(r['error']))}</p>" if r.get("error") else ""
        parts.append(f"<h3>{escape(title)}</h3>{error}"
                     + "".join(_kv(f) for f in _findings(r)))
    return "".join(parts)


def _environment(records) -> str:
    rows = []
    for stack in report._stacks(records):
        mine = [r for r in records if r["stack"] == stack]
        first = mine[0]
        versions = ", ".join(f"{k} {v}" for k, v in (first.get("versions") or {}).items())
        loads = sorted(r["load_avg_1m"] for r in mine if r.get("load_avg_1m") is not None)
        times = sorted(r["time"] for r in mine if r.get("time"))
        rows.append([_cell(stack), _cell(first.get("backend") or ""), _cell(versions),
                     _cell(first.get("python") or ""), _cell(_distinct(mine, "device")),
                     _cell(_distinct(mine, "device_name")), _cell(_distinct(mine, "jit")),
                     _cell(f"{loads[0]}–{loads[-1]}" if loads else "—", "num"),
                     _cell(f"{times[0]} – {times[-1]}" if times else "—")])
    header = ["stack", "backend", "versions", "python", "device", "device name", "jit",
              "load avg 1m", "time range"]
    return "<h2 id='environment'>Environment per stack</h2>" + _table(header, rows)


def _distinct(records, field) -> str:
    return ", ".join(OrderedDict.fromkeys(str(r[field]) for r in records if r.get(field))) or "?"


# Published numbers of the two user reports and the project's earlier CPU measurements
# (REFERENCE.md); never measured by the run this report shows.
REPORT_000 = (("Keras 1.2.1 + TensorFlow 0.12.1", "Quadro M5000M (GPU)", "15-16 s"),
              ("Keras 1.2.1 + Theano 0.8.2", "CPU (Theano's default device=cpu, by mistake)",
               "285-292 s"),
              ("Keras 1.2.1 + Theano 0.8.2", "Quadro M5000M (GPU)", "38 s"))
REPORT_001 = (("Theano 1.0.3 (Keras 2.2.4, cuDNN 7104)", "82 s (2 ms/step)", "7 s (132 us/step)"),
              ("TensorFlow (Keras 2.2.4)", "10 s (204 us/step)", "10 s (194 us/step)"))
CPU_MEASURED = (("Keras 3.15 + TensorFlow 2.21 (CPU)", "27.5", "59.5", "2.2x"),
                ("Keras 3.15 + JAX 0.10 (CPU)", "49.4", "102.2", "2.1x"),
                ("Keras 3.15 + torch 2.13 (CPU)", "305", "586", "1.9x"),
                ("Keras 2.3.1 + Theano 1.0.5 (CPU, py3.11 + shims)", "75.7", "154.6", "2.0x"),
                ("Keras 2.3.1 + Theano 1.0.5 (CPU, Python 3.9, numpy 1.21.6)", "—", "167", "—"),
                ("Keras 2.2.4 + TensorFlow 1.15.5 (CPU, Python 3.7, fused BN)", "53.6", "71.6",
                 "1.3x"))


def _rows_of(tuples, first_number) -> list:
    return [[_cell(c, "num" if i >= first_number else None) for i, c in enumerate(t)]
            for t in tuples]


def _reference() -> str:
    return ("<h2 id='reference'>Published and reference numbers</h2><div class='ref'>"
            "<p><b>Not measured by this run.</b> Other machines and versions; for orientation "
            "only.</p><h3>Report 000: Keras 1.2.1, cifar10_cnn, batch 32 with augmentation, "
            "s/epoch (published)</h3>"
            + _table(["stack", "hardware", "epoch"], _rows_of(REPORT_000, 2))
            + "<h3>Report 001: cut-down ResNet, GTX 1080 Max-Q, s/epoch (published)</h3>"
            + _table(["backend", "with BN", "without BN"], _rows_of(REPORT_001, 1))
            + "<p class='note'>Evaluation of 10,000 samples: Theano 4 s with BN, 0 s without. "
            "Keras 2's progress bar printed seconds per sample as '/step'.</p>"
            "<h3>Earlier measurements on a 2-core CPU machine, no GPU (REFERENCE.md, "
            "cut-down ResNet, batch 32, ms per training step, noisy)</h3>"
            + _table(["stack", "no BN", "BN", "ratio"], _rows_of(CPU_MEASURED, 1))
            + "<p class='note'>Report 000's own Theano stack (Keras 1.2.1 + Theano 0.8.2) ran "
            "cifar10_cnn without augmentation at 79 ms/step (124 s per 50,000-sample epoch) "
            "on that machine.</p></div>")


def _other(others) -> str:
    if not others:
        return ""
    return (f"<h2 id='other'>Other records</h2><p class='note'>{len(others)} records of no "
            "known kind (no op, model or finding).</p>" + "".join(_kv(r) for r in others))


# ---- entry points ------------------------------------------------------------------------

def recorded_peaks(records):
    """Machine peaks stored with the records (a `peaks` dict field), if a run kept them."""
    return next((r["peaks"] for r in records if isinstance(r.get("peaks"), dict)), None)


def render(records, peaks=None) -> str:
    """The whole page. `peaks` (see peaks.measure) defaults to the records' own."""
    g = group(records)
    peaks = peaks or recorded_peaks(records)
    nav = " ".join(f"<a href='#{a}'>{escape(t)}</a>" for a, t, k in (
        ("summary", "summary", None), ("ops", "layers", "op"), ("plots", "plots", "op"),
        ("models", "models", "model"), ("attribution", "attribution", "attribution"),
        ("diagnose", "diagnose", "diagnose"),
        ("environment", "environment", None), ("reference", "reference", None))
        if k is None or g[k])
    body = (_summary(g, records) + _ops_section(g["op"]) + _plots_section(g["op"], peaks)
            + _models_section(g["model"]) + _attribution_section(g["attribution"])
            + _diagnose_section(g["diagnose"]) + _other(g["other"])
            + _environment(records) + _reference())
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>kmicro report</title><style>{CSS}</style></head><body>"
            f"<h1>kmicro report</h1><nav>{nav}</nav>{body}</body></html>")


def write(records, path, peaks=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(records, peaks), encoding="utf-8")
    return path


def main_report(paths, out_path, peaks=None) -> Path:
    """`kmicro report RESULTS.json... -o report.html`: load, render, write; returns the path."""
    return write(load(paths), out_path, peaks)
