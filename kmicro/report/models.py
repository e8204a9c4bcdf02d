"""Rich tables of model records: this machine's epochs, then the reports' published rows.

Rows are stacks (with the device that actually ran them), columns are models. A cell is
seconds per 50,000-sample epoch with ms per step and the ratio to the fastest stack for
that model, and the peak bytes one train step holds where the stack can tell; BN/no-BN divides resnet_bn by resnet_nobn per stack, report 001's question.
"""
from __future__ import annotations

from collections import OrderedDict

from rich.table import Table
from rich.text import Text

from kmicro.models import published
from kmicro.report.tables import format_bytes

__all__ = ["BN_PAIR", "caption", "measured_table", "problems", "published_table"]

BN_PAIR = ("resnet_bn", "resnet_nobn")


def _by_stack(records) -> "OrderedDict":
    rows = OrderedDict()
    for r in records:
        rows.setdefault(r["stack"], {})[r["model"]] = r
    return rows


def _columns(records) -> list:
    return list(OrderedDict.fromkeys(r["model"] for r in records))


def _header(records, model) -> str:
    r = next(r for r in records if r["model"] == model)
    return "{}\n(b{}{})".format(model, r["batch_size"], ", aug" if r["augment"] else "")


def _best(records, model):
    times = [r["epoch_s"] for r in records if r["model"] == model and r["status"] == "ok"]
    return min(times) if times else None


def _cell(record, best) -> Text:
    if record is None:
        return Text("—", style="dim")
    if record["status"] != "ok":
        return Text(record["status"], style="dim" if record["status"] == "unsupported" else "red")
    ratio = record["epoch_s"] / best
    text = "{}{:.1f} s ({:.1f} ms) {:.2g}x\neval {:.1f} s".format(
        "~" if record.get("noisy") else "", record["epoch_s"], record["step_s"] * 1e3, ratio,
        record["eval_s"])
    if record.get("peak_bytes") is not None:
        text += "\nstep holds {}".format(format_bytes(record["peak_bytes"]))
    return Text(text, style="bold green" if ratio == 1 else "")


def _bn_ratio(by_model) -> Text:
    bn, nobn = (by_model.get(m) for m in BN_PAIR)
    if not (bn and nobn and bn["status"] == nobn["status"] == "ok"):
        return Text("—", style="dim")
    return Text("{:.2f}x\neval {:.2f}x".format(bn["epoch_s"] / nobn["epoch_s"],
                                               bn["eval_s"] / nobn["eval_s"]))


def _device(by_model) -> str:
    devices = sorted({r["device"] for r in by_model.values() if r.get("device")})
    return "/".join(devices) or "?"


def measured_table(records) -> Table:
    models = _columns(records)
    # Long explanations go to caption(): rich wraps a title to the table's width.
    table = Table(title="kmicro models — this machine", title_justify="left")
    table.add_column("stack (device)")
    for m in models:
        table.add_column(_header(records, m), justify="right")
    show_ratio = all(m in models for m in BN_PAIR)
    if show_ratio:
        table.add_column("BN/no-BN", justify="right")
    for stack, by_model in _by_stack(records).items():
        cells = [_cell(by_model.get(m), _best(records, m)) for m in models]
        if show_ratio:
            cells.append(_bn_ratio(by_model))
        table.add_row("{} ({})".format(stack, _device(by_model)), *cells)
    return table


def caption(records) -> str:
    sources = sorted({r["data"] for r in records})
    data = "; ".join("synthetic CIFAR-shaped data (seeded uint8 /255, no CIFAR-10 on disk)"
                     if s == "synthetic" else "CIFAR-10 from " + s for s in sources)
    full = {r["full_epoch"] for r in records}
    steps = sorted({r["steps"] for r in records if not r["full_epoch"]})
    how = "whole epochs measured" if full == {True} else \
        "epochs extrapolated from {} timed steps (median x 50,000 / batch)".format(
            "/".join(map(str, steps)))
    return ("cells: s/epoch of 50,000 samples (ms/step) ratio to the fastest stack; eval = 10,000 "
            "samples; ~ = noisy (IQR/median > 10%).\ndata: {}. {}; first step excluded "
            "(compile_s in the JSON).".format(data, how))


def published_table(models) -> Table:
    """The reports' rows, for the same model columns (plus any the reports have)."""
    columns = list(models) + [m for m in ("cifar10_cnn",) + BN_PAIR if m not in models]
    table = Table(title="published by the reports — their hardware and versions, not this "
                        "machine", title_justify="left", caption=published.FOOTNOTE,
                  caption_justify="left")
    for col in ("report", "stack", "hardware", *columns, "BN/no-BN", "eval"):
        table.add_column(col, justify="left" if col in ("report", "stack", "hardware") else "right")
    for row in published.ROWS:
        table.add_row(row.report, row.stack, row.hardware,
                      *[row.cell(c) for c in columns + ["bn_ratio", "eval"]])
    return table


def problems(records) -> list:
    return ["{} {}: {}: {}".format(r["stack"], r["case"], r["status"], r["error"])
            for r in records if r["status"] != "ok"]
