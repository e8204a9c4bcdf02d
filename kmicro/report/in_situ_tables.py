"""The in-situ part of `kmicro attribute`'s output: the profiled step split by layer type per
stack, beside the same layer types timed alone, the profiler's overhead, and where the two
methods disagree (kmicro.analysis.in_situ has the numbers)."""
from __future__ import annotations

from rich.table import Table

from kmicro.analysis import attribution, in_situ
from kmicro.report.attribution_tables import _ms

__all__ = ["in_situ_table", "in_situ_lines", "print_in_situ"]


def _stacks(records) -> list:
    return [st for st in attribution.stacks_of(records) if in_situ.profiled_step(records, st)]


def in_situ_table(records) -> Table:
    stacks = _stacks(records)
    table = Table(title=f"{records[0]['model']}: the profiled train step by layer type, in situ"
                        " (isolated: the layers timed alone, share of the unprofiled step)",
                  title_justify="left")
    table.add_column("layer type / part")
    for st in stacks:
        table.add_column(f"{st} in situ", justify="right")
        table.add_column(f"{st} isolated", justify="right")
    per_stack = {st: _folded(in_situ.by_type(records, st)) for st in stacks}
    alone = {st: attribution.summary(records, st) for st in stacks}
    types = dict.fromkeys(t for cells in per_stack.values() for t in cells)
    for t in sorted(types, key=lambda t: (not in_situ.is_layer(t), -max(
            per_stack[st].get(t, {}).get("share", 0.0) for st in stacks))):
        row = [t]
        for st in stacks:
            cell = per_stack[st].get(t)
            row.append(f"{_ms(cell['time_s'])} {cell['share']:.0%}" if cell else "—")
            s = alone[st]
            iso = s and s["by_type_s"].get(t)
            row.append(f"{_ms(iso)} {iso / s['step_s']:.0%}" if iso else "—")
        table.add_row(*row)
    table.add_section()
    steps = {st: in_situ.profiled_step(records, st) for st in stacks}
    table.add_row("step, profiler on", *[c for st in stacks for c in (
        _ms(steps[st]["median_s"]), "")])
    table.add_row("step, profiler off", *[c for st in stacks for c in (
        _ms(steps[st]["unprofiled_s"]), _ms(alone[st]["step_s"]) if alone[st] else "—")])
    table.add_row("profiler overhead", *[c for st in stacks for c in (
        f"{steps[st]['profiler_overhead']:+.0%}", "")])
    table.add_row("profile / clock", *[c for st in stacks for c in (
        f"{steps[st]['accounted']:.0%}", "")])
    return table


SMALL = 0.005  # parts below this share of the step are one row
CHEAPER = "cheaper inside the step (fusion, shared work)"
DEARER = "dearer inside the step (overhead, stalls)"


def _folded(cells) -> dict:
    """Parts that are not layers and under SMALL of the step folded into one row (Theano's
    by-op-class parts are many and mostly tiny)."""
    out, small = {}, {"time_s": 0.0, "share": 0.0, "noise_s": 0.0}
    for t, cell in cells.items():
        if not in_situ.is_layer(t) and cell["share"] < SMALL:
            for k in small:
                small[k] += cell[k]
        else:
            out[t] = cell
    if small["time_s"]:
        out[f"(other parts, each < {SMALL:.1%})"] = small
    return out


def in_situ_lines(records) -> list:
    lines = []
    for st in _stacks(records):
        for phase, step in (("train", "training step"), ("test", "evaluation step")):
            top = in_situ.dominant_type(records, st, phase)
            if top:
                lines.append(f"{st}: {top[0]} takes {top[1]:.0%} of the profiled {step}"
                             + _bn_clause(records, st, phase, top[0]))
        lines += _caveats(records, st)
        for t, mine, alone, diff in in_situ.versus_isolated(records, st):
            why = CHEAPER if diff < 0 else DEARER
            lines.append(f"{st}: {t} in situ {_ms(mine)} vs {_ms(alone)} alone "
                         f"({diff:+.0%} of the step: {why})")
    return lines


def _caveats(records, stack) -> list:
    """Where the profile's split is too incomplete to read a layer's share from it."""
    out = []
    for phase, step in (("train", "training step"), ("test", "evaluation step")):
        cells = in_situ.by_type(records, stack, phase)
        outside = cells.get("(framework)", {}).get("share", 0.0)
        unplaced = sum(c["share"] for t, c in cells.items()
                       if not in_situ.is_layer(t) and t.startswith(("(other ops", "(batch-axis")))
        if outside > 0.5:
            out.append(f"{stack}: {outside:.0%} of the {step} lies outside every traced op: "
                       "its split is incomplete")
        if unplaced > 0.1:
            out.append(f"{stack}: {unplaced:.0%} of the {step} is ops the profile could not "
                       "tie to a layer; layer shares there are lower bounds")
    return out


def _bn_clause(records, stack, phase, top) -> str:
    """The seed question: BatchNormalization's share, when the model has it."""
    share = in_situ.share_of(records, stack, "BatchNormalization", phase)
    sums = in_situ.share_of(records, stack, "(batch-axis sums)", phase)
    if top == "BatchNormalization" or not share and not sums:
        return ""
    text = f"; BatchNormalization {share:.0%}"
    return text + (f" (+ {sums:.0%} batch-axis sums, BN's or bias gradients)" if sums else "")


def print_in_situ(records, console):
    if not _stacks(records):
        return
    console.print(in_situ_table(records))
    lines = in_situ_lines(records)
    if lines:
        console.print("in situ:", *lines, sep="\n  ", soft_wrap=True)
    console.print("in situ: op time inside the real step from the backend's profiler; "
                  "(framework) is the step's time outside every op range; the parts add up "
                  "to the profiled step.", soft_wrap=True)
