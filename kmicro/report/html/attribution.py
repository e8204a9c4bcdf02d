"""The attribution section: per model, layer-type shares of the training step per stack."""
from __future__ import annotations

from collections import OrderedDict
from html import escape

from kmicro.analysis import attribution, contention
from kmicro.report import plots
from kmicro.report.html.markup import bullets, cell, image, seconds, table

__all__ = ["section"]


def section(recs) -> str:
    if not recs:
        return ""
    parts = ["<h2 id='attribution'>Attribution</h2><p class='note'>Forward+backward time of "
             "each layer type, timed layer by layer, as a share of the measured training step "
             "(bar labels: share of the bar; black tick: the measured step). "
             + escape(attribution.REMAINDER_MEANING) + "</p>"]
    for model in OrderedDict.fromkeys(r["model"] for r in recs):
        parts.append(_model(model, [r for r in recs if r["model"] == model]))
    return "".join(parts)


def _model(model, recs) -> str:
    """Plot, table and dominant types of one model; then its records that are not ok."""
    parts = [f"<h3>{escape(model)}</h3>"]
    stacks = [s for s in attribution.stacks_of(recs) if attribution.summary(recs, s)]
    if stacks:
        steps = {s: attribution.summary(recs, s)["step_s"] for s in stacks}
        png = plots.stacked_shares(attribution.shares_by_stack(recs), steps=steps,
                                   title=f"{model}: fwd+bwd per layer type; | = measured step")
        parts.append(image(png, f"{model} layer-type shares"))
        parts.append(table(["layer type"] + stacks + ["slowest/fastest"],
                           _rows(recs, stacks)))
        parts.append(bullets(attribution.dominant_lines(recs)))
    busy = contention.caveat_lines(recs)
    if busy:
        parts.append(bullets(busy, "bad"))
    problems = [f"{r['stack']} {r['case']} {r['pass']}: {r['status']}: {r['error']}"
                for r in recs if r["status"] != "ok"]
    if problems:
        parts.append(bullets(problems, "bad"))
    return "".join(parts)


def _rows(recs, stacks) -> list:
    """Per layer type (by mean share): time (share) per stack and slowest/fastest; then the
    remainder, the measured step and the ablated step."""
    rows = []
    for layer_type, cells, ratio in attribution.type_ranking(recs):
        rows.append([cell(layer_type)]
                    + [cell(f"{seconds(cells[s][0])} ({cells[s][1]:.0%})" if s in cells else "—",
                            "num") for s in stacks]
                    + [cell(f"{ratio:.2f}x" if ratio else "—", "num")])
    sums = {s: attribution.summary(recs, s) for s in stacks}
    rows.append([cell("remainder")] + [cell(f"{_signed(sums[s]['remainder_s'])} "
                                            f"({sums[s]['remainder_share']:+.0%})", "num")
                                       for s in stacks] + [cell("")])
    rows.append([cell("measured step")] + [cell(seconds(sums[s]["step_s"]), "num")
                                           for s in stacks] + [cell("")])
    cuts = {s: attribution.ablation(recs, s) for s in stacks}
    if any(cuts.values()):
        label = next(c["ablate"] for c in cuts.values() if c)
        rows.append([cell(f"step without {label}")] + [
            cell(f"{seconds(c['ablated_s'])} ({c['delta_pct']:+.0%})" if c else "—", "num")
            for c in cuts.values()] + [cell("")])
    return rows


def _signed(value) -> str:
    return ("-" if value < 0 else "") + seconds(abs(value))
