"""Terminal table of `kmicro ab` records: one row per case and pass, largest effect first."""
from __future__ import annotations

import math
import statistics

from rich.table import Table

from kmicro.analysis import ab, ab_stats
from kmicro.report.tables import PASS_LABELS, case_label, format_time

__all__ = ["VERDICT_STYLE", "by_effect", "ab_table", "summary", "power_lines", "noise_hint",
           "min_effect_of", "resolved", "unsure", "verdict_label"]

VERDICT_STYLE = {"slower": "bold red", "faster": "bold green", "same": ""}


def min_effect_of(record) -> float:
    """The minimum effect a record was judged against (older files: the default)."""
    return record.get("min_effect", ab.Settings.min_effect)


def resolved(record) -> bool:
    """Its rounds could resolve the minimum effect: MDE at most that."""
    return record["mde"] <= min_effect_of(record)


def unsure(record) -> bool:
    """A `same` whose 95 % interval still reaches a change of the minimum effect."""
    judged = ab_stats.Comparison(record["ratio"], record["ci_low"], record["ci_high"],
                                 record.get("rounds", 0))
    return record["verdict"] == "same" and not judged.conclusive(min_effect_of(record))


def verdict_label(record) -> str:
    """The verdict as shown: "same" alone only where the interval rules out the minimum effect."""
    return "same (unsure)" if unsure(record) else record["verdict"]


def by_effect(records) -> list:
    """Measured records, largest |log ratio| first, then what could not be compared."""
    measured = [r for r in records if r["status"] == "ok"]
    others = [r for r in records if r["status"] != "ok"]
    return sorted(measured, key=lambda r: -abs(math.log(r["ratio"]))) + others


def ab_table(records) -> Table:
    first = records[0]
    table = Table(title=f"{first['stack_b']} vs {first['stack_a']}: ratio B/A of paired "
                        f"interleaved rounds, 95% CI, min effect {first.get('min_effect', 0):.0%}")
    for col in ("case", "pass", first["stack_a"], first["stack_b"], "B/A", "95% CI", "verdict",
                "MDE", "rounds"):
        table.add_column(col, justify="left" if col in ("case", "pass", "verdict") else "right")
    for r in by_effect(records):
        label = case_label(r)
        pass_label = PASS_LABELS.get(r["pass"], r["pass"])
        if r["status"] != "ok":
            table.add_row(label, pass_label, "", "", "", "", r["status"], "", "")
            continue
        style = VERDICT_STYLE[r["verdict"]]
        table.add_row(label, pass_label, format_time(r["median_a_s"]), format_time(r["median_b_s"]),
                      f"{r['ratio']:.3f}", f"{r['ci_low']:.3f}-{r['ci_high']:.3f}",
                      f"[{style}]{r['verdict']}[/{style}]" if style else verdict_label(r),
                      f"{r['mde']:.1%}", str(r["rounds"]))
    return table


def summary(records) -> str:
    measured = [r for r in records if r["status"] == "ok"]
    counts = {v: sum(r["verdict"] == v for r in measured) for v in ("slower", "faster", "same")}
    text = ", ".join(f"{n} {v}" for v, n in counts.items())
    doubtful = sum(unsure(r) for r in measured)
    if doubtful:
        text += (f" ({doubtful} of them unsure: the interval still reaches a change of the "
                 "minimum effect; more --rounds narrow it)")
    if measured:
        text += (f"; median minimum detectable effect {statistics.median(r['mde'] for r in measured):.1%}"
                 f" over {len(measured)} passes")
    failed = len(records) - len(measured)
    return text + (f"; {failed} not compared (see below)" if failed else "")


def power_lines(records, most=8) -> list:
    """How many passes resolved the minimum effect (MDE at most it), then the ones that did
    not, widest first (at most `most`), each with the rounds it would take."""
    measured = [r for r in records if r["status"] == "ok"]
    if not measured:
        return []
    effect = min_effect_of(measured[0])
    short = sorted((r for r in measured if not resolved(r)), key=lambda r: -r["mde"])
    lines = [f"power: {len(measured) - len(short)} of {len(measured)} passes resolved the "
             f"minimum effect of {effect:.0%} (MDE at most that)"
             + ("" if short else "; every verdict can be read at that size")]
    cut = [r for r in measured if r.get("ended_by") == "budget"]
    if cut:
        lines.append(f"  the budget ({cut[0]['budget_s']:.0f} s) ended the rounds of {len(cut)} "
                     f"pass{'es' if len(cut) > 1 else ''} after {max(r['rounds'] for r in cut)}: "
                     "--budget gives more")
    for r in short[:most]:
        needed = ab_stats.rounds_needed(r["mde"], r["rounds"], min_effect_of(r))
        label = case_label(r)
        flags = "--rounds, --budget" if r.get("ended_by") == "budget" else "--rounds"
        lines.append(f"  {label} {PASS_LABELS.get(r['pass'], r['pass'])}: MDE {r['mde']:.1%} "
                     f"after {r['rounds']} rounds; "
                     + (f"about {needed} rounds would resolve {min_effect_of(r):.0%} ({flags})"
                        if needed else "no number of rounds resolves a minimum effect of 0"))
    if len(short) > most:
        lines.append(f"  and {len(short) - most} more (each record's `rounds_needed`)")
    return lines


def noise_hint(records):
    """One line when the median MDE is above the minimum effect: this machine's noise is
    what limits the run, and `kmicro machine` measures it. None otherwise."""
    measured = [r for r in records if r["status"] == "ok" and r.get("mde") is not None]
    if not measured:
        return None
    mde, effect = statistics.median(r["mde"] for r in measured), min_effect_of(measured[0])
    if mde <= effect:
        return None
    return (f"hint: the median MDE ({mde:.1%}) is above --min-effect ({effect:.0%}): "
            "`kmicro machine` shows what limits it here; more --rounds, same-CPU rounds (the "
            "default) or a quieter machine narrow it")
