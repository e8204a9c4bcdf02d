"""`kmicro calibrate --independent`: kmicro's times against an independent loop's, alternated.

Per stack and round, a fresh kmicro worker and a fresh independent process
(kmicro/harness/independent.py) measure each case's passes both ways, so each round samples
both sides' process luck anew. kmicro's side is exactly what `kmicro ops` does for the case
(build, compile, check against the float64 reference, `timing.measure`); the independent side
builds the layer with plain Keras and times it with the framework's own timer. The two take
turns: the independent loop times one block (>= 10 ms of calls) after every 10 ms of kmicro's
warm-up and after every kmicro sample (`timing.measure`'s `between`, which keeps that time out
of kmicro's samples and budgets). Both medians then come from the same seconds of the
machine: on a small VM, two 0.4 s measurements one after the other differed by up to 1.7x
(single rounds 0.55-1.75 on 2026-12-02). One record per stack, case, pass and round keeps
both times; `summarize` turns them into the ratio per case.

After the first `rounds`, a pass keeps taking rounds (up to `max_rounds`) until the 95 %
interval of its median ratio lies inside TARGET: the noise between two measurements a second
apart is heavy-tailed on a shared VM (single rounds of one pass read 0.55-1.75 on a bad day),
and a median of five or six such rounds lands outside the band by chance on a few of 77
passes. Passes whose interval already lies inside the band stop.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from kmicro.analysis import ab_stats
from kmicro.core import records
from kmicro.harness import independent, placement, runner
from kmicro.harness.jobs import op

__all__ = ["KIND", "TARGET", "Summary", "run", "summarize"]

KIND = "fidelity"
TARGET = (0.95, 1.05)  # kmicro / independent, median over rounds


def run(stacks, case_list, passes, rounds, options, sink, progress=None, seed=0,
        max_rounds=None, same_cpu=True):
    """Measure every case and pass on every stack `rounds` times both ways, then the passes
    still undecided (`decided`) again, up to `max_rounds` in all; `sink(record)` receives one
    record per stack, case, pass and round as soon as it is measured. `same_cpu`: both
    processes of a pass and round run on one CPU, drawn each time with `seed` (see _Sides)."""
    rng = random.Random(seed)
    for stack in stacks:
        _run_stack(stack, case_list, passes, rounds, max(rounds, max_rounds or rounds),
                   options, sink, progress, rng, same_cpu)


def decided(ratios) -> bool:
    """The 95 % interval of the median of these per-round ratios lies wholly inside TARGET:
    more rounds would not move the median out of it. A pass outside the band takes every
    round: six rounds all above 1.05 happened by chance on a noisy day (tensorflow
    Conv2D(64) forward read 1.06-1.74 in rounds 1-6; 0.997 on the day before)."""
    low, high, covered = ab_stats.median_interval(ratios)
    return covered and TARGET[0] <= low and high <= TARGET[1]


def _run_stack(stack, case_list, passes, rounds, max_rounds, options, sink, progress, rng,
               same_cpu):
    sides = _Sides(stack, options, same_cpu)
    ratios = {(case.id, p): [] for case in case_list for p in passes}
    try:
        for round_no in range(1, max_rounds + 1):
            for case in case_list:
                wanted = [p for p in passes if (case.id, p) in ratios
                          and (round_no <= rounds or not decided(ratios[case.id, p]))]
                if not wanted:
                    continue
                for record in _measure(sides, stack, case, wanted, round_no, rng):
                    if record["status"] == "ok":
                        ratios[case.id, record["pass"]].append(record["ratio"])
                    elif record["status"] != "error":  # unsupported: no more rounds for it
                        ratios.pop((case.id, record["pass"]), None)
                    sink(record)
                if progress:
                    extra = "" if round_no <= rounds else f" of up to {max_rounds}"
                    progress(stack.name, f"round {round_no}{extra} {case.id}")
            # Fresh processes every round: a process's own speed (its heap, where its buffers
            # land) would otherwise bias every round of one side alike.
            sides.close()
    finally:
        sides.close()


def _measure(sides, stack, case, passes, round_no, rng) -> list:
    """This round's record of each pass of `case`: both sides measured, or the error."""
    try:
        ours, theirs = sides.measure(case, passes, rng)
        return [_record(ours[p], theirs[p], round_no, sides.independent, sides.cpu)
                for p in passes]
    except (runner.WorkerDied, runner.WorkerTimeout) as exc:
        sides.close()  # fresh processes for the next case
        return [records.new(KIND, {"stack": stack.name, "backend": stack.backend}, case.id, p,
                            status="error", error=str(exc), round=round_no) for p in passes]


class _Sides:
    """One stack's kmicro worker and independent loop, (re)started when needed; a stack whose
    processes cannot start is not tried again.

    With `same_cpu` both processes run on one CPU, drawn per round, and each sees one CPU
    from the moment it starts: a framework sizes its thread pools from the CPUs it may use
    when it starts, so both sides must see the same number (pinned later, kmicro's worker kept
    JAX's two-thread pool on one CPU where the independent process made one thread: kmicro
    read 2.2x). They start on different CPUs, to import side by side, and then move to the
    round's. Taking turns on two CPUs instead, a side's helper threads (torch's OpenMP
    worker: nearly as much CPU time as the main thread) still spin on the other CPU while the
    other side is timed: torch Dense(10) forward read 1.31x (0.93-1.51) across six fresh
    process pairs, 1.002 on one CPU. docs/validation.md, "Fidelity against an independent loop"."""

    def __init__(self, stack, options, same_cpu=True):
        self.stack, self.options = stack, options
        self.cpus = placement.choices(same_cpu)
        self.worker = self.independent = None
        self.fatal = self.cpu = None  # the round's CPU, with same_cpu

    def measure(self, case, passes, rng) -> tuple:
        """({pass: kmicro's op record}, {pass: the independent loop's blocks}), pass by pass."""
        self._start(rng)
        ours, theirs = {}, {}
        for pass_name in passes:
            theirs[pass_name] = self.independent.prepare(case, pass_name, self.options.timeout_s)
            ours.update(self._paired(case, pass_name, theirs[pass_name]))
        return ours, theirs

    def _paired(self, case, pass_name, theirs) -> dict:
        """kmicro's op job for one pass (build, compile, check, `timing.measure`), with one
        block of the independent loop after every 10 ms of kmicro's warm-up and after every
        sample: both sides' times come from the same seconds of the machine. `theirs` (the
        prepared independent side) gets the sampled blocks' median."""
        blocks, got = [], {}

        def their_block(phase):
            s_per_call = self.independent.block(self.options.timeout_s)
            if phase == "sample":
                blocks.append(s_per_call)
        paired = "error" not in theirs
        payload = dict(op.job(case, [pass_name], self.options).payload, paired=paired)
        self.worker.ask(payload, self.options.timeout_s,
                        lambda r: got.__setitem__(r["pass"], r), their_block)
        if paired and blocks:
            theirs.update(median_s=statistics.median(blocks), blocks=blocks)
        elif paired:
            theirs["error"] = "kmicro's side took no samples to pair blocks with"
        return got

    def _start(self, rng):
        """Both processes, started together; with same_cpu each on a CPU of its own, then
        both on the round's CPU, drawn from `rng`."""
        if self.fatal:
            raise runner.WorkerDied(self.fatal)
        if self.worker is not None:
            return
        self.cpu = rng.choice(self.cpus) if self.cpus else None
        ours, theirs = placement.apart([{c} for c in self.cpus], 2)
        try:
            self.worker = runner.Worker(self.stack, self.options, wait=False, cpus=ours)
            self.independent = independent.IndependentLoop(self.stack, self.options.device,
                                                           theirs)
            self.worker.ready()
            if self.worker.fatal:
                raise runner.WorkerDied(self.worker.fatal)
            if self.cpus:  # this round's CPU, for both
                for process in (self.worker.proc, self.independent.proc):
                    placement.pin(process.pid, {self.cpu})
        except (runner.WorkerDied, runner.WorkerTimeout) as exc:
            self.fatal = str(exc)
            self.close()
            raise

    def close(self):
        for side in (self.worker, self.independent):
            if side is not None:
                side.close()
        self.worker = self.independent = None


def _record(ours, theirs, round_no, loop, cpu=None) -> dict:
    """kmicro's op record, turned into a fidelity record with the independent time (from
    `loop`, the IndependentLoop) beside it; `cpu`: the one both ran on, if placed."""
    record = dict(ours, kind=KIND, round=round_no, independent_s=None, ratio=None,
                  timer=theirs.get("timer"), independent_versions=loop.versions,
                  independent_cpus=loop.cpus, same_cpu=cpu is not None, round_cpu=cpu)
    if ours["status"] != "ok":
        return record
    if "error" in theirs:
        status = "unsupported" if theirs.get("unsupported") else "error"
        return dict(record, status=status, error=f"independent loop: {theirs['error']}")
    return dict(record, independent_s=theirs["median_s"], independent_blocks_s=theirs["blocks"],
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
    ci_low: float  # the 95 % interval of the median (order statistics; the range when
    ci_high: float  # there are too few rounds for 95 %, `covered` False)
    covered: bool

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
                                 statistics.median(ratios), min(ratios), max(ratios), len(rs),
                                 *ab_stats.median_interval(ratios)))
    measured = {(s.stack, s.case, s.pass_name) for s in summaries}
    unmeasured = {(r["stack"], r["case"], r["pass"]): r for r in failed
                  if (r["stack"], r["case"], r["pass"]) not in measured}
    return summaries, list(unmeasured.values())
