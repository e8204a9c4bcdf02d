"""kmicro's compiled step against the independent loop's, in one process: what kmicro's call
path (its adapter, the arguments it binds, its sync) costs per call, apart from any process
or machine effect. docs/measurements.md, "Fidelity".

    KERAS_BACKEND=jax .venv/bin/python scripts/step_overhead.py dense "dense(units=10)@32x512"

Arguments: op, case id (`kmicro ops --list` shows them), passes (default forward,backward).
Both steps are built in this process (kmicro's as `kmicro ops` builds and checks it, the other
by kmicro/backends/independent_loop.py), warmed up, then timed in 60 alternating blocks of the
same number of calls (>= 10 ms), in a random order per block pair.
"""
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kmicro", "backends"))
import independent_loop as loop  # noqa: E402

from kmicro import backends  # noqa: E402
from kmicro.core import cases  # noqa: E402
from kmicro.harness import independent  # noqa: E402
from kmicro.harness.jobs import op  # noqa: E402

PAIRS = 60


def main(op_name, case_id, passes="forward,backward"):
    adapter = backends.load("keras3")
    matching = [c for c in cases.select([op_name]) if c.id == case_id]
    if not matching:
        raise SystemExit(f"no {op_name} case {case_id!r}; `kmicro ops --list` shows them")
    case, rng = matching[0], random.Random(0)
    for pass_name in passes.split(","):
        prepared, fields = op.checked(adapter, case, pass_name, op.CaseData(case, 0))
        if prepared is None:
            print(f"{case.id} {pass_name}: {fields['status']}: {fields.get('error')}")
            continue
        theirs = getattr(loop, os.environ["KERAS_BACKEND"] + "_step")(
            *loop.layer_and_data(independent.request(case, pass_name)), pass_name)
        ours = loop.synced(prepared.step, prepared.sync, "kmicro")
        for step in (ours, theirs):
            loop.warm_up(step.call)
        number = theirs.calls_per_block()
        times = {"kmicro": [], "independent": []}
        for _ in range(PAIRS):
            pair = [("kmicro", ours), ("independent", theirs)]
            rng.shuffle(pair)
            for name, step in pair:
                times[name].append(step.run(number) / number)
        k, i = (statistics.median(times[n]) for n in ("kmicro", "independent"))
        print(f"{os.environ['KERAS_BACKEND']} {case.id} {pass_name}: kmicro {k * 1e6:.1f} us, "
              f"independent {i * 1e6:.1f} us per call, ratio {k / i:.3f} "
              f"({PAIRS} block pairs of {number} calls)")


if __name__ == "__main__":
    main(*sys.argv[1:])
