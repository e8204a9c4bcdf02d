"""Start worker pairs as `kmicro ab` starts them and look for a worker slower than its twin.

    .venv/bin/python scripts/worker_pairs.py [--stack jax] [--pairs 60]

Each pair is two fresh workers of one stack, started and prepared (every case of the default
catalog) exactly as `kmicro ab STACK STACK` does. Both then time three memory-bound passes in
turn on one CPU, the other worker waiting on the other CPU. A worker more than 2x slower than
its twin on any of them is printed with the minor page faults its threads took over 20 ReLU
bursts, beside its twin's: a step that maps and faults its buffers afresh on every call shows
there. The workers get the environment kmicro gives them, so GLIBC_TUNABLES set here (the
user's own) replaces kmicro's allocator policy: run it with and without, to compare.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kmicro.analysis import ab  # noqa: E402
from kmicro.core import cases, stacks  # noqa: E402
from kmicro.harness import placement, runner  # noqa: E402

PASSES = ("forward", "forward_train", "backward")  # prepared, as `kmicro ab` prepares them
WATCHED = [("activation(activation=relu)@32x32x32x32/cl", "forward"),
           ("add()@32x32x32x16*2/cl", "forward"), ("batchnorm()@32x32x32x16/cl", "forward")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="jax")
    parser.add_argument("--pairs", type=int, default=60)
    args = parser.parse_args()
    stack = stacks.resolve([args.stack])[0]
    sets = placement.halves(True)
    if not sets:
        sys.exit("worker_pairs.py needs two CPUs it may pin to")
    print(f"GLIBC_TUNABLES={stacks.worker_env(stack, 'cpu')['GLIBC_TUNABLES']}")
    with tempfile.TemporaryDirectory(prefix="kmicro-pairs-") as cache:  # as `kmicro ab` keeps it
        slow = sum(_pair(stack, n, ab._compile_cache_env(cache), sets) for n in range(args.pairs))
    print(f"{slow} of {args.pairs} pairs had a worker over 2x slower than its twin")
    return 0


def _pair(stack, n, env, sets) -> bool:
    """Start, prepare and time pair number `n`; whether one of its workers was over 2x slower."""
    settings, options = ab.Settings(), runner.Options()
    first = ab.greeting_order(n)
    started = time.monotonic()
    sides = ab._start([stack, stack], options, first, env, ab._start_cpus(settings, n))
    try:
        ab._prepare(sides, first, cases.select(), list(PASSES), options, lambda r: None, None)
        best = {key: [_fastest(sides, i, key, sets[rep % 2]) for rep in range(3)
                      for i in (0, 1)] for key in WATCHED}
        times = {key: (min(v[0::2]), min(v[1::2])) for key, v in best.items()}
        print(f"pair {n} ({time.monotonic() - started:.0f} s): " + " | ".join(
            f"{key[0].split('@')[0]} A {a * 1e6:.0f} B {b * 1e6:.0f} us"
            for key, (a, b) in times.items()), flush=True)
        slower = [i for i in (0, 1) if any(t[i] > 2 * t[1 - i] for t in times.values())]
        for i in slower:
            print(f"  {'AB'[i]} slower; minor faults over 20 ReLU bursts: "
                  f"{_faults(sides, i, sets[0])} (its twin: {_faults(sides, 1 - i, sets[0])})")
    finally:
        for side in sides:
            side.close()
    return bool(slower)


def _fastest(sides, i, key, cpus) -> float:
    """Side i's fastest sample of one burst of `key`, timed on `cpus`, the other side waiting."""
    placement.turn(sides[i].worker.proc.pid, sides[1 - i].worker.proc.pid, cpus,
                   placement.available())
    (burst,) = sides[i].call({"kind": "ab", "task": "time", "case_id": key[0], "pass": key[1],
                              "samples": 9})
    return min(burst["samples"])


def _faults(sides, i, cpus) -> int:
    """Minor page faults side i's threads take over 20 ReLU bursts."""
    pid = sides[i].worker.proc.pid
    before = _minor_faults(pid)
    for _ in range(20):
        _fastest(sides, i, WATCHED[0], cpus)
    return _minor_faults(pid) - before


def _minor_faults(pid) -> int:
    """The process's minor faults, its threads' included (/proc/PID/stat field 10)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])


if __name__ == "__main__":
    sys.exit(main())
