"""asv suite: one layer case, one pass, on the stack of this environment (KERAS_BACKEND).

Parameters are kmicro's case ids (catalog KMICRO_ASV_CATALOG, default `all`: the seed layers
and Keras' layer benchmark, both layouts; plus any case ids in KMICRO_ASV_CASES, separated by
';') and passes; they are the history's keys, so they never change spelling
(kmicro/core/cases.py). A pass is built, compiled and checked
against the float64 reference once per process; `time_pass` times one synchronised call
(`backward` = forward+backward, as in `kmicro ops`); `track_peak_bytes` its memory. A combination the stack cannot run
(numpy backward, TensorFlow's channels_first conv on a CPU) is skipped, a wrong result fails.
"""
import os

from kmicro.backends.base import UnsupportedPass
from kmicro.core import cases, timing
from kmicro.harness.jobs.op import CaseData, check, memory

from .common import adapter, cached, named_cases, skip

CATALOG = os.environ.get("KMICRO_ASV_CATALOG") or "all"
CASES = {c.id: c for fmt in cases.DATA_FORMATS for c in cases.catalog(CATALOG, fmt)}
CASES.update((c.id, c) for c in named_cases())


def prepared(case_id, pass_name):
    """(Prepared, compile_s) of a checked pass, once per process."""
    return cached((case_id, pass_name), lambda: _prepare(CASES[case_id], pass_name))


def _prepare(case, pass_name):
    try:
        data = CaseData(case, 0, adapter())
        ready = adapter().prepare(case, pass_name, *data)
        out, compile_s = timing.first_call(ready.step, ready.sync)
    except UnsupportedPass as exc:
        raise skip(str(exc)) from None
    err, tolerance, against = check(case, pass_name, data, ready.outputs(out), ready.device_of(out))
    if not err <= tolerance:
        raise AssertionError(f"{case.id} {pass_name}: max relative error {err:.3g} against the "
                             f"{against}; not timed")
    return ready, compile_s


class Ops:
    params = (list(CASES), list(cases.PASSES))
    param_names = ["case", "pass"]
    timeout = 300
    warmup_time = 0.1  # the pass is already compiled and called once in setup

    def setup(self, case_id, pass_name):
        self.ready, self.compile_s = prepared(case_id, pass_name)

    def time_pass(self, case_id, pass_name):
        self.ready.sync(self.ready.step())

    def track_compile_s(self, case_id, pass_name):
        """First call (trace + compile + run) of the pass, seconds."""
        return self.compile_s

    track_compile_s.unit = "seconds"

    def track_peak_bytes(self, case_id, pass_name):
        """Peak bytes one call holds beyond its inputs and weights, by the backend's own
        allocator (kmicro.harness.jobs.op.memory); NaN where the stack cannot tell."""
        held = memory(self.ready)["peak_bytes"]
        return float("nan") if held is None else held

    track_peak_bytes.unit = "bytes"
