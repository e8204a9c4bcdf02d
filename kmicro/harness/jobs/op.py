"""Job kind "op": one layer case, one record per pass, checked against the float64 reference
before it is timed.

A job is {"kind": "op", "case": {...}, "passes": [...], "quick": bool, "seed": int}; with
"paired": true, the worker hands the machine to the runner between its samples
(protocol.turn: `kmicro calibrate --independent` times the independent loop there).
"""
import gc

from kmicro.backends.base import UnsupportedPass
from kmicro.core import cases, flops, ops, records, reference, timing
from kmicro.harness.protocol import Job, message, turn

__all__ = ["KIND", "TOLERANCE", "CaseData", "job", "run", "blank_record", "check", "checked",
           "insist_on_gpu"]

KIND = "op"
TOLERANCE = {"cpu": 1e-3, "gpu": 1e-2}  # GPU backends may use TF32 for conv/matmul
PAIRED_REWARM_S = 0.001  # untimed calls after each turn of a paired measurement


def job(case, passes, options) -> Job:
    """The runner's job for `case` (a calibrate job when options.calibrate_rounds > 0)."""
    payload = {"kind": "calibrate" if options.calibrate_rounds else KIND,
               "case": cases.case_to_dict(case), "passes": list(passes),
               "quick": options.quick, "seed": options.seed,
               "calibrate": options.calibrate_rounds}
    return Job(payload, tuple(passes), lambda info, p: blank_record(info, case, p), case.id)


def blank_record(info, case, pass_name) -> dict:
    """Every contract field of an op record, status still unset; FLOPs and bytes when the
    layer can take the case's shape."""
    record = records.new(
        KIND, info, case.id, pass_name, op=case.op, layer=case.layer, config=case.kwargs,
        input_shape=list(case.input_shape), n_inputs=case.n_inputs,
        data_format=case.data_format, dtype=case.dtype)
    try:
        record.update(flops=flops.flops(case, pass_name), bytes=flops.bytes_moved(case, pass_name))
    except ValueError:
        pass  # a shape the layer cannot take: the record's error says so
    return record


def run(adapter, info, job) -> list:
    case = cases.case_from_dict(job["case"])
    policy = timing.Policy.quick() if job.get("quick") else timing.Policy()
    paired = job.get("paired")
    try:
        data = CaseData(case, job.get("seed", 0))
    except Exception as exc:  # noqa: BLE001 - e.g. a shape the layer cannot take
        data, failure = None, {"status": "error", "error": message(exc)}
    results = {}
    for pass_name in job["passes"]:
        record = blank_record(info, case, pass_name)
        fields = _run_pass(adapter, case, pass_name, data, policy, paired) if data else failure
        record.update(insist_on_gpu(fields, info["requested_device"]))
        results[pass_name] = record
        gc.collect()
    _derive_backward(results)
    return list(results.values())


class CaseData:
    """The seeded weights, inputs and dy of a case, and its memoised float64 reference."""

    def __init__(self, case, seed):
        self.case = case
        self.weights = reference.make_weights(case, seed)
        self.inputs = reference.make_inputs(case, seed)
        self.dy = reference.make_dy(case, reference.output_shape(case), seed)
        self._memo = {}

    def __iter__(self):
        return iter((self.weights, self.inputs, self.dy))

    def reference(self, training, backward, mask=None):
        if mask is not None:
            return reference.compute(self.case, self.inputs, self.weights, training,
                                     self.dy if backward else None, mask)
        key = (training and ops.get(self.case.op).training_matters, backward)
        if key not in self._memo:
            self._memo[key] = reference.compute(self.case, self.inputs, self.weights, key[0],
                                                self.dy if backward else None)
        return self._memo[key]


def _run_pass(adapter, case, pass_name, data, policy, paired=False) -> dict:
    prepared, fields = checked(adapter, case, pass_name, data)
    if prepared is None:
        return fields
    m = timing.measure(prepared.step, prepared.sync, policy,
                       between=_handing_over(prepared) if paired else None)
    fields.update(m.summary(), status="ok", compile_s=fields["compile_s"])
    if paired:  # the runner pairs these with the other side's blocks
        fields["samples_s"] = m.samples
    return fields


def _handing_over(prepared):
    """`timing.measure`'s `between` for a paired measurement: the runner has the machine
    (protocol.turn), then the step runs untimed for PAIRED_REWARM_S, as the other side does
    before each of its blocks, so each sample starts as warm as in a measurement alone."""
    def between(phase):
        turn(phase)
        timing.rewarm(prepared.step, prepared.sync, PAIRED_REWARM_S)
    return between


def checked(adapter, case, pass_name, data, compare=True) -> tuple:
    """(the compiled pass, its record fields) when it matches the float64 reference, else
    (None, fields saying why: unsupported, error or wrong). Compile time is the first call.
    compare=False: the same code was already checked in another process (kmicro ab's later
    worker pairs); max_rel_err is then None."""
    try:
        prepared = adapter.prepare(case, pass_name, *data)
        out, compile_s = timing.first_call(prepared.step, prepared.sync)
        device = prepared.device_of(out)
        if not compare:
            return prepared, {"device": device, "compile_s": compile_s, "max_rel_err": None,
                              "tolerance": TOLERANCE[device]}
        err = check(case, pass_name, data, prepared.outputs(out))
    except UnsupportedPass as exc:
        return None, {"status": "unsupported", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a failing case is a record, not a crash
        return None, {"status": "error", "error": message(exc)}
    fields = {"device": device, "compile_s": compile_s, "max_rel_err": err,
              "tolerance": TOLERANCE[device]}
    if not err <= TOLERANCE[device]:
        fields.update(status="wrong", error=f"max relative error {err:.3g} > {TOLERANCE[device]:g} "
                                            "against the float64 NumPy reference; not timed")
        return None, fields
    return prepared, fields


def insist_on_gpu(fields, requested) -> dict:
    """A pass asked to run on the GPU whose outputs live on the CPU is an error (report 000)."""
    if requested == "gpu" and fields.get("device") == "cpu":
        return dict(fields, status="error", median_s=None, iqr_s=None,
                    error="--device gpu, but this pass ran on the CPU")
    return fields


def check(case, pass_name, data, got) -> float:
    """Max relative error of a pass's outputs (and gradients) against the float64 reference."""
    y, grads = got
    training = pass_name != "forward"
    mask = (y != 0) if ops.get(case.op).mask_from_backend and training else None
    want_y, want_grads = data.reference(training, pass_name == "backward", mask)
    if pass_name == "backward":
        return reference.max_rel_err([y, *grads], [want_y, *want_grads])
    return reference.max_rel_err([y], [want_y])


def _derive_backward(results):
    """backward_s = (forward+backward) - forward(training), both measured in this job."""
    fb, ft = results.get("backward"), results.get("forward_train")
    if fb and ft and fb["status"] == ft["status"] == "ok":
        fb["backward_s"] = fb["median_s"] - ft["median_s"]

