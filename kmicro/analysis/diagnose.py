"""`kmicro diagnose`: explain backend-specific slow paths from the compiled graphs.

Framework-free: the facts come from "graph" jobs (kmicro/harness/jobs/graph.py) that the
runner sends to a worker of each stack, with its timeouts and restarts; a THEANO_FLAGS
variant (fixed at import) gets its own worker. This module turns facts into findings with a
`meaning` for users, and findings into records (JSON) and a table. See docs/guide-model-step.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from rich.table import Table

from kmicro.core import cases, records
from kmicro.core.stacks import worker_env
from kmicro.harness import runner
from kmicro.harness.jobs import graph

__all__ = ["FAMILIES", "PARTS", "MODEL_CASE", "run", "stack_records", "table"]

# Keras families with static graphs to read (Keras 3 builds BN from primitive ops everywhere).
FAMILIES = ("keras2", "keras1")

# bn: the catalog's BN case, both layouts; model: report 001's model predict (Theano);
# inplace: the same predict again with THEANO_FLAGS optimizer_excluding=inplace, for the cost.
PARTS = ("bn", "model", "inplace")
MODEL_CASE = "resnet_bn/predict"
LEVEL_STYLE = {"error": "bold red", "warn": "yellow", "info": ""}


@dataclass
class _Output:
    """What one part's graph job reported."""

    info: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)  # case id -> {name: value}
    errors: dict = field(default_factory=dict)  # case id -> message
    failure: tuple | None = None  # (status, message) when the job itself failed


def run(stack_list, options, parts=PARTS) -> list:
    """Records (JSON-able dicts) of findings for every stack; `options` is a runner.Options."""
    found = []
    for stack in stack_list:
        found += stack_records(stack, options, parts)
    return found


def stack_records(stack, options, parts=PARTS) -> list:
    if stack.family not in FAMILIES:
        return [_record(stack, {}, "-", None, "unsupported",
                        "diagnose reads Keras 2 and Keras 1 graphs (theano, theano-2019, tf1, "
                        "keras1-theano); Keras 3 builds BN from primitive ops on every backend")]
    if not stack.installed:
        return [_record(stack, {}, "-", None, "skipped",
                        f"stack {stack.name} is not installed (no {stack.interpreter})")]
    # the model part is report 001's Theano finding (Theano's profiler and inplace optimiser)
    wanted = [p for p in ("bn", "model")
              if p in parts and (p == "bn" or stack.backend == "theano")]
    outputs = _inspect(stack, options, wanted)
    found = []
    if "bn" in outputs:
        found += _bn_records(stack, options, outputs["bn"])
    if "model" in outputs:
        found.append(_model_record(stack, options, outputs["model"], "inplace" in parts))
    return found


# --- running the graph jobs -----------------------------------------------------------------

def _inspect(stack, options, parts, env=None) -> dict:
    """{part: _Output} of one worker of `stack`; `env`: extra environment of that worker."""
    samples, repeats = (64, 1) if options.quick else (320, 5)
    outputs = {}

    def sink(answer):
        outputs[answer["part"]] = _output(answer)

    # The worker starts even where --device gpu finds no GPU: the device finding says so.
    runner.run_jobs(stack, [graph.job(p, samples, repeats) for p in parts],
                    replace(options, gpu_required=False), sink, env=env)
    return outputs


def _output(answer) -> _Output:
    out = _Output(info=answer["info"])
    for msg in answer["messages"]:
        if msg["type"] == "finding":
            out.facts.setdefault(msg["case"], {})[msg["name"]] = msg["value"]
        else:
            out.errors[msg["case"]] = msg["error"]
    if answer["status"] != "ok":
        out.failure = (answer["status"], f"graph inspection failed: {answer['error']}")
    elif not answer["messages"]:
        out.failure = ("error", "graph inspection reported nothing")
    return out


def _without_inplace(stack, options) -> dict:
    """THEANO_FLAGS of the stack plus optimizer_excluding=inplace (a later flag wins)."""
    flags = worker_env(stack, options.device).get("THEANO_FLAGS")
    return {"THEANO_FLAGS": ",".join(filter(None, [flags, "optimizer_excluding=inplace"]))}


# --- BatchNormalization graphs ---------------------------------------------------------------------

def _bn_records(stack, options, out) -> list:
    records = []
    for data_format in cases.DATA_FORMATS:
        case = cases.select(["batchnorm"], data_format)[0]
        rec = _record(stack, out.info, case.id, data_format, "ok", op="batchnorm",
                      input_shape=list(case.input_shape))
        facts = out.facts.get(case.id, {})
        error = out.errors.get(case.id) or (out.failure or (None, None))[1]
        if error and not facts:
            rec.update(status=(out.failure or ("error",))[0], error=error)
        else:
            find = _theano_bn if stack.backend == "theano" else _tf1_bn
            _conclude(rec, find(data_format, facts, out.info, options.device), facts)
        records.append(rec)
    return records


def _theano_bn(data_format, f, info, requested) -> list:
    gpu_ops = f["forward_train.gpu_ops"] + f["backward.gpu_ops"]
    cudnn = f["forward_train.cudnn_bn_ops"] + f["backward.cudnn_bn_ops"]
    axes = tuple(f["bn_axes"])
    found = [_device(info.get("device", "cpu"), gpu_ops, requested)]
    if f.get("theano_bn_train_op") is False and not cudnn:
        found.append(_old_theano_bn_path(data_format, axes, gpu_ops))
    elif cudnn:
        found.append(_finding("bn_path", f"cuDNN ({cudnn} GpuDnnBatchNorm ops)", "info",
                              "BN runs as cuDNN's batch-norm kernel: the fast GPU path"))
    elif data_format == "channels_last":
        found.append(_finding(
            "bn_path", "generic reductions, no cuDNN", "warn",
            f"channels_last BN on Theano never reaches cuDNN (axes {axes}; Theano's cuDNN rewrite "
            "takes only (0,) or (0, 2, 3)); on a GPU switch to channels_first with axis=1"))
    else:
        found.append(_finding(
            "bn_path", "generic reductions, no cuDNN", "info" if not gpu_ops else "warn",
            f"axes {axes} are cuDNN-eligible, but " + (
                "this graph has no cuDNN BN op: check theano.gpuarray.dnn.dnn_available()"
                if gpu_ops else "this Theano runs on the CPU, where BN is reductions in any layout")))
    if "backward.op_classes" in f:
        found.append(_finding(
            "bn_op_classes", _op_summary(f["backward.op_classes"]), "info",
            "the op classes of the compiled forward+backward graph (Theano Apply nodes, most "
            "frequent first): a BN op by name (AbstractBatchNorm*, GpuDnnBatchNorm*) or only "
            "generic ones (Elemwise, Sum reductions, DimShuffle)"))
    found.append(_finding(
        "bn_reductions_train_forward", f["forward_train.batch_reductions"], "info",
        f"Sum reductions over the batch axes {axes} in the training forward (mean, variance); "
        "each reads the whole activation tensor"))
    found.append(_finding(
        "bn_reductions_forward_backward", f["backward.batch_reductions"], "info",
        "the same in forward+backward (about 8 per BN layer on a CPU): unfused BN costs several "
        "passes over the activations, which is why it about doubles a CPU training step"))
    return found


def _old_theano_bn_path(data_format, axes, gpu_ops) -> dict:
    """BN on a Theano without batch_normalization_train (0.8.x): what Keras 1.2.1 builds."""
    why = ("this Theano has no batch_normalization_train: Keras 1.2.1's BatchNormalization(mode=0) "
           "computes the batch statistics with x.mean/x.var (Sum reductions) and normalises with "
           "elementwise ops; only axes (0, 2, 3) (channels_first, axis=1) on Theano's old GPU "
           "backend (device=gpu) would call cuDNN's dnn_batch_normalization_train")
    if data_format == "channels_last":
        return _finding("bn_path", "generic reductions, no BN op, no cuDNN", "warn",
                        f"{why}; channels_last (axes {axes}) never does: on a GPU switch to "
                        "channels_first with axis=1")
    hint = ("this graph has none: check theano.sandbox.cuda.dnn.dnn_available()" if gpu_ops
            else "on the CPU BN is reductions in any layout")
    return _finding("bn_path", "generic reductions, no BN op, no cuDNN",
                    "warn" if gpu_ops else "info", f"{why}; {hint}")


def _op_summary(op_classes, top=6) -> str:
    """'Elemwise x31, Sum x8, ...': the most frequent op classes of a graph."""
    ranked = sorted(op_classes.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{name} x{count}" for name, count in ranked[:top])
    rest = sum(count for _, count in ranked[top:])
    return text + (f", {rest} more" if rest else "")


def _tf1_bn(data_format, f, info, requested) -> list:
    ran_on = f.get("backward.ran_on", "cpu")
    fused = sorted(set(f["forward_train.fused_bn_ops"]) | set(f["backward.fused_bn_ops"]))
    found = [_device(ran_on, int(ran_on == "gpu"), requested)]
    if fused:
        found.append(_finding("bn_path", "fused: " + ", ".join(fused), "info",
                              "Keras 2.2.4 on TF 1.x uses TensorFlow's fused batch norm: one "
                              "kernel per direction, the fast path"))
    else:
        found.append(_finding(
            "bn_path", f"unfused: {f['backward.moments_ops']} Mean/SquaredDifference ops", "warn",
            f"no fused BN: Keras 2.2.4 falls back to tf.nn.moments + elementwise ops for "
            f"{data_format} (TF1 has no NCHW fused BN without a GPU); on a CPU use channels_last"))
    return found


def _device(device, gpu_ops, requested) -> dict:
    if requested == "gpu" and not gpu_ops:
        return _finding("device", f"{device}, 0 GPU ops", "error",
                        "--device gpu was asked for, but the compiled graph is CPU-only: every step "
                        "runs on the CPU (report 000: Theano's default device=cpu made it 18x "
                        "slower than TensorFlow). Theano needs a GPU device (device=cuda with "
                        "pygpu; device=gpu on Theano 0.8), which cannot be installed here")
    if gpu_ops:
        return _finding("device", f"{device}, {gpu_ops} GPU ops", "info",
                        "the compiled function runs on the GPU")
    return _finding("device", f"{device}, 0 GPU ops", "info",
                    "the compiled function runs on the CPU; timings are CPU timings")


# --- report 001's model: does predict run BN's training branch? -------------------------------------

def _model_record(stack, options, out, compare) -> dict:
    rec = _record(stack, out.info, MODEL_CASE, "channels_last", "ok", model="resnet_bn",
                  input_shape=[32, 32, 32, 3])
    f = out.facts.get(MODEL_CASE, {})
    error = out.errors.get(MODEL_CASE) or (out.failure or (None, None))[1]
    if error or "predict_s" not in f:
        rec.update(status=(out.failure or ("error",))[0], error=error or "no predict timing")
        return rec
    lazy = (_inspect(stack, options, ["model"], _without_inplace(stack, options))["model"]
            if compare else None)
    lazy_f = lazy.facts.get(MODEL_CASE, {}) if lazy else {}
    _conclude(rec, _model_findings(f, lazy_f, lazy), {"default": f, "no_inplace": lazy_f})
    rec.update(predict_s=f["predict_s"], predict_no_inplace_s=lazy_f.get("predict_s"))
    return rec


def _model_findings(f, lazy_f, lazy) -> list:
    per_batch, n_bn = f["reductions_executed_per_batch"], f["bn_layers"]
    found = [_finding(
        "predict_runs_training_branch",
        f"{'yes' if per_batch else 'no'}: {per_batch:g} batch-axis reductions run per predict "
        f"batch ({n_bn} BN layers, {f['predict_graph_batch_reductions']} in the graph)",
        "warn" if per_batch else "info",
        "Keras 1 and 2 feed the learning phase as a graph input; Theano's inplace optimisation "
        "forces each BN ifelse's training branch (batch mean/variance) to run in inference too, "
        "which is why report 001's evaluation was slow with BN. Fix: K.set_learning_phase(0) "
        "before building the inference model, or THEANO_FLAGS=optimizer_excluding=inplace"
        if per_batch else "predict computes BN from the moving statistics only")]
    t = f["predict_s"]
    found.append(_finding("predict_time", f"{t:.3g} s for {f['predict_samples']} samples "
                          f"(batch 32, min {f['predict_min_s']:.3g} s)", "info",
                          "model.predict as Keras compiles it (median of the timed calls)"))
    if lazy is not None and "predict_s" in lazy_f:
        t2 = lazy_f["predict_s"]
        found.append(_finding(
            "predict_time_without_inplace",
            f"{t2:.3g} s (min {lazy_f['predict_min_s']:.3g} s); default/no-inplace = {t / t2:.2f}x",
            "info", "the same predict with optimizer_excluding=inplace, where the training branch "
            f"stays lazy ({lazy_f['reductions_executed_per_batch']:g} reductions run per batch): "
            "the ratio is what the wasted branch costs this model on this machine"))
    elif lazy is not None:
        found.append(_finding("predict_time_without_inplace", "not measured", "warn",
                              (lazy.failure or ("", "no timing"))[1]))
    return found


# --- records and table ------------------------------------------------------------------------------

def _finding(name, value, level, meaning) -> dict:
    return {"name": name, "value": value, "level": level, "meaning": meaning}


def _conclude(rec, findings, facts):
    """Attach findings; a finding at level error (e.g. GPU asked, CPU graph) fails the record."""
    rec.update(findings=findings, facts=facts)
    errors = [f for f in findings if f["level"] == "error"]
    if errors:
        rec.update(status="error", error=f"{errors[0]['name']}: {errors[0]['meaning']}")


def _record(stack, info, case, data_format, status, error=None, **extra) -> dict:
    info = dict({"backend": stack.backend}, **info)
    info["stack"] = stack.name
    return records.new("diagnose", info, case, graph.PASS, data_format=data_format,
                       status=status, error=error, findings=[], facts={}, **extra)


def table(records) -> Table:
    """One row per finding (or per failed record), grouped by stack and case."""
    t = Table(title="kmicro diagnose — what the compiled graphs do", title_justify="left")
    for col in ("stack", "case", "finding", "value", "meaning"):
        t.add_column(col, overflow="fold")
    for r in records:
        label = f"{r['case']}" + (f" [{r['device']}]" if r.get("device") else "")
        if r["status"] != "ok" and not r["findings"]:
            t.add_row(r["stack"], label, r["status"], "", r["error"] or "",
                      style="dim" if r["status"] in ("skipped", "unsupported") else "red")
        for f in r["findings"]:
            t.add_row(r["stack"], label, f["name"], str(f["value"]), f["meaning"],
                      style=LEVEL_STYLE[f["level"]])
    return t
