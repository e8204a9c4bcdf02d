"""`kmicro ab`: two stacks compared in interleaved rounds, so drift cannot pose as a change.

Both workers stay alive with every selected pass built, compiled and checked once ("ab" jobs,
kmicro/harness/jobs/ab.py). Then, round after round, every pass still undecided is timed in
a short burst on A and on B, in a random order per pass and round, and the paired per-round
ratios are judged (kmicro/analysis/ab_stats.py). A pass leaves the rounds once its verdict is
settled; after `regular_rounds` only the passes still unsure go on; the rounds stop at
`max_rounds` or when the budget is spent (by default 2 s a pass, within twice the least
`kmicro ops` could take: `default_budget`).
"""
from __future__ import annotations

import math
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

from kmicro.analysis import ab_stats
from kmicro.core import cases as cases_mod
from kmicro.core import records, timing
from kmicro.harness import placement, runner

__all__ = ["Settings", "run", "pooled", "burst_samples", "stops", "default_budget",
           "ops_floor", "greeting_order", "pairs_for", "BUDGET_PER_PASS_S", "MIN_BUDGET_S",
           "ROUNDS_PER_PAIR"]

# The default budget: 2 s of rounds a pass (later worker pairs' starts included), but at most
# what keeps the run within twice the least `kmicro ops` could take for the same passes here
# (`ops_floor`): a fixed 162 s for the default catalog's 81 passes made torch A/As 2.01-2.25x
# their `kmicro ops` where that took 75-84 s; with the cap the three stacks' A/As ran in
# 1.19-1.33x at a median MDE of 2.4-3.2 % (docs/validation.md, "A/A"). The floor leaves a
# few passes (a bisection's one) time for their worker pairs to start: ten took up to 73 s
# on a loaded 2-core VM.
BUDGET_PER_PASS_S = 2.0
MIN_BUDGET_S = 100.0
ROUNDS_PER_PAIR = 5  # the default split of the rounds: Settings' 80 over 16 worker pairs


@dataclass(frozen=True)
class Settings:
    min_effect: float = 0.03  # smaller changes are reported as "same"
    min_rounds: int = 6  # before any pass may stop early
    # At regular_rounds, a pass whose 95 % verdict is conclusive stops (its record is the one
    # a cap there would give); the ones still unsure go on over further worker pairs, to
    # max_rounds, while the budget lasts. A planted +3.9 % Conv2D forward was called slower in
    # 6 of 10 runs capped at 25 rounds, in 18 of 20 going on to 50; a +6.1 % one in 6 of 10
    # runs going on to 50 and in 20 of 20 to 80, ten of them alternating with those
    # (docs/validation.md, "Planted-effect detection"). Where the budget binds first (81
    # passes) it ends the rounds.
    regular_rounds: int = 25
    max_rounds: int = 80
    samples: int = 9  # samples per burst (each >= 2 ms of calls); the burst's time is their min
    # A pass whose samples are long gets fewer of them, down to min_samples, once a round has
    # shown their length: bursts of about burst_s. A 20 ms Conv2D backward sample needs no
    # nine to find a quiet one; those bursts were most of a torch A/B's rounds.
    burst_s: float = 0.02
    min_samples: int = 3
    # Pairs of workers the rounds are split over, one pair after another: 5 rounds each.
    processes: int = 16
    # Seconds from the first round on (later worker pairs' starts included), all passes
    # together; None: default_budget of the passes compared.
    budget_s: Optional[float] = None
    seed: int = 0  # the order of passes and sides in every round
    # Both sides' bursts of a round on one CPU set (drawn per round; on two vCPUs one CPU,
    # on a larger machine half of them), the waiting side on the others: the vCPUs' own
    # speeds then cancel in the ratio (kmicro/harness/placement.py). Workers start on a set
    # each, so their frameworks size their thread pools for it. An A/A's median MDE: 4.7-5.4
    # % with it, 10.6-12.6 % without (docs/validation.md).
    same_cpu: bool = True


@dataclass
class _Pair:
    """One (case, pass) measured on both sides: its prepare records and per-round times."""

    prepared: tuple  # (record A, record B)
    times: tuple = field(default_factory=lambda: ([], []))
    groups: list = field(default_factory=list)  # the worker pair of each round


class _Side:
    """One stack's live worker; restarted (and its cases prepared again) when it fails."""

    def __init__(self, stack, options, env=None, cpus=None):
        """Starts the worker (on `cpus` from its start); `ready()` waits for it, so both
        sides can start at once."""
        self.stack, self.options, self.env, self.cpus = stack, options, env, cpus
        self.prepared = {}  # case id -> prepare payload, to replay after a restart
        self.worker = runner.Worker(stack, options, env, wait=False, cpus=cpus)

    def ready(self):
        self.worker.ready()
        if self.worker.fatal:
            self.worker.close()
            raise runner.WorkerDied(self.worker.fatal)

    def call(self, payload) -> list:
        self.send(payload)
        return self.answers()

    def send(self, payload):
        """A job, without waiting: `answers()` reads its records."""
        self.worker.send(payload)

    def answers(self) -> list:
        """The records of the job last sent."""
        out = []
        self.worker.answers(self.options.timeout_s, out.append)
        return out

    def restart(self, dropped):
        """A fresh worker with every prepared case but `dropped` compiled again."""
        self.worker.close()
        self.prepared.pop(dropped, None)
        self.worker = runner.Worker(self.stack, self.options, self.env, wait=False,
                                    cpus=self.cpus)
        self.ready()
        for payload in self.prepared.values():
            self.call(payload)

    def close(self):
        self.worker.close()


def run(stack_a, stack_b, case_list, passes, options, settings, sink, progress=None) -> list:
    """Compare every case and pass; `sink(record)` gets each A/B record as it is decided.

    The rounds are split over `settings.processes` pairs of workers in turn: a process's own
    speed (where its code and data landed in memory) differs from the next one's by a few
    per cent, so the rounds must sample processes too, not one pair's bias (as pyperf does)."""
    with tempfile.TemporaryDirectory(prefix="kmicro-ab-") as cache:
        _run(stack_a, stack_b, case_list, passes, options, settings, sink, progress,
             _compile_cache_env(cache))


def _compile_cache_env(directory) -> dict:
    """JAX's persistent compilation cache, shared by this run's workers: the first worker
    pair compiles every pass, the later ones load the same executables instead of compiling
    them again (compiling is not timed; the programs run are the same). Other frameworks
    ignore these variables."""
    return {"JAX_COMPILATION_CACHE_DIR": directory,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def pairs_for(rounds: int) -> int:
    """Worker pairs for a cap of `rounds` at the default split (ROUNDS_PER_PAIR a pair)."""
    return -(-rounds // ROUNDS_PER_PAIR)


def default_budget(call_times, prepare_s) -> float:
    """Seconds of rounds when the user gives no budget, for passes whose calls take
    `call_times` (A's and B's seconds a call, a pair per pass) once the first worker pair took
    `prepare_s` to start and prepare them: 2 s a pass, at most what keeps the whole run
    (`prepare_s`, then the rounds) within twice `ops_floor`, at least MIN_BUDGET_S."""
    within_twice_ops = 2 * ops_floor(call_times, prepare_s) - prepare_s
    return max(MIN_BUDGET_S, min(BUDGET_PER_PASS_S * len(call_times), within_twice_ops))


def ops_floor(call_times, prepare_s) -> float:
    """The least `kmicro ops` can take for these passes here: it starts and prepares one
    stack after the other, which takes at least as long as both sides at once did
    (`prepare_s`), then on each stack warms every pass up for timing.Policy's warm-up and takes
    at least its min_samples samples of at least min_sample_s."""
    policy = timing.Policy()
    sampling = sum(max(policy.warmup * call_s, policy.warmup_s)
                   + policy.min_samples * max(policy.min_sample_s, call_s)
                   for pair in call_times for call_s in pair)
    return prepare_s + sampling


def _run(stack_a, stack_b, case_list, passes, options, settings, sink, progress, env):
    rng, clock, budget = random.Random(settings.seed), None, settings.budget_s
    pairs, done = None, 0
    per_process = _rounds_per_pair(settings)
    sides = []
    try:
        for n in range(settings.processes):
            first = greeting_order(n)
            starting = time.monotonic()
            sides = _start([stack_a, stack_b], options, first, env, _start_cpus(settings, n))
            pairs = _prepare(sides, first, case_list, passes, options, sink, progress, pairs)
            if clock is None:
                # The budget is the rounds': a first start slowed by a loaded machine must not
                # leave a short budget one round (a point interval, read as an MDE of 0).
                clock = time.monotonic()
                if budget is None:
                    budget = default_budget([_call_times(p) for p in pairs.values()],
                                            clock - starting)
            opened, begun = time.monotonic(), done
            done = _rounds(sides, pairs, settings, sink, progress, rng, done,
                           done + per_process, (clock, budget), n)
            now = time.monotonic()
            if pairs and done > begun and _no_room_for_another_pair(
                    n, settings, budget - (now - clock), opened - starting,
                    (now - opened) / (done - begun)):
                done = _rounds(sides, pairs, settings, sink, progress, rng, done,
                               settings.max_rounds, (clock, budget), n)
            for side in sides:
                side.close()
            if not pairs or done >= settings.max_rounds or time.monotonic() - clock > budget:
                break
        for key in list(pairs):
            pair = pairs.pop(key)
            ended = "budget" if len(pair.groups) < settings.max_rounds else "rounds"
            sink(_record(sides, key, pair, settings, budget, ended))
    except (runner.WorkerDied, runner.WorkerTimeout) as exc:
        for case in case_list:  # a side that cannot even start: nothing was compared
            for pass_name in passes:
                if pairs is None or (case.id, pass_name) in pairs:
                    sink(_failed(stack_a, stack_b, case.id, pass_name, "error", str(exc)))
    finally:
        for side in sides:
            side.close()


def greeting_order(pair_no) -> tuple:
    """The order (A's index, B's) in which worker pair `pair_no` is greeted and sent its
    jobs: every other pair B first. In A/A runs that compiled A always first, B came out
    faster in 53 and 55 of 81 passes (jax, tensorflow; median 0.4 %)."""
    return (0, 1) if pair_no % 2 == 0 else (1, 0)


def _no_room_for_another_pair(n, settings, left, pair_s, round_s) -> bool:
    """Whether worker pair `n`, the third or a later one, should time the passes until the
    budget ends: its `left` seconds cannot pay for another pair's start (`pair_s`, as this
    one's took) and its share of rounds (`round_s` each, as this one's took); a budget spent
    already ends the rounds instead. A noisy torch A/A started a sixth pair for one round.
    The first two always hand over: an interval must span three pairs' own speeds before
    one pair gets a budget's last rounds."""
    return (2 <= n < settings.processes - 1
            and 0 < left < pair_s + _rounds_per_pair(settings) * round_s)


def _rounds_per_pair(settings) -> int:
    """The rounds each worker pair runs: max_rounds split over the pairs, rounded up."""
    return -(-settings.max_rounds // settings.processes)


def _start_cpus(settings, pair_no) -> list:
    """With same_cpu, each worker of pair `pair_no` starts on a CPU set of its own
    (placement.apart): its bursts run on one set, and a framework started on more keeps a
    larger thread pool there (kmicro's JAX read 2.2x: docs/validation.md, "Fidelity
    against an independent loop")."""
    return placement.apart(placement.halves(settings.same_cpu), 2, first=pair_no)


def _start(stacks, options, first, env=None, cpus=(None, None)) -> list:
    """[side A, side B], both workers starting at once (their imports are not timed), on
    `cpus` (A's, B's), greeted in the order `first` gives."""
    started = {i: _Side(stacks[i], options, env, cpus[i]) for i in first}
    try:
        for i in first:
            started[i].ready()
    except (runner.WorkerDied, runner.WorkerTimeout):
        for side in started.values():
            side.close()
        raise
    return [started[0], started[1]]


def _prepare(sides, first, case_list, passes, options, sink, progress, pairs=None) -> dict:
    """Compile and check every pass on both sides (in the order `first` gives); the first
    time (`pairs` None) for every case, later only for the passes still undecided in `pairs`,
    which keep their records."""
    fresh = {}
    for case in case_list:
        wanted = [p for p in passes if pairs is None or (case.id, p) in pairs]
        if not wanted:
            continue
        # Only the first worker pair checks the numbers: later ones run the same code.
        payload = {"kind": "ab", "task": "prepare", "case": cases_mod.case_to_dict(case),
                   "passes": wanted, "seed": options.seed, "check": pairs is None}
        # Both sides prepare at once, each on the CPU set it started on: nothing is timed
        # here, and one side after the other left a CPU idle for a sixth of a torch A/A
        # (21 of 130 s).
        for i in first:
            sides[i].send(payload)
        got = {}
        for i in first:
            try:
                got[i] = sides[i].answers()
                sides[i].prepared[case.id] = payload
            except (runner.WorkerDied, runner.WorkerTimeout) as exc:
                sides[i].restart(case.id)
                got[i] = [{"pass": p, "status": "error", "error": str(exc)} for p in wanted]
        for rec_a, rec_b in zip(got[0], got[1]):
            key = (case.id, rec_a["pass"])
            if rec_a["status"] == rec_b["status"] == "ok":
                fresh[key] = pairs.pop(key) if pairs is not None else _Pair((rec_a, rec_b))
            else:
                if pairs is not None:
                    pairs.pop(key)
                sink(_unmeasured(sides, case.id, rec_a, rec_b))
        if progress and pairs is None:
            progress("prepare", case.id)
    return fresh


def _rounds(sides, pairs, settings, sink, progress, rng, done, until, timer, group) -> int:
    """Rounds `done`+1 .. `until` over the undecided passes, on worker pair number `group`,
    while the budget lasts (`timer`: the first round's monotonic time, the budget's
    seconds); returns the last round run."""
    (clock, budget), active = timer, list(pairs)
    while done < min(until, settings.max_rounds) and active:
        done += 1
        rng.shuffle(active)
        for key in list(active):
            if not _time_pair(sides, key, pairs[key], settings, rng, group):
                active.remove(key)
                sink(_unmeasured(sides, key[0], *pairs.pop(key).prepared))
        if done >= settings.min_rounds:
            for key in [k for k in active
                        if stops(pairs[k].times, pairs[k].groups, done, settings)]:
                active.remove(key)
                sink(_record(sides, key, pairs.pop(key), settings, budget, "settled"))
        spent = time.monotonic() - clock
        if progress:
            progress("round", f"{done}: {len(active)} undecided, {spent:.0f} of {budget:.0f} s")
        if spent > budget:
            break
    return done


def stops(times, groups, done, settings) -> bool:
    """Whether a pass with these rounds (A's and B's times, the worker pair of each) leaves
    the rounds after round `done`. No change (the 95 % interval the verdict uses within the
    minimum effect) stops it once a second worker pair has timed it: the interval then
    spans both pairs' own speeds, and such looks can only end a pass as `same`, never
    flag one. A change stops it only once a third pair has (two pairs' biases would
    otherwise settle it), and only on the 99 % interval: every look at the data is another
    chance to call noise a change. At `regular_rounds`, a pass whose 95 % verdict is
    conclusive stops too: one look, as a cap there would take. Looking so after every later
    round, a control called faster in 3 of 20 replayed planted runs, none otherwise."""
    timed_by = len(set(groups))
    if timed_by < min(2, settings.processes):
        return False
    # The rounds' own interval first: the pairs' spread only widens it, so where that one is
    # not conclusive neither is the full one.
    if not ab_stats.compare(times[0], times[1], ab_stats.CONFIDENCE).conclusive(
            settings.min_effect):
        return False
    judged = ab_stats.compare(times[0], times[1], ab_stats.CONFIDENCE, groups)
    if not judged.conclusive(settings.min_effect):
        return False  # the 99 % interval holds the 95 % one: not settled either
    if judged.verdict(settings.min_effect) == "same":
        return True
    if timed_by < min(3, settings.processes):
        return False
    if done == settings.regular_rounds:
        return True
    return ab_stats.compare(times[0], times[1], ab_stats.EARLY_CONFIDENCE, groups).settled(
        settings.min_effect)


def _time_pair(sides, key, pair, settings, rng, group) -> bool:
    """One burst on each side, in a random order; False when a side failed (it restarts)."""
    order = [0, 1] if rng.random() < 0.5 else [1, 0]
    task = {"kind": "ab", "task": "time", "case_id": key[0], "pass": key[1],
            "samples": burst_samples(pair, settings)}
    sets = placement.halves(settings.same_cpu)
    timed_on = rng.choice(sets) if sets else None
    for i in order:
        if sets:
            placement.turn(sides[i].worker.proc.pid, sides[1 - i].worker.proc.pid, timed_on,
                           placement.available())
        try:
            (burst,) = sides[i].call(task)
        except (runner.WorkerDied, runner.WorkerTimeout) as exc:
            sides[i].restart(key[0])
            pair.prepared[i].update(status="error", error=str(exc))
            return False
        # The fastest sample: load from elsewhere only ever adds time, and of nine short
        # samples one mostly misses it (under a bursty load on 2 cores, the median of three
        # 5 ms samples left a planted 1.5x "same" in 4 of 6 runs; the min of nine: 0 of 12).
        pair.times[i].append(min(burst["samples"]))
    pair.groups.append(group)
    return True


def _call_times(pair) -> tuple:
    """(A's, B's) seconds a call of this pass, as its prepare measured them. A worker of an
    older kmicro (a stack with `kmicro@REV`) does not say: 0 keeps `ops_floor` a floor."""
    return tuple(record.get("call_s", 0.0) for record in pair.prepared)


def burst_samples(pair, settings) -> int:
    """Samples in this pass's next burst: `settings.samples`, or fewer for a pass whose
    samples (loops x its per-call time, read from the rounds so far) are long."""
    if not pair.times[0]:
        return settings.samples
    sample_s = statistics.median(pair.times[0]) * pair.prepared[0].get("loops", 1)
    return max(settings.min_samples, min(settings.samples, math.ceil(settings.burst_s / sample_s)))


def _base(sides, case_id, pass_name, rec_a, rec_b) -> dict:
    info = dict(stack=f"{sides[0].stack.name} vs {sides[1].stack.name}",
                backend=rec_b.get("backend"), versions=rec_b.get("versions", {}),
                malloc=rec_b.get("malloc"),
                python=rec_b.get("python"), device=rec_b.get("device"),
                device_name=rec_b.get("device_name"), jit=rec_b.get("jit"),
                cpus=rec_b.get("cpus"), kernel_env=rec_b.get("kernel_env"))
    return records.new(
        "ab", info, case_id, pass_name, stack_a=sides[0].stack.name,
        stack_b=sides[1].stack.name, versions_a=rec_a.get("versions", {}),
        versions_b=rec_b.get("versions", {}), device_a=rec_a.get("device"),
        device_b=rec_b.get("device"), op=rec_b.get("op"), input_shape=rec_b.get("input_shape"),
        data_format=rec_b.get("data_format"), median_a_s=None, median_b_s=None, ratio=None,
        ci_low=None, ci_high=None, verdict=None, mde=None, rounds=0)


def _record(sides, key, pair, settings, budget, ended) -> dict:
    """The A/B record of a pass whose rounds `ended` ("settled": its verdict was; "rounds":
    at max_rounds; "budget": the run's `budget` seconds were spent first)."""
    record = _base(sides, key[0], key[1], *pair.prepared)
    sets = placement.halves(settings.same_cpu)
    record.update(status="ok", max_rel_err=max(r["max_rel_err"] for r in pair.prepared),
                  compile_s=pair.prepared[1]["compile_s"], same_cpu=bool(sets),
                  cpu_sets=[sorted(s) for s in sets], budget_s=budget, ended_by=ended,
                  **_judged(pair.times, pair.groups, settings.min_effect))
    return record


def _judged(times, groups, min_effect) -> dict:
    """The fields of a record that come from its rounds."""
    judged = ab_stats.compare(times[0], times[1], ab_stats.CONFIDENCE, groups)
    a, b = (statistics.median(t) for t in times)
    return dict(median_a_s=a, median_b_s=b, median_s=b, ratio=judged.ratio,
                ci_low=judged.ci_low, ci_high=judged.ci_high, mde=judged.mde,
                verdict=judged.verdict(min_effect), rounds=judged.rounds,
                conclusive=judged.conclusive(min_effect),
                rounds_needed=ab_stats.rounds_needed(judged.mde, judged.rounds, min_effect),
                min_effect=min_effect, times_a_s=list(times[0]), times_b_s=list(times[1]),
                round_pairs=list(groups))


def pooled(first, more, min_effect) -> dict:
    """One record of the rounds of two runs of the same comparison (`more` ran after `first`,
    on worker pairs of its own): `more`'s record, judged on both runs' rounds."""
    offset = max(first["round_pairs"]) + 1
    groups = first["round_pairs"] + [g + offset for g in more["round_pairs"]]
    times = (first["times_a_s"] + more["times_a_s"], first["times_b_s"] + more["times_b_s"])
    return dict(more, **_judged(times, groups, min_effect))


def _unmeasured(sides, case_id, rec_a, rec_b) -> dict:
    """A pass not compared: the status of the side that could not run it (A's first)."""
    bad = rec_a if rec_a["status"] != "ok" else rec_b
    side = sides[0] if bad is rec_a else sides[1]
    record = _base(sides, case_id, rec_a["pass"], rec_a, rec_b)
    record.update(status=bad["status"], verdict=bad["status"],
                  error=f"{side.stack.name}: {bad.get('error')}")
    return record


def _failed(stack_a, stack_b, case_id, pass_name, status, error) -> dict:
    info = {"stack": f"{stack_a.name} vs {stack_b.name}"}
    return records.new("ab", info, case_id, pass_name, stack_a=stack_a.name,
                       stack_b=stack_b.name, status=status, verdict=status, error=error,
                       rounds=0)
