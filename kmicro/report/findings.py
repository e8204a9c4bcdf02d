"""Findings: the answers a user came for, as short sentences generated from the records.

Which stack is slow at what and by how much, where backward dominates, what the layout
changes, which calls are dispatch-bound, how far below the machine's roofline a stack runs,
what failed, which seed-report effect reproduces, what an A/B run found. Each finding carries
its numbers and the HTML anchor of the table they come from. Only what the data supports at
its noise: two timings differ when their bands (median ± IQR/2) do not overlap; a finding
whose difference is inside them says "within noise".
"""
from __future__ import annotations

import statistics
from collections import Counter, OrderedDict
from dataclasses import dataclass

from kmicro.core import reference
from kmicro.core.records import kind_of
from kmicro.models import published
from kmicro.report import tables
from kmicro.report.ab_tables import min_effect_of, resolved, unsure

__all__ = ["Finding", "ab_findings", "anchor", "for_records", "model_findings", "op_findings"]

LAYOUT_EFFECT = 0.25  # a cf/cl ratio this far from 1 is named
DISPATCH_FLOOR = 3.0  # a stack whose fastest call is this many times the others' is named
NEAR_FLOOR = 1.5  # cases within this factor of their stack's fastest call are dispatch-bound
BACKWARD_SHARE = 2 / 3  # backward at least twice the forward
LOW_ROOFLINE = 0.05  # below 5 % of the attainable rate
MEMORY_EFFECT = 1.5  # a stack holding this many times another's peak bytes in one row is named
FAILED = ("wrong", "error", "timeout")


@dataclass(frozen=True)
class Finding:
    text: str
    anchor: str  # id of the HTML table the numbers come from
    problem: bool = False  # a failure, not a measurement


def anchor(*parts) -> str:
    """An HTML id from free text: letters, digits and dashes."""
    text = "-".join(str(p) for p in parts).lower()
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


def for_records(records, peaks=None) -> list:
    """Every finding the records support, failures first."""
    by_kind = OrderedDict((k, []) for k in ("op", "model", "ab"))
    for r in records:
        if kind_of(r) in by_kind:
            by_kind[kind_of(r)].append(r)
    found = (op_findings(by_kind["op"], peaks) + model_findings(by_kind["model"])
             + ab_findings(by_kind["ab"]))
    return [f for f in found if f.problem] + [f for f in found if not f.problem]


def op_findings(ops, peaks=None) -> list:
    if not ops:
        return []
    return (_failures(ops) + _disagreements(ops) + _slowest(ops) + _dispatch(ops)
            + _backward(ops) + _layouts(ops) + _roofline(ops, peaks) + _memory(ops))


def _t(seconds) -> str:
    return tables.format_time(seconds)


def _ok(record) -> bool:
    return bool(record) and record["status"] == "ok" and bool(record.get("median_s"))


def _band(record) -> tuple:
    half = (record.get("iqr_s") or 0.0) / 2
    return record["median_s"] - half, record["median_s"] + half


def _apart(slow, fast) -> bool:
    """The slower record's band lies wholly above the faster one's."""
    return _band(slow)[0] > _band(fast)[1]


def _case(record) -> str:
    """'dropout rate=0.5 @ 32x512'."""
    return f"{record['case'].split('(')[0]} {tables.short_case(record['case'])}"


def _where(record) -> str:
    return f"{tables.PASS_LABELS[record['pass']]} of {_case(record)}"


def _failures(ops) -> list:
    bad = [r for r in ops if r["status"] in FAILED]
    if not bad:
        return []
    counts = Counter(f"{r['stack']} {r['status']}" for r in bad)
    first = bad[0]
    text = (f"{len(bad)} pass{'es' if len(bad) > 1 else ''} did not produce a valid time: "
            + ", ".join(f"{n} {what}" for what, n in counts.items())
            + f" (first: {first['stack']} {first['case']} {first['pass']}: "
              f"{str(first.get('error') or '')[:120]})")
    return [Finding(text, "problems", problem=True)]


AGREEMENT = 1e-5  # float64 twins of one layer on two backends: rounding differs at ~1e-14


def _disagreements(ops) -> list:
    """Layers checked against their float64 twin, whose twins' outputs differ between stacks
    of one Keras major version: the twin check cannot see a backend computing a layer
    differently (it is that backend's own layer), this comparison does."""
    groups = OrderedDict()
    for r in ops:
        if r["status"] == "ok" and r.get("reference_probe"):
            major = str((r.get("versions") or {}).get("keras", "?")).split(".")[0]
            groups.setdefault((r["case"], r["pass"], major), []).append(r)
    out = []
    for (case, pass_name, _), found in groups.items():
        first = found[0]
        for other in found[1:]:
            gap = reference.probe_gap(first["reference_probe"], other["reference_probe"])
            if gap > AGREEMENT:
                out.append(Finding(
                    f"{case.split('(')[0]}: {first['stack']} and {other['stack']} compute "
                    f"different {tables.PASS_LABELS[pass_name]} results for "
                    f"{_case(first)} (float64, relative difference {gap:.2g}): one of "
                    "them computes this layer differently.", anchor("op", case.split("(")[0]),
                    problem=True))
                break
    return out


def _rows_by_op(ops) -> "OrderedDict":
    by_op = OrderedDict()
    for case, pass_name, by_stack in tables.case_rows(ops):
        if pass_name != "backward_only":
            by_op.setdefault(case.split("(")[0], []).append(by_stack)
    return by_op


def _slowest(ops) -> list:
    """Per layer type: the widest gap between the slowest and the fastest stack of one row,
    and which stack is slowest most often; the layers with the widest gaps first."""
    out = []
    for op, rows in _rows_by_op(ops).items():
        widest, slowest_count, compared = None, Counter(), 0
        for by_stack in rows:
            ok = [r for r in by_stack.values() if _ok(r)]
            if len(ok) < 2:
                continue
            compared += 1
            fast = min(ok, key=lambda r: r["median_s"])
            slow = max(ok, key=lambda r: r["median_s"])
            slowest_count[slow["stack"]] += 1
            if widest is None or slow["median_s"] / fast["median_s"] > widest[0]:
                widest = (slow["median_s"] / fast["median_s"], slow, fast)
        if widest is None:
            continue
        ratio, slow, fast = widest
        stack, n = slowest_count.most_common(1)[0]
        noise = "" if _apart(slow, fast) else " (within noise)"
        out.append((ratio, Finding(
            f"{op}: {slow['stack']} is {ratio:.3g}x slower than {fast['stack']} at "
            f"{_where(slow)} ({_t(slow['median_s'])} vs {_t(fast['median_s'])}){noise}; "
            f"{stack} is the slowest in {n} of {compared} {op} rows.", anchor("op", op))))
    return [f for _, f in sorted(out, key=lambda pair: -pair[0])]


def _memory(ops) -> list:
    """Per layer type, the row where one stack holds the most memory against another (both
    measured, both above zero), when it is at least MEMORY_EFFECT times: memory is what makes
    a model run out of it on one backend. Each stack counts by its own allocator
    (`memory_method`)."""
    out = []
    for op, rows in _rows_by_op(ops).items():
        widest = None
        for by_stack in rows:
            held = [r for r in by_stack.values() if r["status"] == "ok" and r.get("peak_bytes")]
            if len(held) < 2:
                continue
            most = max(held, key=lambda r: r["peak_bytes"])
            least = min(held, key=lambda r: r["peak_bytes"])
            ratio = most["peak_bytes"] / least["peak_bytes"]
            if widest is None or ratio > widest[0]:
                widest = (ratio, most, least)
        if widest and widest[0] >= MEMORY_EFFECT:
            ratio, most, least = widest
            out.append((ratio, Finding(
                f"{op}: {most['stack']}'s {_where(most)} holds {ratio:.3g}x {least['stack']}'s "
                f"({tables.format_bytes(most['peak_bytes'])} vs "
                f"{tables.format_bytes(least['peak_bytes'])} at its peak, each by its own "
                "allocator's count).", anchor("op", op))))
    return [f for _, f in sorted(out, key=lambda pair: -pair[0])]


def _dispatch(ops) -> list:
    """Stacks whose fastest forward call is far above the other stacks': per-call overhead,
    not the layer's work, sets the time of their smallest cases."""
    floors = {}
    for r in ops:
        if _ok(r) and r["pass"] == "forward":
            if r["stack"] not in floors or r["median_s"] < floors[r["stack"]]["median_s"]:
                floors[r["stack"]] = r
    if len(floors) < 2:
        return []
    lowest = min(floors.values(), key=lambda r: r["median_s"])
    out = []
    for stack, floor in floors.items():
        if floor["median_s"] < DISPATCH_FLOOR * lowest["median_s"] or not _apart(floor, lowest):
            continue
        mine = [r for r in ops if _ok(r) and r["stack"] == stack and r["pass"] == "forward"]
        near = [r for r in mine if r["median_s"] <= NEAR_FLOOR * floor["median_s"]]
        out.append(Finding(
            f"{stack}: no forward call takes under {_t(floor['median_s'])} "
            f"({_case(floor)}), {floor['median_s'] / lowest['median_s']:.3g}x "
            f"{lowest['stack']}'s fastest ({_t(lowest['median_s'])}); {len(near)} of its "
            f"{len(mine)} forward cases lie within {NEAR_FLOOR}x of that floor: per-call "
            "dispatch, not the layer's work, sets their time.", "ops"))
    return out


def _backward(ops) -> list:
    """Per stack: the fwd+bwd passes whose backward is at least twice the forward."""
    by_stack = OrderedDict()
    for r in ops:
        if _ok(r) and r["pass"] == "backward" and r.get("backward_s") is not None \
                and r["backward_s"] > (r.get("iqr_s") or 0.0):
            by_stack.setdefault(r["stack"], []).append(r)
    out = []
    for stack, recs in by_stack.items():
        heavy = [r for r in recs if r["backward_s"] / r["median_s"] >= BACKWARD_SHARE]
        if not heavy:
            continue
        top = max(heavy, key=lambda r: r["backward_s"] / r["median_s"])
        share = top["backward_s"] / top["median_s"]
        out.append(Finding(
            f"{stack}: backward dominates {len(heavy)} of {len(recs)} fwd+bwd passes; most at "
            f"{_case(top)}: {share:.0%} of "
            f"{_t(top['median_s'])} is backward, {share / (1 - share):.3g}x the forward.",
            anchor("op", top["op"])))
    return out


def _layouts(ops) -> list:
    """Per layer type that ran in both layouts: the median cf/cl ratio of each stack."""
    ratios = OrderedDict()  # op -> stack -> [(ratio, apart)]
    for (op, _, _, _), by_stack in tables.layout_pairs(ops):
        for stack, by_format in by_stack.items():
            cl, cf = by_format.get("channels_last"), by_format.get("channels_first")
            if _ok(cl) and _ok(cf):
                apart = _apart(cf, cl) or _apart(cl, cf)
                ratios.setdefault(op, OrderedDict()).setdefault(stack, []).append(
                    (cf["median_s"] / cl["median_s"], apart))
    out = []
    for op, by_stack in ratios.items():
        parts, named = [], []
        for stack, values in by_stack.items():
            ratio = statistics.median(v for v, _ in values)
            parts.append(f"{stack} {ratio:.2f}x")
            if abs(ratio - 1) > LAYOUT_EFFECT and sum(a for _, a in values) > len(values) / 2:
                named.append(stack)
        verdict = (f"beyond {LAYOUT_EFFECT:.0%} and noise: {', '.join(named)}" if named
                   else f"no stack differs by more than {LAYOUT_EFFECT:.0%} beyond noise")
        out.append(Finding(f"{op}, channels_first / channels_last (median over passes and "
                           f"shapes): {', '.join(parts)}; {verdict}.", "layout"))
    return out


def _roofline(ops, peaks) -> list:
    """Per stack: the median fraction of the attainable rate (min of the matmul peak and
    bandwidth x arithmetic intensity) and the cases below LOW_ROOFLINE of it."""
    if not peaks:
        return []
    by_stack = OrderedDict()
    for r in ops:
        if _ok(r) and r.get("flops") and r.get("bytes"):
            attainable = min(peaks["matmul_gflops"],
                             r["flops"] / r["bytes"] * peaks["copy_gbps"]) * 1e9
            by_stack.setdefault(r["stack"], []).append(
                (r["flops"] / r["median_s"] / attainable, r))
    out = []
    for stack, fractions in by_stack.items():
        low = [(f, r) for f, r in fractions if f < LOW_ROOFLINE]
        worst_f, worst = min(fractions, key=lambda fr: fr[0])
        out.append(Finding(
            f"{stack}: a median {statistics.median(f for f, _ in fractions):.1%} of this "
            f"machine's roofline; {len(low)} of {len(fractions)} passes below "
            f"{LOW_ROOFLINE:.0%}, lowest {worst_f:.2%} at {_where(worst)}.", "plots"))
    return out


def model_findings(model_records) -> list:
    ok = [r for r in model_records if r["status"] == "ok"]
    out = [Finding(f"{r['stack']} {r['model']}: {r['status']}: {str(r.get('error'))[:120]}",
                   "models", problem=True)
           for r in model_records if r["status"] in FAILED]
    by_model = OrderedDict()
    for r in ok:
        by_model.setdefault(r["model"], []).append(r)
    for model, recs in by_model.items():
        if len(recs) > 1:
            fast, slow = (f(recs, key=lambda r: r["epoch_s"]) for f in (min, max))
            out.append(Finding(
                f"{model}: {slow['stack']} ({slow.get('device')}) takes "
                f"{slow['epoch_s'] / fast['epoch_s']:.3g}x {fast['stack']}'s epoch "
                f"({fast.get('device')}): {slow['epoch_s']:.1f} s vs {fast['epoch_s']:.1f} s"
                f"{'' if _steps_apart(slow, fast) else ' (within noise)'}.", "models"))
    out += _report_000(by_model.get("cifar10_cnn", [])) + _report_001(ok)
    return out


def _steps_apart(slow, fast) -> bool:
    """Model records time steps: their step bands decide (a record without them: apart)."""
    if not (slow.get("median_s") and fast.get("median_s")):
        return True
    return _apart(slow, fast)


def _report_000(cnn) -> list:
    """Report 000: Theano 18x slower than TensorFlow, because Theano ran on the CPU."""
    theano = [r for r in cnn if r.get("backend") == "theano"]
    tensorflow = [r for r in cnn if r.get("backend") == "tensorflow"]
    if not (theano and tensorflow):
        return []
    th, tf = theano[0], tensorflow[0]
    ratio = th["epoch_s"] / tf["epoch_s"]
    if th.get("device") != tf.get("device"):
        why = (f"the devices differ ({th['stack']} on {th.get('device')}, {tf['stack']} on "
               f"{tf.get('device')}), the report's own cause")
    else:
        why = (f"both ran on the {th.get('device')}, so the device gap behind the report's "
               "18x (Theano silently on the CPU) is not present here")
    return [Finding(f"Report 000 (cifar10_cnn, Theano vs TensorFlow, published 285-292 s vs "
                    f"15-16 s): here {th['stack']}/{tf['stack']} = {ratio:.3g}x; {why}.",
                    "models")]


def _report_001(ok) -> list:
    """Report 001: BatchNormalization makes the ResNet 11.7x slower on Theano, 1.0x on TF."""
    bn, nobn = ({r["stack"]: r for r in ok if r["model"] == m} for m in
                ("resnet_bn", "resnet_nobn"))
    ratios = OrderedDict((s, bn[s]["epoch_s"] / nobn[s]["epoch_s"]) for s in bn if s in nobn)
    if not ratios:
        return []
    published_ratio = next(r.cell("bn_ratio") for r in published.ROWS
                           if r.report == "001" and "Theano" in r.stack)
    theano = [s for s in ratios if bn[s].get("backend") == "theano"]
    others = [v for s, v in ratios.items() if s not in theano]
    listing = ", ".join(f"{s} {v:.2f}x" for s, v in ratios.items())
    if theano and others:
        excess = ratios[theano[0]] / statistics.median(others)
        verdict = (f"Theano's BN penalty {'reproduces' if excess > 1.5 else 'does not reproduce'}"
                   f" here: {excess:.2g}x the other stacks' median (on the "
                   f"{bn[theano[0]].get('device')}; the report's cuDNN gap needs a GPU)")
    else:
        verdict = "no Theano stack ran both models, so the report's gap is not tested"
    return [Finding(f"Report 001 (BN/no-BN epoch ratio, published {published_ratio} on Theano, "
                    f"1.0x on TensorFlow): {listing}; {verdict}.", "models")]


def ab_findings(ab_records) -> list:
    """Per A/B pair: how many passes are slower and faster, the largest of each, the MDE."""
    out = []
    pairs = OrderedDict()
    for r in ab_records:
        pairs.setdefault((r["stack_a"], r["stack_b"]), []).append(r)
    for (a, b), recs in pairs.items():
        judged = [r for r in recs if r.get("status") == "ok"]
        if not judged:
            continue
        parts = []
        for verdict, pick in (("slower", max), ("faster", min)):
            hits = [r for r in judged if r["verdict"] == verdict]
            if hits:
                top = pick(hits, key=lambda r: r["ratio"])
                parts.append(f"{len(hits)} {verdict} (most: {_where(top)}, {top['ratio']:.3g}x, "
                             f"95% CI {top['ci_low']:.3g}-{top['ci_high']:.3g})")
        same = sum(r["verdict"] == "same" for r in judged)
        doubtful = sum(unsure(r) for r in judged)
        mde = statistics.median(r["mde"] for r in judged)
        effect = min_effect_of(judged[0])
        fine = sum(resolved(r) for r in judged)
        summary = "; ".join(parts) if parts else "no pass differs"
        out.append(Finding(f"{b} vs {a}: {summary}; {same} same"
                           + (f" ({doubtful} unsure)" if doubtful else "")
                           + f", of {len(judged)} compared (median detectable effect {mde:.1%}; "
                           f"{fine} of {len(judged)} resolved {effect:.0%}).", "ab"))
    return out
