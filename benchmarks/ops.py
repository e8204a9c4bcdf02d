"""asv suite: forward / forward (training) / forward+backward of every catalog case.

Thin on purpose: kmicro's adapter builds and compiles each case once per process
(asv-runner re-runs `setup` before every sample, so compiling there would be timed
over and over); the timed call includes the device sync.
"""
import os

from kmicro import cases, reference, timing

CATALOG = {c.id: c for fmt in cases.DATA_FORMATS for c in cases.default_catalog(fmt)}
_PREPARED = {}


def _prepared(case_id, pass_name):
    key = (case_id, pass_name)
    if key not in _PREPARED:
        from kmicro.backends import keras3, base  # framework import: only inside the env

        case = CATALOG[case_id]
        data = (reference.make_weights(case), reference.make_inputs(case),
                reference.make_dy(case, reference.output_shape(case)))
        try:
            prepared = keras3.Adapter().prepare(case, pass_name, *data)
        except base.UnsupportedPass as exc:
            raise NotImplementedError(str(exc)) from None
        out, compile_s = timing.first_call(prepared.step, prepared.sync)
        _PREPARED[key] = prepared, compile_s
    return _PREPARED[key]


class Ops:
    params = (list(CATALOG), list(cases.PASSES))
    param_names = ["case", "pass"]
    timeout = 300

    def setup(self, case_id, pass_name):
        if os.environ.get("KERAS_BACKEND") == "numpy" and pass_name == "backward":
            raise NotImplementedError("numpy backend: forward only")
        self.prepared, _ = _prepared(case_id, pass_name)

    def time_pass(self, case_id, pass_name):
        self.prepared.sync(self.prepared.step())

    def track_compile_s(self, case_id, pass_name):
        return _prepared(case_id, pass_name)[1]

    track_compile_s.unit = "seconds"
