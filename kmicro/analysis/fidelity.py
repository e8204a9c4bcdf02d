"""`kmicro calibrate --independent`: kmicro's times against an independent loop's, alternated.

Per stack and round, a fresh kmicro worker and a fresh independent process
(kmicro/harness/independent.py) measure each case's passes both ways, back to back in a random
order per pass, so the machine's drift hits both alike and each round samples both sides'
process luck anew. kmicro's side is exactly what `kmicro ops` does for the case
(build, compile, check against the float64 reference, `timing.measure`); the independent side
builds the layer with plain Keras and times it with the framework's own timer. One record per
stack, case, pass and round keeps both times; `summarize` turns them into the ratio per case.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from kmicro.core import records
from kmicro.harness import independent, runner
from kmicro.harness.jobs import op

__all__ = ["KIND", "TARGET", "Summary", "run", "summarize"]

KIND = "fidelity"
TARGET = (0.95, 1.05)  # kmicro / independent, median over rounds
MIN_RUN_S = 0.4  # the independent timer's run per measurement: kmicro's sampling budget


def run(stacks, case_list, passes, rounds, options, sink, progress=None, seed=0):
    """Measure every case and pass on every stack `rounds` times both ways; `sink(record)`
    receives one record per stack, case, pass and round as soon as it is measured."""
    rng = random.Random(seed)
    for stack in stacks:
        _run_stack(stack, case_list, passes, rounds, options, sink, progress, rng)


def _run_stack(stack, case_list, passes, rounds, options, sink, progress, rng):
    sides = _Sides(stack, options)
    try:
        for round_no in range(1, rounds + 1):
            for case in case_list:
                try:
                    ours, theirs = sides.measure(case, passes, rng)
                    for pass_name in passes:
                        sink(_record(ours[pass_name], theirs[pass_name], round_no,
                                     sides.independent.versions))
                except (runner.WorkerDied, runner.WorkerTimeout) as exc:
                    sides.close()  # fresh processes for the next case
                    for pass_name in passes:
                        sink(records.new(KIND, {"stack": stack.name, "backend": stack.backend},
                                         case.id, pass_name, status="error", error=str(exc),
                                         round=round_no))
                if progress:
                    progress(stack.name, f"round {round_no} {case.id}")
            # Fresh processes every round: a process's own speed (its heap, where its buffers
            # land) would otherwise bias every round of one side alike.
            sides.close()
    finally:
        sides.close()


class _Sides:
    """One stack's kmicro worker and independent loop, (re)started when needed; a stack whose
    processes cannot start is not tried again."""

    def __init__(self, stack, options):
        self.stack, self.options = stack, options
        self.worker = self.independent = None
        self.fatal = None

    def measure(self, case, passes, rng) -> tuple:
        """({pass: kmicro's op record}, {pass: the independent loop's answer}); pass by pass,
        the two sides back to back in a random order, so drift between them stays small."""
        self._start()
        ours, theirs = {}, {}
        for pass_name in passes:
            if rng.random() < 0.5:
                ours.update(self._ours(case, pass_name))
                theirs[pass_name] = self._theirs(case, pass_name)
            else:
                theirs[pass_name] = self._theirs(case, pass_name)
                ours.update(self._ours(case, pass_name))
        return ours, theirs

    def _ours(self, case, pass_name) -> dict:
        """The op job `kmicro ops` sends, for one pass: build, compile, check, measure."""
        got = {}
        self.worker.ask(op.job(case, [pass_name], self.options).payload,
                        self.options.timeout_s, lambda r: got.__setitem__(r["pass"], r))
        return got

    def _theirs(self, case, pass_name) -> dict:
        return self.independent.time(case, pass_name, MIN_RUN_S, self.options.timeout_s)

    def _start(self):
        if self.fatal:
            raise runner.WorkerDied(self.fatal)
        try:
            if self.worker is None:
                self.worker = runner.Worker(self.stack, self.options)
                if self.worker.fatal:
                    raise runner.WorkerDied(self.worker.fatal)
            if self.independent is None:
                self.independent = independent.IndependentLoop(self.stack, self.options.device)
        except (runner.WorkerDied, runner.WorkerTimeout) as exc:
            self.fatal = str(exc)
            self.close()
            raise

    def close(self):
        for side in (self.worker, self.independent):
            if side is not None:
                side.close()
        self.worker = self.independent = None


def _record(ours, theirs, round_no, their_versions) -> dict:
    """kmicro's op record, turned into a fidelity record with the independent time beside it."""
    record = dict(ours, kind=KIND, round=round_no, independent_s=None, ratio=None,
                  timer=theirs.get("timer"), independent_versions=their_versions)
    if ours["status"] != "ok":
        return record
    if "error" in theirs:
        status = "unsupported" if theirs.get("unsupported") else "error"
        return dict(record, status=status, error=f"independent loop: {theirs['error']}")
    return dict(record, independent_s=theirs["median_s"],
                ratio=ours["median_s"] / theirs["median_s"])


@dataclass(frozen=True)
class Summary:
    """One stack, case and pass over its rounds."""

    stack: str
    case: str
    pass_name: str
    kmicro_s: float  # medians over the rounds
    independent_s: float
    ratio: float  # median of the per-round ratios
    low: float  # their smallest and largest
    high: float
    rounds: int

    @property
    def within_target(self) -> bool:
        return TARGET[0] <= self.ratio <= TARGET[1]


def summarize(fidelity_records) -> tuple:
    """(Summary per stack, case and pass that was measured, the records that were not)."""
    groups, failed = {}, []
    for r in fidelity_records:
        if r["status"] == "ok":
            groups.setdefault((r["stack"], r["case"], r["pass"]), []).append(r)
        else:
            failed.append(r)
    summaries = []
    for (stack, case, pass_name), rs in groups.items():
        ratios = [r["ratio"] for r in rs]
        summaries.append(Summary(stack, case, pass_name,
                                 statistics.median(r["median_s"] for r in rs),
                                 statistics.median(r["independent_s"] for r in rs),
                                 statistics.median(ratios), min(ratios), max(ratios), len(rs)))
    measured = {(s.stack, s.case, s.pass_name) for s in summaries}
    unmeasured = {(r["stack"], r["case"], r["pass"]): r for r in failed
                  if (r["stack"], r["case"], r["pass"]) not in measured}
    return summaries, list(unmeasured.values())
