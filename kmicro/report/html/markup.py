"""Escaped HTML building blocks the sections share: cells, tables, lists, images."""
from __future__ import annotations

import base64
import json
from html import escape

from kmicro.report.tables import format_time

__all__ = ["bullets", "cell", "image", "key_values", "seconds", "table"]


def cell(text, cls=None, title=None, tag="td") -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' title="{escape(str(title))}"' if title else ""
    return f"<{tag}{attrs}>{escape(str(text))}</{tag}>"


def table(header, rows) -> str:
    """`header`: texts; `rows`: lists of ready <td> strings (from cell)."""
    head = "".join(cell(h, tag="th") for h in header)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def key_values(mapping) -> str:
    """A two-column table of a mapping; a `meaning` row stands out."""
    rows = []
    for k, v in mapping.items():
        cls = ' class="meaning"' if k == "meaning" else ""
        text = v if isinstance(v, str) else json.dumps(v, default=str)
        rows.append(f"<tr{cls}>{cell(k, tag='th')}{cell(text)}</tr>")
    return f"<table><tbody>{''.join(rows)}</tbody></table>"


def bullets(lines, cls=None) -> str:
    attrs = f" class='{cls}'" if cls else ""
    return "<ul>" + "".join(f"<li{attrs}>{escape(line)}</li>" for line in lines) + "</ul>"


def image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def seconds(value) -> str:
    return format_time(value) if isinstance(value, (int, float)) else "—"
