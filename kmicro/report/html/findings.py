"""The findings section at the top of the page: the overview heatmap, then one sentence per
finding (kmicro/report/findings.py), each linking to the table its numbers come from."""
from __future__ import annotations

from html import escape

from kmicro.report import findings, plots
from kmicro.report.html.markup import image

__all__ = ["section"]


def section(records, ops, peaks=None) -> str:
    found = findings.for_records(records, peaks)
    if not found and not ops:
        return ""
    items = "".join(
        f"<li{' class=bad' if f.problem else ''}>{escape(f.text)} "
        f"<a href='#{escape(f.anchor)}'>table</a></li>" for f in found)
    picture = ""
    if any(r["status"] == "ok" for r in ops):
        picture = ("<p class='note'>Every layer case and pass against every stack: colour and "
                   "number = time / the fastest stack's time in that row (log scale; 1x = "
                   "fastest). Grey text: no time (the status).</p>"
                   + image(plots.heatmap(ops), "heatmap of time relative to the fastest stack"))
    return (f"<h2 id='findings'>Findings</h2><ul>{items}</ul>" if found else
            "<h2 id='findings'>Findings</h2><p class='note'>No findings.</p>") + picture
