"""One self-contained HTML file of result records: tables, plots, environment, references.

No external URL, no script: CSS is inline and plots are base64 PNG data URIs, so the file
opens from disk, from a CI artifact or an e-mail. Every text is escaped.

page draws the document around the sections; loading reads result files and groups records
by kind; markup holds the escaped building blocks; one module per section: findings (the
sentences and the heatmap, first), ops (layers, layouts, plots), models (model epochs,
published and reference numbers), attribution, diagnose (diagnose and unknown records), ab,
environment.
"""
from kmicro.report.html.loading import group, kind, load
from kmicro.report.html.page import render, write

__all__ = ["group", "kind", "load", "render", "write"]
