"""Facts read from compiled Keras 2 (and Keras 1) graphs, for `kmicro diagnose` (the "graph"
job kind).

`inspect(adapter, part, samples, repeats)` runs inside a Keras 2 or Keras 1 stack's worker
(layers and models built by the adapter, in its Keras' words) and returns
one message per fact or failure:
  {"type": "finding", "case": ID, "data_format": F, "name": N, "value": V}
  {"type": "error", "case": ID, "data_format": F, "error": "..."}        a part that failed
Only facts are returned; what they mean for a user is kmicro/analysis/diagnose.py's job.
"""
from __future__ import absolute_import

import numpy as np

from kmicro.backends.keras2.backend import BACKEND, K
from kmicro.core import cases, reference, timing
from kmicro.models import zoo

__all__ = ["PARTS", "inspect"]

PARTS = ("bn", "model")
BATCH = 32
MODEL_CASE = "resnet_bn/predict"


def inspect(adapter, part, samples=320, repeats=5) -> list:
    """The messages of one part: "bn" (the catalog's BN case, both layouts) or "model"
    (report 001's model: does predict run BN's training branch, how long does it take)."""
    if part not in PARTS:
        raise ValueError("unknown graph part {!r}; valid: {}".format(part, ", ".join(PARTS)))
    messages = []
    if part == "bn":
        for data_format in cases.DATA_FORMATS:
            case = cases.select(["batchnorm"], data_format)[0]
            _guarded(messages, case.id, data_format, lambda: bn_case(adapter, case, messages))
    else:
        _guarded(messages, MODEL_CASE, "channels_last",
                 lambda: model_part(adapter, samples, repeats, messages))
    return messages


def _guarded(messages, case_id, data_format, part):
    try:
        part()
    except Exception as exc:  # noqa: BLE001 - reported as a record by diagnose.py
        messages.append({"type": "error", "case": case_id, "data_format": data_format,
                         "error": "{}: {}".format(type(exc).__name__, str(exc).strip()[:300])})


def _finding(case_id, data_format, name, value) -> dict:
    return {"type": "finding", "case": case_id, "data_format": data_format, "name": name,
            "value": value}


# --- what a compiled graph contains -------------------------------------------------------------

def theano_nodes(fn):
    """Optimised Apply nodes of a Keras Theano K.function, in execution order."""
    return fn.function.maker.fgraph.toposort()


def batch_reductions(nodes, axes):
    """Sum/CAReduce nodes reducing exactly over `axes` (the BN statistics axes, channel kept)."""
    from theano.tensor.elemwise import CAReduce

    return [n for n in nodes if isinstance(n.op, CAReduce) and n.op.axis is not None
            and set(n.op.axis) == set(axes)]


def theano_graph_facts(nodes, axes) -> dict:
    names = [type(n.op).__name__ for n in nodes]
    return {"gpu_ops": sum("Gpu" in s for s in names),
            "cudnn_bn_ops": sum("GpuDnnBatchNorm" in s for s in names),
            "batch_reductions": len(batch_reductions(nodes, axes)),
            "ifelse_nodes": sum(s == "IfElse" for s in names), "nodes": len(nodes),
            # what the graph is made of: a BN op, or generic Elemwise/Sum nodes
            "op_classes": {n: names.count(n) for n in sorted(set(names))}}


def theano_bn_api() -> dict:
    """Which BN ops this Theano offers Keras: batch_normalization_train arrived in Theano 0.9;
    without it Keras falls back to x.mean/x.var and elementwise normalisation."""
    from theano.tensor.nnet import bn

    return {"theano_bn_train_op": hasattr(bn, "batch_normalization_train")}


def tf1_graph_facts() -> dict:
    types = [op.type for op in K.get_session().graph.get_operations()]
    return {"fused_bn_ops": sorted({t for t in types if "FusedBatchNorm" in t}),
            "moments_ops": sum(t in ("Mean", "SquaredDifference") for t in types)}


# --- part "bn": the catalog's BatchNormalization case, both layouts -----------------------------

def bn_case(adapter, case, messages):
    """Facts of the training forward and forward+backward graphs of one BN case."""
    axes = [0, 2, 3] if case.data_format == "channels_first" else [0, 1, 2]
    messages.append(_finding(case.id, case.data_format, "bn_axes", axes))
    if BACKEND == "theano":
        for name, value in sorted(theano_bn_api().items()):
            messages.append(_finding(case.id, case.data_format, name, value))
    for graph_name in ("forward_train", "backward"):
        fn, feed = compiled(adapter, case, graph_name)
        fn(feed)
        if BACKEND == "theano":
            facts = theano_graph_facts(theano_nodes(fn), axes)
        else:
            facts = tf1_graph_facts()
            facts["ran_on"] = adapter.impl.device_of(fn, feed)
        for name, value in sorted(facts.items()):
            messages.append(_finding(case.id, case.data_format,
                                     "{}.{}".format(graph_name, name), value))


def compiled(adapter, case, pass_name):
    """The adapter's own graph for this pass, compiled: (Keras function, feed)."""
    if hasattr(K, "clear_session"):
        K.clear_session()
    weights = reference.make_weights(case)
    inputs = reference.make_inputs(case)
    layer, xs, y = adapter.build_layer(case, weights)
    outputs = [y]
    if pass_name == "backward":
        dy = reference.make_dy(case, reference.output_shape(case))
        outputs += K.gradients(K.sum(y * K.variable(dy)), xs + layer.trainable_weights)
    fn = K.function(xs + [K.learning_phase()], outputs)
    return fn, list(inputs) + [1]


# --- part "model": report 001's model, predict function ------------------------------------------

def model_part(adapter, samples, repeats, messages):
    """Does predict run BN's training-branch reductions, and how long does predict take, in
    report 001's cut-down cifar10_resnet with BN (the zoo's resnet_bn), compiled with its
    Adam(1e-3) by the adapter; channels_last."""
    def found(name, value):
        messages.append(_finding(MODEL_CASE, "channels_last", name, value))

    model, _ = adapter.build_spec(zoo.resnet_cut(True), 0)
    x = np.random.RandomState(0).normal(0, 1, (samples, 32, 32, 3)).astype("float32")
    found("bn_layers", sum(type(l).__name__ == "BatchNormalization" for l in model.layers))
    if BACKEND == "theano":
        import theano

        found("optimizer_excluding", theano.config.optimizer_excluding)
        for key, value in sorted(profiled_predict(model, x).items()):
            found(key, value)
    times = time_predict(model, x, repeats)
    found("predict_samples", samples)
    found("predict_s", times[len(times) // 2])
    found("predict_min_s", times[0])


def profiled_predict(model, x) -> dict:
    """Theano profiler call counts of the BN reductions while model.predict runs (lp fed 0)."""
    from theano.compile.profiling import ProfileStats
    from theano.ifelse import IfElse

    prof = ProfileStats(atexit_print=False, message="kmicro predict_function")
    model.predict_function, model._function_kwargs = None, {"profile": prof}
    model._make_predict_function()
    nodes = theano_nodes(model.predict_function)
    model.predict(x, batch_size=BATCH)
    reds = batch_reductions(nodes, (0, 1, 2))
    calls = sum(prof.apply_callcount.get(n, 0) for n in reds)
    batches = max(prof.fct_callcount, 1)
    model.predict_function, model._function_kwargs = None, {}  # timed runs are not profiled
    return {"predict_graph_batch_reductions": len(reds),
            "predict_graph_ifelse": sum(isinstance(n.op, IfElse) for n in nodes),
            "predict_batches": prof.fct_callcount,
            "reductions_executed_per_batch": calls / float(batches)}


def time_predict(model, x, repeats) -> list:
    """Sorted seconds of `repeats` model.predict calls over all samples, after one warm-up."""
    model.predict(x, batch_size=BATCH)
    m, _ = timing.per_call(lambda _: model.predict(x, batch_size=BATCH), range(repeats))
    return sorted(m.samples)
