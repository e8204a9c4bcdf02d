"""`kmicro machine`: how much this machine can tell apart now.

Three looks, as `pyperf system show` takes: what the system says about its CPUs (model,
count, governor, turbo, load, time stolen by other guests), how each vCPU's speed moves
while all of them run the same loop at once, and a short A/A of one stack against itself on
a small and a large case, whose minimum detectable effects are scaled to what `kmicro ab`'s
defaults would reach. A figure that cannot be read here is None with the reason.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import time
from dataclasses import dataclass

from kmicro.analysis import ab, ab_stats
from kmicro.harness import placement

__all__ = ["Fact", "cpuinfo", "system_facts", "Drift", "vcpu_drift", "SMALL_CASE", "LARGE_CASE",
           "AA_PASSES", "aa_settings", "run_aa", "expected_mde", "smallest_effect", "advice"]

SMALL_CASE = "dense(units=10)@32x512"
LARGE_CASE = "batchnorm()@32x32x32x16/cl"
AA_PASSES = ("forward", "backward")
SLOW_BIN = 1.35  # a 5 ms bin this much slower than the CPU's fast bins counts as slow
BIN_S = 0.005
_CPU = "/sys/devices/system/cpu"
LOAD = "load average (1, 5, 15 min)"


@dataclass
class Fact:
    """One row of the system table: a value, or None and why it could not be read."""

    name: str
    value: object = None
    why_not: str = ""


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cpuinfo(field) -> list:
    text = _read("/proc/cpuinfo") or ""
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.split(":", 1)[0].strip() == field]


def _steal_share(seconds=0.5):
    """The share of all CPUs' time the hypervisor gave to other guests over `seconds`."""
    def read():
        line = (_read("/proc/stat") or "").splitlines()[:1]
        return [int(v) for v in line[0].split()[1:9]] if line else None
    before = read()
    time.sleep(seconds)
    after = read()
    if not before or len(before) < 8:
        return None
    delta = [b - a for a, b in zip(before, after)]
    return delta[7] / sum(delta) if sum(delta) else None


def system_facts() -> list:
    """[Fact]: CPU model and counts, affinity, load, frequency governor, turbo, frequency,
    isolated CPUs, stolen time."""
    models = cpuinfo("model name")
    mhz = [float(v) for v in cpuinfo("cpu MHz")]
    cpus = placement.available()
    governor = _read(f"{_CPU}/cpu0/cpufreq/scaling_governor")
    no_turbo, boost = _read(f"{_CPU}/intel_pstate/no_turbo"), _read(f"{_CPU}/cpufreq/boost")
    turbo = ("on" if no_turbo == "0" or boost == "1" else
             "off" if no_turbo == "1" or boost == "0" else None)
    steal = _steal_share()
    no_cpufreq = "no cpufreq in /sys (usual on VMs: the host sets the frequency)"
    return [
        Fact("CPU model", models[0] if models else None, "/proc/cpuinfo has no model name"),
        Fact("CPUs", os.cpu_count()),
        Fact("CPUs kmicro may use", ",".join(map(str, cpus)) if cpus else None,
             "no CPU affinity on this system"),
        Fact(LOAD,
             " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg")
             else None, "no load average on this system"),
        Fact("frequency governor", governor, no_cpufreq),
        Fact("turbo", turbo, "neither intel_pstate/no_turbo nor cpufreq/boost in /sys"),
        Fact("frequency (MHz, per CPU)", " ".join(f"{v:.0f}" for v in mhz) if mhz else None,
             "/proc/cpuinfo has no cpu MHz"),
        Fact("isolated CPUs", _read(f"{_CPU}/isolated") or "none"),
        Fact("time stolen by other guests", f"{steal:.1%}" if steal is not None else None,
             "/proc/stat has no steal time"),
    ]


@dataclass
class Drift:
    """Each CPU's share of slow 5 ms bins and median bin (as a multiple of its fast bins)
    while every CPU ran the same loop at once, and the correlation of two CPUs' speeds."""

    slow_share: dict  # cpu -> fraction of bins > SLOW_BIN x its fast bin
    median_x: dict  # cpu -> median bin / fast bin
    correlation: float = None  # of the first two CPUs' log speeds; None with one CPU
    bins: int = 0
    why_not: str = ""


def _loop_times(cpu, start, seconds, out):
    os.sched_setaffinity(0, {cpu})
    while time.time() < start:
        pass
    times = []
    while time.time() < start + seconds:
        t0 = time.perf_counter()
        total = 0
        for i in range(2000):
            total += i * i
        times.append((time.time(), time.perf_counter() - t0))
    out.put((cpu, times))


def _binned(times, start, seconds):
    import numpy as np

    edges = np.arange(start, start + seconds, BIN_S)
    when, took = np.array(times).T
    index = np.digitize(when, edges)
    return np.array([np.median(took[index == i]) if (index == i).any() else np.nan
                     for i in range(1, len(edges))])


def vcpu_drift(seconds=4.0, most=16) -> Drift:
    """One process pinned to each CPU (the first `most`) runs the same 2000-iteration
    pure-Python loop for `seconds`, all at once. Near-0 correlation means each vCPU changes
    speed on its own: two processes timed back to back on different vCPUs differ by that
    much whatever their code (what `kmicro ab`'s same-CPU rounds cancel)."""
    import numpy as np

    cpus = placement.available()[:most]
    if not cpus:
        return Drift({}, {}, why_not="no CPU affinity on this system: processes cannot be "
                                     "placed on one CPU each")
    out, start = multiprocessing.Queue(), time.time() + 1
    procs = [multiprocessing.Process(target=_loop_times, args=(c, start, seconds, out))
             for c in cpus]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    binned = {c: _binned(t, start, seconds) for c, t in got.items()}
    both = np.all([~np.isnan(b) for b in binned.values()], axis=0)
    slow, median = {}, {}
    for cpu, b in binned.items():
        fast = np.percentile(b[both], 5)
        slow[cpu] = float(np.mean(b[both] > SLOW_BIN * fast))
        median[cpu] = float(np.median(b[both]) / fast)
    correlation, why = None, ""
    if len(cpus) >= 2:
        correlation = float(np.corrcoef(np.log([binned[c][both] for c in cpus[:2]]))[0, 1])
    else:
        why = "one CPU: no second CPU to drift against"
    return Drift(slow, median, correlation, int(both.sum()), why)


AA_ROUNDS = 25  # every pass runs them all; the MDE at ab's most rounds is projected from them


def aa_settings(seconds) -> ab.Settings:
    """`kmicro ab`'s defaults, but every pass runs AA_ROUNDS rounds (no early stop: the
    spread of the rounds is what is measured) within `seconds`."""
    return ab.Settings(min_effect=0.0, budget_s=seconds, max_rounds=AA_ROUNDS,
                       processes=AA_ROUNDS // 5)


def run_aa(stack, case_list, options, seconds, progress=None) -> list:
    """The A/A records of `stack` against itself on `case_list` x AA_PASSES."""
    out = []
    ab.run(stack, stack, case_list, AA_PASSES, options, aa_settings(seconds), out.append,
           progress)
    return out


def expected_mde(record, rounds=ab.Settings.max_rounds):
    """The MDE a pass's A/A record would reach at `rounds` rounds (an interval of the median
    narrows as 1/sqrt(rounds)); None for a pass not measured, or measured once (its interval
    is a point)."""
    if record.get("status") != "ok" or (record.get("rounds") or 0) < 2:
        return None
    scale = math.sqrt(record["rounds"] / max(rounds, record["rounds"]))
    return math.expm1(math.log1p(record["mde"]) * scale)


def smallest_effect(aa_records):
    """The median over the A/A's passes of the MDE `kmicro ab`'s defaults would reach: the
    smallest effect it can tell apart here now. None when no pass was measured."""
    got = [m for m in map(expected_mde, aa_records) if m is not None]
    return statistics.median(got) if got else None


def advice(facts, drift, effect, min_effect=0.03) -> list:
    """Concrete steps that would narrow `kmicro ab`'s intervals here, from what was read."""
    by_name = {f.name: f.value for f in facts}
    lines = []
    # the load read before the A/A ran (which loads every CPU itself)
    load = float((by_name.get(LOAD) or "0").split()[0])
    if load > 0.3 * (os.cpu_count() or 1):
        lines.append(f"the load average is {load:.1f}: stop other work while measuring "
                     "(every process shares these CPUs)")
    if by_name.get("frequency governor") not in (None, "performance"):
        lines.append(f"the frequency governor is {by_name['frequency governor']}: "
                     "`cpupower frequency-set -g performance` (as `pyperf system tune` does)")
    if by_name.get("turbo") == "on":
        lines.append("turbo is on: its clock follows temperature and other cores' load; "
                     "turning it off steadies timings (`pyperf system tune`)")
    if drift.correlation is not None and drift.correlation < 0.5 and \
            max(drift.slow_share.values()) > 0.05:
        lines.append("the vCPUs change speed on their own: keep same-CPU rounds (the "
                     "default; not --no-same-cpu)")
    if effect is not None and effect > min_effect:
        needed = ab_stats.rounds_needed(effect, ab.Settings.max_rounds, min_effect)
        lines.append(f"to tell {min_effect:.0%} apart, give `kmicro ab` about {needed} rounds "
                     f"(--rounds {needed} --budget {max(600, 24 * needed)})")
    return lines
