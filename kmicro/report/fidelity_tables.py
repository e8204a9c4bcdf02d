"""Terminal output of `kmicro calibrate --independent`: kmicro / independent per case."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from kmicro.analysis.fidelity import TARGET, summarize
from kmicro.report.tables import format_time

__all__ = ["render", "table", "problems", "verdict"]

NUMBERS = ("kmicro", "independent", "ratio", "95 % interval", "range", "rounds")


def render(fidelity_records) -> list:
    """What `kmicro calibrate --independent` and `kmicro report` print for fidelity records:
    the table, then a line per pass that was not compared and one verdict line per stack."""
    summaries, failed = summarize(fidelity_records)
    return [table(summaries)] + problems(failed) + verdict(summaries)


def table(summaries) -> Table:
    """One row per stack, case and pass: both medians, the median ratio, its 95 % interval
    and its range over the rounds; outside the target in red."""
    t = Table(title=f"fidelity: kmicro / independent loop, median of alternated rounds "
                    f"(target {TARGET[0]:.2f}-{TARGET[1]:.2f})")
    for col in ("stack", "case", "pass") + NUMBERS:
        t.add_column(col, justify="right" if col in NUMBERS else "left")
    for s in summaries:
        ratio = f"{s.ratio:.3f}" if s.within_target else f"[red]{s.ratio:.3f}[/red]"
        t.add_row(s.stack, escape(s.case), s.pass_name, format_time(s.kmicro_s),
                  format_time(s.independent_s), ratio, _interval(s), f"{s.low:.2f}-{s.high:.2f}",
                  str(s.rounds))
    return t


def _interval(s) -> str:
    """The 95 % interval of the median; "-" when there are too few rounds for one."""
    return f"{s.ci_low:.3f}-{s.ci_high:.3f}" if s.covered else "-"


def problems(failed) -> list:
    """One line per stack, case and pass that could not be compared, saying why."""
    return [f"[yellow]![/yellow] {r['stack']} {escape(r['case'])} {r['pass']}: {r['status']}: "
            f"{escape(r['error'] or '')}" for r in failed]


def verdict(summaries) -> list:
    """Per stack: how many passes are within the target, and the worst one."""
    lines = []
    for stack in dict.fromkeys(s.stack for s in summaries):
        mine = [s for s in summaries if s.stack == stack]
        within = sum(s.within_target for s in mine)
        worst = max(mine, key=lambda s: abs(s.ratio - 1))
        lines.append(f"{stack}: {within} of {len(mine)} passes within {TARGET[0]:.2f}-"
                     f"{TARGET[1]:.2f}; furthest {escape(worst.case)} {worst.pass_name} "
                     f"{worst.ratio:.3f}")
    return lines
