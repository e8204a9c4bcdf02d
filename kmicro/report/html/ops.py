"""The layers section (op tables, channels_last vs channels_first, problems) and the plots."""
from __future__ import annotations

from collections import OrderedDict
from html import escape

from kmicro.report import plots, tables
from kmicro.report.findings import anchor
from kmicro.report.html.markup import bullets, cell, image, seconds, table

__all__ = ["plots_section", "section"]

NOTE = ("<p class='note'>Median ± IQR per call, ratio to the fastest stack in brackets "
        "(fastest in green); ~ marks a noisy cell (IQR/median above the threshold). "
        "<code>bwd (diff)</code> = fwd+bwd minus fwd (train), derived. Hover a failed cell "
        "for its error.</p>")
# A cf/cl ratio this far from 1 is worth a look (bold).
LAYOUT_FLAG = 0.25


def section(ops) -> str:
    if not ops:
        return ""
    problems = tables.problems(ops)
    listing = "<h3 id='problems'>Problems</h3>" + bullets(problems) if problems else ""
    return "<h2 id='ops'>Layers</h2>" + NOTE + _op_tables(ops) + _layout(ops) + listing


MEMORY_NOTE = ("<p class='note'>Peak bytes one call holds beyond its inputs and weights, ratio "
               "to the least in brackets; each stack counts with its own allocator (hover a "
               "cell for how).</p>")


def _op_tables(ops) -> str:
    """Per layer family a heading, per op in it a table of times (rows case x pass, a cell
    per stack), then one of peak bytes where any stack measured them."""
    stacks = tables.stack_names(ops)
    header = ["case", "pass"] + [f"{s} ({tables.stack_device(ops, s)})" for s in stacks]
    by_family = OrderedDict()
    for case, pass_name, by_stack in tables.case_rows(ops):
        values = [v for v in (tables.metric_value(r, "time") for r in by_stack.values()) if v]
        best = min(values) if values else None
        row = [cell(tables.short_case(case)), cell(tables.PASS_LABELS[pass_name])]
        time_row = row + [_op_cell(by_stack.get(s), best) for s in stacks]
        family = tables.family_of(next(iter(by_stack.values())))
        op = by_family.setdefault(family, OrderedDict()).setdefault(case.split("(")[0], ([], []))
        op[0].append(time_row)
        held = [r.get("peak_bytes") for r in by_stack.values() if r["status"] == "ok"]
        if any(b is not None for b in held):
            least = min(b for b in held if b is not None)
            op[1].append(row + [_memory_cell(by_stack.get(s), least) for s in stacks])
    return "".join(
        f"<h3 id='{anchor('family', family)}'>{escape(family)}</h3>"
        + "".join(f"<h4 id='{anchor('op', op)}'>{escape(op)}</h4>" + table(header, times)
                  + (MEMORY_NOTE + table(header, memory) if memory else "")
                  for op, (times, memory) in by_op.items())
        for family, by_op in by_family.items())


def _memory_cell(record, least) -> str:
    if record is None or record["status"] != "ok":
        return cell("—", "num dim")
    held = record.get("peak_bytes")
    if held is None:
        return cell("not measured", "num dim", title=record.get("memory_method"))
    ratio = f" ({held / least:.2g}x)" if least else ""
    return cell(tables.format_bytes(held) + ratio, "num best" if held == least else "num",
                title=record.get("memory_method"))


def _op_cell(record, best) -> str:
    if record is None:
        return cell("—", "num dim")
    if record["status"] != "ok":
        cls = "num dim" if record["status"] in tables.QUIET else "num bad"
        return cell(record["status"], cls, title=record.get("error") or record["status"])
    median, iqr = record["median_s"], record.get("iqr_s")
    text = ("~" if record.get("noisy") else "") + tables.format_time(median)
    text += f" ± {tables.format_time(iqr)}" if iqr else ""
    ratio = median / best
    cls = "num best" if ratio == 1 else "num"
    return cell(f"{text} ({ratio:.2g}x)", cls, title=f"{record.get('n_samples')} samples, "
                f"compile {seconds(record.get('compile_s'))}, "
                f"max rel err {record.get('max_rel_err')}")


def _layout(ops) -> str:
    pairs = tables.layout_pairs(ops)
    if not pairs:
        return ""
    stacks = tables.stack_names(ops)
    rows = [[cell(f"{op} @ {'x'.join(map(str, shape))} (NHWC)"),
             cell(tables.PASS_LABELS[p])] + [_layout_cell(by.get(s, {})) for s in stacks]
            for (op, _, shape, p), by in pairs]
    return ("<h3 id='layout'>channels_last → channels_first</h3><p class='note'>Same layer and shape in "
            "both layouts: cl time → cf time (cf/cl ratio; bold when they differ by more "
            f"than {LAYOUT_FLAG:.0%}). Report 001's question.</p>"
            + table(["case", "pass"] + stacks, rows))


def _layout_cell(by_format) -> str:
    cl, cf = by_format.get("channels_last"), by_format.get("channels_first")
    if not (cl and cf):
        return cell("—", "num dim")
    if cl["status"] != "ok" or cf["status"] != "ok":
        return cell(f"cl {cl['status']} / cf {cf['status']}", "num bad",
                    title=cl.get("error") or cf.get("error"))
    ratio = cf["median_s"] / cl["median_s"]
    text = f"{seconds(cl['median_s'])} → {seconds(cf['median_s'])} ({ratio:.2f}x)"
    return cell(text, "num flag" if abs(ratio - 1) > LAYOUT_FLAG else "num")


def plots_section(ops, peaks) -> str:
    """A comparison chart per op with an ok record, then the roofline."""
    if not any(r["status"] == "ok" for r in ops):
        return ""
    parts = ["<h2 id='plots'>Plots</h2>"]
    for op in OrderedDict.fromkeys(r["op"] for r in ops):
        if any(r["op"] == op and r["status"] == "ok" for r in ops):
            parts.append(image(plots.comparison(ops, op), f"{op} stack comparison"))
    if plots.roofline_points(ops):
        parts.append(f"<p class='note'>Roofline with textbook FLOPs and bytes; "
                     f"{escape(_peaks_note(peaks))}.</p>"
                     + image(plots.roofline(ops, peaks), "roofline"))
    return "".join(parts)


def _peaks_note(peaks) -> str:
    if not peaks:
        return "no machine peaks given: points only"
    return ("measured peaks: matmul {matmul_gflops:.1f} GFLOP/s, copy {copy_gbps:.1f} GB/s "
            "(NumPy on the host CPU)".format(**peaks))
