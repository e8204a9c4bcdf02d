"""The models section (this run's epochs) and the reference box (numbers of other runs)."""
from __future__ import annotations

from html import escape

from kmicro.models import published
from kmicro.report.html.markup import cell, seconds, table
from kmicro.report.tables import format_bytes

__all__ = ["FIELDS", "reference_section", "section"]

FIELDS = ("epoch_s", "step_s", "eval_s", "compile_s")


def section(models) -> str:
    if not models:
        return ""
    rows = []
    for r in models:
        ok = r["status"] == "ok"
        status = cell(r["status"], None if ok else "bad", title=r.get("error"))
        rows.append([cell(r["stack"]), cell(r.get("case") or r["model"]), status]
                    + [cell(seconds(r.get(f)) if ok else "—", "num") for f in FIELDS]
                    + [_memory(r) if ok else cell("—", "num"),
                       cell(f"{r.get('device') or '?'} {r.get('device_name') or ''}")])
    header = ["stack", "model", "status", "epoch", "step", "eval", "compile", "step holds",
              "device"]
    return ("<h2 id='models'>Models</h2><p class='note'>Per stack and model: epoch (measured "
            "or extrapolated from the median step), median training step, evaluation, "
            "first-call compile, the peak bytes one training step holds beyond its batch "
            "(hover for how they were counted).</p>" + table(header, rows))


def _memory(record) -> str:
    held = record.get("peak_bytes")
    text = "—" if held is None else format_bytes(held)
    return cell(text, "num", title=record.get("memory_method"))


def _of_report(number) -> list:
    return [row for row in published.ROWS if row.report == number]


def _cells(texts, first_number) -> list:
    """Rows of cells; columns from `first_number` on are numbers (right-aligned)."""
    return [[cell(c, "num" if i >= first_number else None) for i, c in enumerate(t)]
            for t in texts]


def reference_section() -> str:
    """Never measured by the run the page shows: published by the reports, or measured by
    this project earlier (kmicro.models.published)."""
    report_000 = [(r.stack, r.hardware, r.cell("cifar10_cnn")) for r in _of_report("000")]
    report_001 = [(r.stack, r.cell("resnet_bn"), r.cell("resnet_nobn")) for r in _of_report("001")]
    return ("<h2 id='reference'>Published and reference numbers</h2><div class='ref'>"
            "<p><b>Not measured by this run.</b> Other machines and versions; for orientation "
            "only.</p><h3>Report 000: Keras 1.2.1, cifar10_cnn, batch 32 with augmentation, "
            "s/epoch (published)</h3>"
            + table(["stack", "hardware", "epoch"], _cells(report_000, 2))
            + "<h3>Report 001: cut-down ResNet, GTX 1080 Max-Q, s/epoch (published)</h3>"
            + table(["backend", "with BN", "without BN"], _cells(report_001, 1))
            + "<p class='note'>Evaluation of 10,000 samples: Theano 4 s with BN, 0 s without. "
            "* Keras 2's progress bar printed seconds per sample as '/step'.</p>"
            "<h3>Earlier measurements on a 2-core CPU machine, no GPU (measured 2026-11-30, "
            "cut-down ResNet, batch 32, ms per training step, noisy)</h3>"
            + table(["stack", "no BN", "BN", "ratio"], _cells(published.CPU_MEASURED, 1))
            + f"<p class='note'>{escape(published.CPU_MEASURED_REPORT_000, quote=False)}</p></div>")
