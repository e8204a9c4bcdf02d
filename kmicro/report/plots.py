"""Charts of result records as PNG bytes (matplotlib, Agg canvas; no framework imports).

Each function builds its own Figure (never pyplot: no global state, safe in threads and
tests) and returns PNG bytes for the HTML report to embed as data URIs.
"""
from __future__ import annotations

import io
import math
from collections import OrderedDict

from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from kmicro.report import tables

__all__ = ["comparison", "heatmap", "history", "roofline", "roofline_points", "spread",
           "stacked_shares"]

# A log axis once the slowest bar is this many times the fastest: linear hides the small ones.
LOG_SPREAD = 20.0
DPI = 100
GROUPS_PER_PANEL = 12


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _colors(names) -> dict:
    cycle = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
             "#8c8c8c", "#ccb974", "#64b5cd"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(names)}


def comparison(records, op, title=None) -> bytes:
    """Grouped bars per case x pass of one op: one bar per stack, median with IQR error bars.

    The error bar spans one IQR centred on the median (records keep the IQR, not the
    quartiles). Missing bars are stacks without an ok timing for that row. Long catalogs
    are wrapped into panels of GROUPS_PER_PANEL rows sharing one scale.
    """
    ops = [r for r in records if r.get("op") == op]
    rows = tables.case_rows(ops)
    stacks = [s for s in tables.stack_names(ops) if any(_ok_ms(by.get(s)) for _, _, by in rows)]
    colors = _colors(stacks)
    panels = [rows[i:i + GROUPS_PER_PANEL] for i in range(0, len(rows), GROUPS_PER_PANEL)]
    widest = max(len(p) for p in panels)
    fig = Figure(figsize=(min(13.0, max(6.0, 2 + widest * (0.25 * len(stacks) + 0.3))),
                          3.9 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    log = spread([_ok_ms(by.get(s)) for _, _, by in rows for s in stacks]) > LOG_SPREAD
    for ax, panel in zip(axes, panels):
        _bars(ax, panel, stacks, colors, log)
    axes[0].set_title(title or f"{op}: median time per stack (error bar = IQR)", fontsize=10,
                      loc="left")
    axes[0].legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def _ok_ms(record):
    """Median in ms of an ok record, else None."""
    if record and record["status"] == "ok" and record.get("median_s"):
        return record["median_s"] * 1e3
    return None


def _bars(ax, rows, stacks, colors, log):
    width = 0.8 / max(len(stacks), 1)
    for i, stack in enumerate(stacks):
        xs, ys, errs = [], [], []
        for x, (_, _, by_stack) in enumerate(rows):
            ms = _ok_ms(by_stack.get(stack))
            if ms:
                xs.append(x + (i - (len(stacks) - 1) / 2) * width)
                ys.append(ms)
                errs.append((by_stack[stack].get("iqr_s") or 0) * 1e3 / 2)
        ax.bar(xs, ys, width, yerr=errs, capsize=2, label=stack, color=colors[stack],
               error_kw={"elinewidth": 0.8})
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("ms (median, log scale)" if log else "ms (median)")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_row_label(c, p) for c, p, _ in rows], rotation=30, ha="right",
                       fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.grid(axis="y", alpha=0.3)


def _row_label(case, pass_name) -> str:
    short = tables.short_case(case)
    if len(short) > 38:
        short = short[:17] + "…" + short[-20:]
    return f"{short}\n{tables.PASS_LABELS.get(pass_name, pass_name)}"


def heatmap(records, title=None) -> bytes:
    """Every layer case x pass (rows) against every stack (columns), coloured by the ratio to
    the fastest stack of the row on a log scale, the ratio written in the cell; a cell that
    has no time shows its status (unsupported, error, ...) on white."""
    rows = [(c, p, by) for c, p, by in tables.case_rows(records) if p != "backward_only"]
    stacks = tables.stack_names(records)
    ratios = [[None] * len(stacks) for _ in rows]
    for i, (_, _, by_stack) in enumerate(rows):
        times = {s: _ok_ms(by_stack.get(s)) for s in stacks}
        best = min((t for t in times.values() if t), default=None)
        for j, s in enumerate(stacks):
            ratios[i][j] = times[s] / best if times[s] else None
    worst = max((r for row in ratios for r in row if r), default=1.0)
    fig = Figure(figsize=(3.2 + 1.25 * len(stacks), max(3.0, 1.4 + 0.2 * len(rows))),
                 layout="constrained")
    ax = fig.add_subplot()
    grid = [[r if r else float("nan") for r in row] for row in ratios]
    image = ax.imshow(grid, aspect="auto", cmap="OrRd", interpolation="nearest",
                      norm=LogNorm(vmin=1.0, vmax=max(worst, 2.0)))
    for i, (_, _, by_stack) in enumerate(rows):
        for j, s in enumerate(stacks):
            r = ratios[i][j]
            text = f"{r:.2g}x" if r and r < 10 else f"{r:.0f}x" if r else (
                by_stack[s]["status"][:5] if s in by_stack else "—")
            dark = bool(r) and math.log(r) > 0.6 * math.log(max(worst, 2.0))
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                    color="white" if dark else ("black" if r else "#888"))
    ax.set_xticks(range(len(stacks)))
    ax.set_xticklabels(stacks, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_heatmap_label(c, p) for c, p, _ in rows], fontsize=6.5)
    bar = fig.colorbar(image, ax=ax, label="time / fastest (log)",
                       shrink=min(0.5, 12 / len(rows)) if len(rows) > 24 else 0.8)
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    bar.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_title(title or "every layer case: time relative to the fastest stack", fontsize=10,
                 loc="left")
    return _png(fig)


def _heatmap_label(case, pass_name) -> str:
    text = f"{case.split('(')[0]} {tables.short_case(case)}"
    if len(text) > 46:
        text = text[:22] + "…" + text[-23:]
    return f"{text}  {tables.PASS_LABELS.get(pass_name, pass_name)}"


def roofline(records, peaks=None, title=None) -> bytes:
    """Achieved GFLOP/s against arithmetic intensity (FLOPs/byte) of every ok op record.

    `peaks` ({"matmul_gflops", "copy_gbps"}, see peaks.measure) adds the machine's compute
    ceiling (horizontal) and memory ceiling (diagonal: GB/s x FLOPs/byte). Without peaks only
    the points are drawn.
    """
    points = roofline_points(records)
    stacks = list(OrderedDict.fromkeys(p[0] for p in points))
    colors = _colors(stacks)
    markers = {"forward": "o", "forward_train": "s", "backward": "^"}
    fig = Figure(figsize=(9.5, 5.0), layout="constrained")
    ax = fig.add_subplot()
    for stack in stacks:
        for pass_name, marker in markers.items():
            sel = [(x, y) for s, p, x, y in points if s == stack and p == pass_name]
            if sel:
                ax.scatter(*zip(*sel), c=colors[stack], marker=marker, s=28, alpha=0.8,
                           label=f"{stack} {tables.PASS_LABELS[pass_name]}")
    xs = [p[2] for p in points] or [0.1, 10.0]
    _ceilings(ax, peaks, min(xs) / 3, max(xs) * 3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOPs / byte, textbook counts)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(title or "roofline: achieved rate vs arithmetic intensity", fontsize=10,
                 loc="left")
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _png(fig)


def roofline_points(records) -> list:
    """(stack, pass, FLOPs/byte, GFLOP/s) of ok op records with FLOPs and bytes."""
    points = []
    for r in records:
        if r.get("op") and r["status"] == "ok" and r.get("median_s") and r.get("flops") \
                and r.get("bytes"):
            points.append((r["stack"], r["pass"], r["flops"] / r["bytes"],
                           r["flops"] / r["median_s"] / 1e9))
    return points


def _ceilings(ax, peaks, x_lo, x_hi):
    if not peaks:
        return
    compute, memory = peaks.get("matmul_gflops"), peaks.get("copy_gbps")
    if compute:
        ax.axhline(compute, color="black", lw=1, ls="--")
        ax.annotate(f"matmul peak {compute:.0f} GFLOP/s", (x_lo, compute), fontsize=8,
                    va="bottom")
    if memory:
        xs = [x_lo, x_hi] if not compute else [x_lo, min(x_hi, max(compute / memory, x_lo))]
        ax.plot(xs, [memory * x for x in xs], color="black", lw=1, ls=":")
        ax.annotate(f"copy {memory:.1f} GB/s", (x_lo, memory * x_lo), fontsize=8, va="bottom")


def stacked_shares(shares, title="share of step time per layer type", steps=None) -> bytes:
    """Horizontal stacked bars, one per stack: seconds per layer type, labelled with shares.

    `shares` is {stack: {layer_type: seconds}} (the attribution feature's output).
    `steps` ({stack: seconds}, optional) marks each stack's measured step with a black tick,
    so a bar longer than its step (layers timed alone cost more than the whole) shows.
    """
    stacks = list(shares)
    types = list(OrderedDict.fromkeys(t for by_type in shares.values() for t in by_type))
    colors = _colors(types)
    fig = Figure(figsize=(8.5, 0.6 * len(stacks) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    left = [0.0] * len(stacks)
    for t in types:
        widths = [shares[s].get(t, 0.0) * 1e3 for s in stacks]
        bars = ax.barh(stacks, widths, left=left, color=colors[t], label=t)
        totals = [sum(shares[s].values()) * 1e3 or 1.0 for s in stacks]
        labels = [f"{w / tot:.0%}" if w / tot >= 0.08 else "" for w, tot in zip(widths, totals)]
        ax.bar_label(bars, labels=labels, label_type="center", fontsize=7, color="white")
        left = [a + b for a, b in zip(left, widths)]
    if steps:
        marked = [i for i, s in enumerate(stacks) if steps.get(s)]
        ax.scatter([steps[stacks[i]] * 1e3 for i in marked], marked, marker="|", s=900,
                   color="black", linewidths=2, zorder=3, label="measured step")
    ax.invert_yaxis()
    ax.set_xlabel("ms per step")
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _png(fig)


def spread(values) -> float:
    """max/min of the positive values (1.0 when fewer than two): used to pick a log axis."""
    positive = [v for v in values if v and v > 0 and math.isfinite(v)]
    return max(positive) / min(positive) if len(positive) > 1 else 1.0


def history(records, title) -> bytes:
    """Sweep records of one base stack: one panel per case, the ratio of each pass against
    the base along the variants (in sweep order), the 95 % interval as a band."""
    variants = list(OrderedDict.fromkeys(r["variant"] for r in sorted(records,
                                                                      key=lambda r: r["cell"])))
    by_case = OrderedDict()
    for r in records:
        if r["status"] == "ok":
            by_case.setdefault(r["case"], {}).setdefault(r["pass"], {})[r["variant"]] = r
    cols = min(3, max(1, len(by_case)))
    rows = -(-len(by_case) // cols) or 1
    fig = Figure(figsize=(4.2 * cols, 2.3 * rows + 0.6), layout="constrained")
    colors = _colors(tables.PASS_LABELS)
    for n, (case, passes) in enumerate(by_case.items()):
        ax = fig.add_subplot(rows, cols, n + 1)
        ax.axhline(1.0, color="#888", lw=0.8)
        for pass_name, got in passes.items():
            xs = [i for i, v in enumerate(variants) if v in got]
            mid = [got[variants[i]]["ratio"] for i in xs]
            ax.fill_between(xs, [got[variants[i]]["ci_low"] for i in xs],
                            [got[variants[i]]["ci_high"] for i in xs],
                            color=colors[pass_name], alpha=0.2, lw=0)
            ax.plot(xs, mid, marker="o", ms=3, color=colors[pass_name],
                    label=tables.PASS_LABELS.get(pass_name, pass_name))
        ax.set_xticks(range(len(variants)), [v.split("==")[-1].split("@")[-1][:10]
                                             for v in variants], fontsize=7, rotation=30)
        ax.set_title(case, fontsize=8, loc="left")
        ax.tick_params(axis="y", labelsize=7)
        if n == 0:
            ax.legend(fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    return _png(fig)
