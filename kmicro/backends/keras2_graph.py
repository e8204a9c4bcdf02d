"""`python -m kmicro.backends.keras2_graph --part bn|model`: facts read from compiled Keras 2 graphs.

Runs inside a Keras 2 stack's own interpreter (spawned by kmicro/diagnose.py with the stack's
worker environment) and prints one JSON object per line on stdout:
  {"type": "info", "info": {...}}                                      first, as the worker's
  {"type": "finding", "case": ID, "data_format": F, "name": N, "value": V}
  {"type": "error", "case": ID, "data_format": F, "error": "..."}        a part that failed
Only facts are printed; what they mean for a user is kmicro/diagnose.py's job.
Framework chatter on stdout goes to stderr, so it cannot corrupt the lines.
"""
from __future__ import absolute_import

import argparse
import json
import os
import sys
import time

from kmicro.core import cases, reference

_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

from kmicro.backends import keras2  # noqa: E402  (after the redirect: imports print)
from kmicro.backends.keras2 import K, keras  # noqa: E402

BATCH = 32


def emit(obj):
    _out.write(json.dumps(obj) + "\n")


def finding(case_id, data_format, name, value):
    emit({"type": "finding", "case": case_id, "data_format": data_format, "name": name,
          "value": value})


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
            "ifelse_nodes": sum(s == "IfElse" for s in names), "nodes": len(nodes)}


def tf1_graph_facts() -> dict:
    types = [op.type for op in K.get_session().graph.get_operations()]
    return {"fused_bn_ops": sorted({t for t in types if "FusedBatchNorm" in t}),
            "moments_ops": sum(t in ("Mean", "SquaredDifference") for t in types)}


# --- part "bn": the catalog's BatchNormalization case, both layouts -----------------------------

def bn_part(adapter):
    for data_format in cases.DATA_FORMATS:
        case = cases.select(["batchnorm"], data_format)[0]
        try:
            bn_case(adapter, case)
        except Exception as exc:  # noqa: BLE001 - reported as a record by diagnose.py
            emit({"type": "error", "case": case.id, "data_format": data_format,
                  "error": "{}: {}".format(type(exc).__name__, str(exc).strip()[:300])})


def bn_case(adapter, case):
    """Facts of the training forward and forward+backward graphs of one BN case."""
    axes = [0, 2, 3] if case.data_format == "channels_first" else [0, 1, 2]
    emit_case = lambda name, value: finding(case.id, case.data_format, name, value)  # noqa: E731
    emit_case("bn_axes", axes)
    for graph in ("forward_train", "backward"):
        fn, feed = compiled(case, graph)
        fn(feed)
        if keras2.BACKEND == "theano":
            facts = theano_graph_facts(theano_nodes(fn), axes)
        else:
            facts = tf1_graph_facts()
            facts["ran_on"] = adapter.impl.device_of(fn, feed)
        for name, value in sorted(facts.items()):
            emit_case("{}.{}".format(graph, name), value)


def compiled(case, pass_name):
    """The adapter's own graph for this pass, compiled: (Keras function, feed)."""
    if hasattr(K, "clear_session"):
        K.clear_session()
    weights = reference.make_weights(case)
    inputs = reference.make_inputs(case)
    layer, xs, y = keras2.build(case, weights)
    outputs = [y]
    if pass_name == "backward":
        dy = reference.make_dy(case, reference.output_shape(case))
        outputs += K.gradients(K.sum(y * K.variable(dy)), xs + layer.trainable_weights)
    fn = K.function(xs + [K.learning_phase()], outputs)
    return fn, list(inputs) + [1]


# --- part "model": report 001's model, predict function ------------------------------------------

def resnet_bn():
    """Report 001's cut-down cifar10_resnet with BN (REFERENCE.md), Keras 2, channels_last."""
    from keras.layers import (Activation, AveragePooling2D, BatchNormalization, Conv2D, Dense,
                              Flatten, Input, add)
    from keras.models import Model
    from keras.regularizers import l2

    def resnet_layer(x):
        x = Conv2D(16, 3, padding="same", kernel_initializer="he_normal",
                   kernel_regularizer=l2(1e-4))(x)
        return Activation("relu")(BatchNormalization()(x))

    inp = Input((32, 32, 3))
    x = resnet_layer(inp)
    for _ in range(3):
        x = Activation("relu")(add([x, resnet_layer(x)]))
    x = Flatten()(AveragePooling2D(8)(x))
    model = Model(inp, Dense(10, activation="softmax", kernel_initializer="he_normal")(x))
    model.compile(keras.optimizers.Adam(1e-3), "categorical_crossentropy")
    return model


def model_part(adapter, samples, repeats):
    """Does predict run BN's training-branch reductions, and how long does predict take."""
    import numpy as np

    name, fmt = "resnet_bn/predict", "channels_last"
    model = resnet_bn()
    x = np.random.RandomState(0).normal(0, 1, (samples, 32, 32, 3)).astype("float32")
    n_bn = sum(type(l).__name__ == "BatchNormalization" for l in model.layers)
    finding(name, fmt, "bn_layers", n_bn)
    if keras2.BACKEND == "theano":
        import theano

        finding(name, fmt, "optimizer_excluding", theano.config.optimizer_excluding)
        for key, value in sorted(profiled_predict(model, x).items()):
            finding(name, fmt, key, value)
    times = time_predict(model, x, repeats)
    finding(name, fmt, "predict_samples", samples)
    finding(name, fmt, "predict_s", times[len(times) // 2])
    finding(name, fmt, "predict_min_s", times[0])


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
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.predict(x, batch_size=BATCH)
        times.append(time.perf_counter() - t0)
    return sorted(times)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--part", choices=("bn", "model"), required=True)
    p.add_argument("--device", default="auto")
    p.add_argument("--samples", type=int, default=320, help="model part: samples to predict")
    p.add_argument("--repeats", type=int, default=5, help="model part: timed predict calls")
    args = p.parse_args(argv)
    adapter = keras2.Adapter(device=args.device)
    emit({"type": "info", "info": dict(adapter.info(), python=sys.version.split()[0])})
    if args.part == "bn":
        bn_part(adapter)
        return 0
    try:
        model_part(adapter, args.samples, args.repeats)
    except Exception as exc:  # noqa: BLE001 - reported as a record by diagnose.py
        emit({"type": "error", "case": "resnet_bn/predict", "data_format": "channels_last",
              "error": "{}: {}".format(type(exc).__name__, str(exc).strip()[:300])})
    return 0


if __name__ == "__main__":
    sys.exit(main())
