"""The document: inline CSS, title, navigation, summary, then every section in order."""
from __future__ import annotations

import time
from html import escape
from pathlib import Path

from kmicro.report.html import (ab, attribution, diagnose, environment, findings, models, ops,
                                sweep)
from kmicro.report.html.loading import group
from kmicro.report.html.markup import cell, table
from kmicro.report.tables import status_counts

__all__ = ["CSS", "render", "write"]

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

# (anchor, link text, kind the section shows; None: always there)
NAV = (("findings", "findings", None), ("summary", "summary", None), ("ops", "layers", "op"), ("plots", "plots", "op"),
       ("models", "models", "model"), ("attribution", "attribution", "attribution"),
       ("diagnose", "diagnose", "diagnose"), ("history", "history", "sweep"), ("ab", "A/B", "ab"),
       ("environment", "environment", None),
       ("reference", "reference", None))


def render(records, peaks=None) -> str:
    """The whole page. `peaks` ({"matmul_gflops", "copy_gbps"}, see peaks.measure) draws the
    machine's ceilings on the roofline."""
    groups = group(records)
    shown = dict(groups, sweep=[r for r in groups["ab"] if r.get("variant")])
    nav = " ".join(f"<a href='#{anchor}'>{escape(text)}</a>" for anchor, text, kind in NAV
                   if kind is None or shown[kind])
    body = (findings.section(records, groups["op"], peaks) + _summary(groups, records)
            + ops.section(groups["op"])
            + ops.plots_section(groups["op"], peaks) + models.section(groups["model"])
            + attribution.section(groups["attribution"])
            + diagnose.diagnose_section(groups["diagnose"]) + sweep.section(groups["ab"])
            + ab.section(groups["ab"])
            + diagnose.other_section(groups["other"])
            + environment.section(records) + models.reference_section())
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>kmicro report</title><style>{CSS}</style></head><body>"
            f"<h1>kmicro report</h1><nav>{nav}</nav>{body}</body></html>")


def write(records, path, peaks=None) -> Path:
    """Renders the page into `path` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(records, peaks), encoding="utf-8")
    return path


def _summary(groups, records) -> str:
    """When the page was made, how many records of each kind, and their statuses."""
    times = sorted(r["time"] for r in records if r.get("time"))
    span = f"{times[0]} – {times[-1]}" if times else "unknown"
    rows = [[cell(kind), cell(len(recs), "num"), cell(status_counts(recs))]
            for kind, recs in groups.items() if recs]
    return (f"<h2 id='summary'>Summary</h2><p>Generated {escape(time.strftime('%Y-%m-%d %H:%M'))}"
            f" from {len(records)} records measured {escape(span)}.</p>"
            + table(["kind", "records", "per status"], rows))
