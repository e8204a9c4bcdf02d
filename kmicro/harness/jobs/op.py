"""Job kind "op": one layer case, one record per pass, checked against the float64 reference
before it is timed.

A job is {"kind": "op", "case": {...}, "passes": [...], "quick": bool, "seed": int}; with
"paired": true, the worker hands the machine to the runner between its samples
(protocol.turn: `kmicro calibrate --independent` times the independent loop there).
"""
import gc

from kmicro.backends.base import UnsupportedPass
from kmicro.core import cases, flops, ops, random_checks, records, reference, timing
from kmicro.core.memory import fields as memory_fields
from kmicro.harness.protocol import Job, message, turn

__all__ = ["KIND", "TOLERANCE", "CaseData", "job", "run", "blank_record", "check", "checked",
           "insist_on_gpu", "memory"]

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


def blank_record(info, case, pass_name, data=None) -> dict:
    """Every contract field of an op record, status still unset; FLOPs and bytes when the
    layer can take the case's shape (for a layer checked against its float64 twin, once
    `data` says what the built layer holds)."""
    op = ops.get(case.op)
    record = records.new(
        KIND, info, case.id, pass_name, op=case.op, layer=case.layer, family=op.family,
        config=case.kwargs, input_shape=list(case.input_shape), n_inputs=case.n_inputs,
        data_format=case.data_format, dtype=case.dtype, reference=None)
    shapes = (data.out_shape, data.weight_shapes) if data else (None, None)
    if op.reference_kind == ops.FLOAT64_TWIN and data is None:
        return record
    try:
        record.update(flops=flops.flops(case, pass_name, *shapes),
                      bytes=flops.bytes_moved(case, pass_name, *shapes))
    except (ValueError, TypeError, KeyError, IndexError):
        pass  # a shape or option the layer cannot take: the record's error says so
    return record


def case_data(adapter, case, seed):
    """(CaseData, None), or (None, the fields of every pass's record when it cannot be
    made: the layer does not exist here, or rejects its options or shape)."""
    try:
        return CaseData(case, seed, adapter), None
    except UnsupportedPass as exc:
        return None, {"status": "unsupported", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - e.g. a shape the layer cannot take
        return None, {"status": "error", "error": message(exc)}


def run(adapter, info, job) -> list:
    case = cases.case_from_dict(job["case"])
    policy = timing.Policy.quick() if job.get("quick") else timing.Policy()
    paired = job.get("paired")
    data, failure = case_data(adapter, case, job.get("seed", 0))
    results = {}
    for pass_name in job["passes"]:
        record = blank_record(info, case, pass_name, data)
        fields = _run_pass(adapter, case, pass_name, data, policy, paired) if data else failure
        record.update(insist_on_gpu(fields, info["requested_device"]))
        results[pass_name] = record
        gc.collect()
    _derive_backward(results)
    return list(results.values())


class CaseData:
    """The seeded weights, inputs and dy of a case, and its memoised float64 reference: the
    op's NumPy reference, or for a KerasLayer the layer's float64 twin on this worker's
    backend (`adapter.layer_io` and `adapter.float64_twin`; UnsupportedPass where the
    family has no such layer)."""

    def __init__(self, case, seed, adapter=None):
        self.case, self.adapter = case, adapter
        self.twin = ops.get(case.op).reference_kind == ops.FLOAT64_TWIN
        if self.twin:
            if getattr(adapter, "layer_io", None) is None:
                raise UnsupportedPass(f"{case.layer}: this stack's Keras runs only the seed "
                                      "layers")
            self.weight_shapes, self.out_shape = adapter.layer_io(case)
        else:
            self.weight_shapes = reference.weight_shapes(case)
            self.out_shape = reference.output_shape(case)
        self.weights = reference.make_weights(case, seed, self.weight_shapes)
        self.inputs = reference.make_inputs(case, seed)
        self.dy = reference.make_dy(case, self.out_shape, seed)
        self._memo = {}

    def __iter__(self):
        return iter((self.weights, self.inputs, self.dy))

    def reference(self, training, backward, mask=None):
        if mask is not None:
            return reference.compute(self.case, self.inputs, self.weights, training,
                                     self.dy if backward else None, mask)
        key = (training and (self.twin or ops.get(self.case.op).training_matters), backward)
        if key not in self._memo:
            dy = self.dy if backward else None
            self._memo[key] = (
                self.adapter.float64_twin(self.case, self.weights, self.inputs, key[0], dy)
                if self.twin else
                reference.compute(self.case, self.inputs, self.weights, key[0], dy))
        return self._memo[key]

    def probe(self, pass_name):
        """The fingerprint of the float64 twin's outputs for `pass_name` (reference.probe),
        comparable across stacks; None for the NumPy references and random passes."""
        if not self.twin or _random_kind(self.case, pass_name):
            return None
        y, grads = self.reference(pass_name != "forward", pass_name == "backward")
        return reference.probe([y, *(grads or [])])


def _run_pass(adapter, case, pass_name, data, policy, paired=False) -> dict:
    prepared, fields = checked(adapter, case, pass_name, data)
    if prepared is None:
        return fields
    m = timing.measure(prepared.step, prepared.sync, policy,
                       between=_handing_over(prepared) if paired else None)
    fields.update(m.summary(), status="ok", compile_s=fields["compile_s"])
    fields.update(memory(prepared))
    if paired:  # the runner pairs these with the other side's blocks
        fields["samples_s"] = m.samples
    return fields


def memory(prepared) -> dict:
    """`peak_bytes` and `memory_method` of one more call of the pass, after its timing so the
    allocator's accounting never runs between samples; None with the reason where the stack
    cannot tell."""
    return memory_fields(prepared.peak_memory)


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
        err, tolerance, against = check(case, pass_name, data, prepared.outputs(out), device)
        probe = data.probe(pass_name)
    except UnsupportedPass as exc:
        return None, {"status": "unsupported", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a failing case is a record, not a crash
        return None, {"status": "error", "error": message(exc)}
    fields = {"device": device, "compile_s": compile_s, "max_rel_err": err,
              "tolerance": tolerance, "reference": against, "reference_probe": probe}
    if not err <= tolerance:
        fields.update(status="wrong", error=f"max relative error {err:.3g} > {tolerance:g} "
                                            f"against the {against}; not timed")
        return None, fields
    return prepared, fields


def insist_on_gpu(fields, requested) -> dict:
    """A pass asked to run on the GPU whose outputs live on the CPU is an error (report 000)."""
    if requested == "gpu" and fields.get("device") == "cpu":
        return dict(fields, status="error", median_s=None, iqr_s=None,
                    error="--device gpu, but this pass ran on the CPU")
    return fields


def check(case, pass_name, data, got, device="cpu") -> tuple:
    """(max relative error, tolerance, reference name) of a pass's outputs (and gradients)
    against its float64 reference, or of a random layer's training pass against the
    properties any draw must have (kmicro/core/random_checks.py)."""
    y, grads = got
    training, backward = pass_name != "forward", pass_name == "backward"
    kind = _random_kind(case, pass_name)
    if kind:
        dx = grads[0] if backward else None
        err, tolerance, what = random_checks.check(kind, case.kwargs, data.inputs[0], y,
                                                   data.dy if backward else None, dx)
        return err, max(tolerance, TOLERANCE[device]), what
    mask = (y != 0) if ops.get(case.op).mask_from_backend and training else None
    want_y, want_grads = data.reference(training, backward, mask)
    against = ("float64 twin of the layer" if data.twin
               else "float64 NumPy reference")
    if backward:
        return reference.max_rel_err([y, *grads], [want_y, *want_grads]), TOLERANCE[device], \
            against
    return reference.max_rel_err([y], [want_y]), TOLERANCE[device], against


def _random_kind(case, pass_name):
    """How a random layer's training pass is checked (random_checks.KINDS), else None."""
    return getattr(ops.get(case.op), "random", None) if pass_name != "forward" else None


def _derive_backward(results):
    """backward_s = (forward+backward) - forward(training), both measured in this job."""
    fb, ft = results.get("backward"), results.get("forward_train")
    if fb and ft and fb["status"] == ft["status"] == "ok":
        fb["backward_s"] = fb["median_s"] - ft["median_s"]

