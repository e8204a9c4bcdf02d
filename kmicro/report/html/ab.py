"""The A/B section: `kmicro ab` comparisons, one table per stack pair, largest effect first."""
from __future__ import annotations

from collections import OrderedDict
from html import escape

from kmicro.report.ab_tables import by_effect, power_lines, summary, verdict_label
from kmicro.report.html.markup import bullets, cell, seconds, table
from kmicro.report.tables import PASS_LABELS, case_label

__all__ = ["section"]

VERDICT_CLASS = {"slower": "bad flag", "faster": "best", "same": ""}
HEADER = ["case", "pass", "A", "B", "B/A", "95% CI", "verdict", "MDE", "rounds"]


def section(recs) -> str:
    if not recs:
        return ""
    by_pair = OrderedDict()
    for r in recs:
        by_pair.setdefault((r["stack_a"], r["stack_b"]), []).append(r)
    parts = ["<h2 id='ab'>A/B comparisons</h2><p class='note'>Interleaved rounds: every pass "
             "timed in short bursts on A and on B, in a random order per round; B/A is the "
             "median paired ratio, with its 95% confidence interval. slower/faster: the "
             "interval excludes 1 and the ratio is beyond the minimum effect; same (unsure): "
             "no change shown, but the interval still reaches one of the minimum effect; MDE: "
             "the smallest change these rounds resolve.</p>"]
    for (a, b), pair in by_pair.items():
        power = [line.strip() for line in power_lines(pair)]
        parts.append(f"<h3>{escape(b)} vs {escape(a)}</h3><p>{escape(summary(pair))}</p>"
                     + bullets(power) + table(HEADER, [_row(r) for r in by_effect(pair)]))
    return "".join(parts)


def _row(r) -> list:
    label = [cell(case_label(r)),
             cell(PASS_LABELS.get(r["pass"], r["pass"]))]
    if r["status"] != "ok":
        return label + [cell(""), cell(""), cell(""), cell(""),
                        cell(r["status"], "bad", title=r.get("error")), cell(""), cell("")]
    return label + [cell(seconds(r["median_a_s"]), "num"), cell(seconds(r["median_b_s"]), "num"),
                    cell(f"{r['ratio']:.3f}", "num"),
                    cell(f"{r['ci_low']:.3f}–{r['ci_high']:.3f}", "num"),
                    cell(verdict_label(r), VERDICT_CLASS[r["verdict"]]), cell(f"{r['mde']:.1%}", "num"),
                    cell(r["rounds"], "num")]
