"""An A/A check of `kmicro calibrate --independent`'s turns: two independent-loop processes of
one stack time the same pass in alternating blocks, as kmicro's worker and the independent
loop do. The ratio of their medians should be 1 whatever the machine does; a bias here would
be the protocol's, not kmicro's. docs/measurements.md, "Fidelity".

    .venv/bin/python scripts/paired_aa.py tensorflow dense "dense(units=10)@32x512" 8

Arguments: stack, op, case id, pairs of fresh processes (default 8).
"""
import statistics
import sys

from kmicro.core import cases, stacks
from kmicro.harness import independent

WARM_TURNS, TURNS = 20, 35  # as many blocks as a kmicro measurement takes samples, roughly


def main(stack_name, op_name, case_id, pairs="8"):
    stack = stacks.resolve([stack_name])[0]
    case = next(c for c in cases.select([op_name]) if c.id == case_id)
    ratios = []
    for _ in range(int(pairs)):
        a, b = independent.IndependentLoop(stack), independent.IndependentLoop(stack)
        try:
            for side in (a, b):
                side.prepare(case, "forward")
            for _ in range(WARM_TURNS):
                a.block(), b.block()
            times = [(a.block(), b.block()) for _ in range(TURNS)]
        finally:
            a.close(), b.close()
        ratios.append(statistics.median(t[0] for t in times) /
                      statistics.median(t[1] for t in times))
        print(f"{ratios[-1]:.3f}", flush=True)
    print(f"{stack_name} {case.id} forward, A/A over {pairs} process pairs: median "
          f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
