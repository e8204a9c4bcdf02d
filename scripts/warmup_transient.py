"""How a freshly checked pass runs during its first second: the median call time per 100 ms
window, right after kmicro built, compiled and checked it against the float64 reference (as
`kmicro ops` does before it times). docs/measurements.md, "Fidelity".

    KERAS_BACKEND=jax .venv/bin/python scripts/warmup_transient.py dense channels_last backward 0

Arguments: op, data format, pass, index of the case among the op's catalog cases.
"""
import statistics
import sys
import time

from kmicro import backends
from kmicro.core import cases
from kmicro.harness.jobs import op


def main(op_name, data_format, pass_name, index):
    adapter = backends.load("keras3")
    case = cases.select([op_name], data_format)[int(index)]
    prepared, fields = op.checked(adapter, case, pass_name, op.CaseData(case, 0))
    if prepared is None:
        raise SystemExit(f"{case.id} {pass_name}: {fields['status']}: {fields.get('error')}")
    started, windows = time.perf_counter(), {}
    while time.perf_counter() - started < 1.0:
        t0 = time.perf_counter()
        for _ in range(10):
            prepared.sync(prepared.step())
        windows.setdefault(int((t0 - started) * 10), []).append((time.perf_counter() - t0) / 10)
    print(case.id, pass_name, "us per call, per 100 ms window:",
          " ".join(f"{statistics.median(v) * 1e6:.0f}" for _, v in sorted(windows.items())))


if __name__ == "__main__":
    main(*sys.argv[1:5])
