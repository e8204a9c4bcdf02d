"""Terminal tables of `kmicro machine`: the system's facts, the vCPUs' drift, the
kernel-selecting variables and the short A/A."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from kmicro.analysis import ab, machine
from kmicro.report.tables import PASS_LABELS, case_label

__all__ = ["facts_table", "drift_table", "env_table", "aa_table", "verdict_line"]


def _two_columns(title, rows) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("what")
    table.add_column("value")
    for name, value in rows:
        table.add_row(name, value)
    return table


def facts_table(facts) -> Table:
    return _two_columns("This machine", [
        (f.name, escape(str(f.value)) if f.value is not None
         else f"[yellow]not readable here[/yellow]: {escape(f.why_not)}") for f in facts])


def drift_table(drift) -> Table:
    title = (f"vCPU speed: every CPU runs the same loop at once, {drift.bins} bins of "
             f"{machine.BIN_S * 1e3:g} ms")
    if not drift.slow_share:
        return _two_columns(title, [("drift",
                                     f"[yellow]not measured[/yellow]: {drift.why_not}")])
    rows = [(f"cpu {cpu}", f"slow (> {machine.SLOW_BIN}x its fast bins) in {share:.0%} of "
                           f"bins; median bin {drift.median_x[cpu]:.2f}x its fast bins")
            for cpu, share in drift.slow_share.items()]
    cpus = list(drift.slow_share)
    rows.append(("correlation", f"{drift.correlation:.2f} (cpu {cpus[0]} and cpu {cpus[1]}; "
                                "near 0: each vCPU changes speed on its own)"
                 if drift.correlation is not None else drift.why_not))
    return _two_columns(title, rows)


def env_table(variables) -> Table:
    rows = [(k, escape(v)) for k, v in variables.items()] or [
        ("(none set)", "the frameworks' own defaults pick kernels and thread counts")]
    return _two_columns("Variables that select kernels and threads (kept in every record)", rows)


def aa_table(records) -> Table:
    table = Table(title=f"A/A: the same stack on both sides, {machine.AA_ROUNDS} rounds "
                        "at most, no early stop")
    for col in ("case", "pass", "rounds", "B/A", "MDE now",
                f"MDE at {ab.Settings.max_rounds} rounds"):
        table.add_column(col, justify="left" if col in ("case", "pass") else "right")
    for r in records:
        label = case_label(r)
        pass_label = PASS_LABELS.get(r["pass"], r["pass"])
        if r["status"] != "ok":
            table.add_row(label, pass_label, "", "", r["status"],
                          escape(str(r.get("error"))[:60]))
            continue
        table.add_row(label, pass_label, str(r["rounds"]), f"{r['ratio']:.3f}",
                      f"{r['mde']:.1%}", f"{machine.expected_mde(r):.1%}")
    return table


def verdict_line(effect, stack_name) -> str:
    if effect is None:
        return f"[yellow]no pass of the A/A could be measured on {stack_name}[/yellow]"
    return (f"[bold]an effect of {effect:.1%} is the smallest `kmicro ab` can tell apart here "
            f"now[/bold] ({stack_name}; its defaults: up to {ab.Settings.max_rounds} rounds, "
            f"{'same-CPU' if ab.Settings.same_cpu else 'free'} placement)")
