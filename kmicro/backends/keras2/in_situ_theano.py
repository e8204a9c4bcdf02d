"""In-situ attribution on Theano: Keras 2's compiled training function rebuilt with Theano's
own ProfileStats, each Apply node's measured time given to a layer, a layer type, the
optimizer, or other ops.

Theano's optimised graph keeps no layer names, so a node is placed by what it reads and what
it is, in this order:
1. it reads an optimizer variable (momenta, iterations) -> (optimizer) update;
2. it reads a layer's weight (shared variables are named `<layer>/kernel`...) -> that layer:
   a convolution's CorrMM and CorrMM_gradInputs read its kernel, BatchNormalization's
   normalising Elemwise reads gamma and beta (forward and backward are not told apart: one
   compiled graph holds both);
3. what only one layer type computes, layer unknown: convolution gradients of the kernel
   (CorrMM_gradWeights) -> Conv2D; pooling and its gradient -> the model's pooling type;
   matrix products -> Dense;
4. Sum reductions over every axis but the channel's -> (batch-axis sums): BatchNormalization's
   batch statistics (report 001's evidence) and their gradients, but also the gradient of a
   convolution's bias, which reduces over the same axes: an upper bound on BN's share;
5. anything else (ReLU, additions, the loss, elementwise gradients) -> (other ops: its op
   class), e.g. (other ops: Elemwise): Theano's own view, by op class.
The step's wall time outside the profiled function's own time is framework time (Keras'
Python, input conversion), so the parts add up to the step.
"""
from __future__ import absolute_import

import time

from theano.compile.profiling import ProfileStats
from theano.compile.sharedvalue import SharedVariable
from theano.tensor.elemwise import CAReduce

__all__ = ["profile_steps"]

_CONV = ("CorrMM", "CorrMM_gradInputs", "CorrMM_gradWeights", "AbstractConv2d",
         "AbstractConv2d_gradInputs", "AbstractConv2d_gradWeights")
_POOL = ("Pool", "MaxPoolGrad", "AveragePoolGrad", "DownsampleFactorMaxGrad")
_DOT = ("Dot22", "Dot22Scalar", "Gemm", "Gemv", "Dot", "Ger")


def profile_steps(model, layers, train, steps, phase="train"):
    """As kmicro/backends/keras3/in_situ_torch.profile_steps, for Keras' train_function or
    test_function (`phase`); parts of unknown layer carry the layer type in their name, e.g.
    "(unplaced) Conv2D"."""
    attr = "{}_function".format(phase)
    stats = ProfileStats(atexit_print=False, message="kmicro in-situ " + attr)
    setattr(model, attr, None)
    model._function_kwargs = {"profile": stats}
    try:
        getattr(model, "_make_{}_function".format(phase))()
        train()  # the profiled function's first call: its own warm-up, not recorded
        stats.reset()
        walls = []
        for _ in range(steps):
            t0 = time.perf_counter()
            train()
            walls.append(time.perf_counter() - t0)
        nodes = getattr(model, attr).function.maker.fgraph.toposort()
    finally:
        setattr(model, attr, None)  # rebuilt unprofiled at the next call
        model._function_kwargs = {}
    return {"steps_s": walls, "parts": _parts(stats, nodes, model, layers, walls)}


def _parts(stats, nodes, model, layers, walls):
    place = _Placer(model, layers)
    # Theano 1.0 keys apply_time by node, later versions by (fgraph, node).
    seconds = {(k[-1] if isinstance(k, tuple) else k): t for k, t in stats.apply_time.items()}
    totals = {}
    for node in nodes:
        key = place(node)
        totals[key] = totals.get(key, 0.0) + seconds.get(node, 0.0)
    steps = len(walls)
    # Per-node times are totals over the profiled calls: each step gets the mean.
    parts = [{"layer": layer, "part": part, "times_s": [t / steps] * steps}
             for (layer, part), t in totals.items()]
    outside = [w - stats.fct_call_time / steps for w in walls]
    in_nodes = sum(totals.values()) / steps
    inside = stats.fct_call_time / steps - in_nodes  # the VM's own time between nodes
    parts.append({"layer": "(framework)", "part": "overhead",
                  "times_s": [o + inside for o in outside]})
    return parts


class _Placer(object):
    """(layer or part, pass) of an Apply node of the compiled training function."""

    def __init__(self, model, layers):
        # The compiled graph holds clones of the shared variables: they keep their names.
        self.weights = {w.name: layer.name for layer in layers for w in layer.weights}
        self.optimizer = {w.name for w in getattr(model.optimizer, "weights", [])}
        types = {type(layer).__name__ for layer in layers}
        self.pool = next((t for t in sorted(types) if "Pooling" in t), "Pooling2D")
        self.bn_axes = [set(a) for a in ((0, 1, 2), (0, 2, 3))]

    def __call__(self, node):
        read = _shared_read(node)
        if any(name in self.optimizer for name in read):
            return "(optimizer)", "update"
        owners = [self.weights[name] for name in read if name in self.weights]
        if owners:
            return max(set(owners), key=owners.count), "op"
        name = type(node.op).__name__
        if name in _CONV:
            return "(unplaced) Conv2D", "op"
        if name in _POOL:
            return "(unplaced) " + self.pool, "op"
        if name in _DOT:
            return "(unplaced) Dense", "op"
        if isinstance(node.op, CAReduce) and node.op.axis is not None and \
                set(node.op.axis) in self.bn_axes:
            return "(batch-axis sums)", "op"
        return "(other ops: {})".format(name), "op"


def _shared_read(node, depth=2) -> list:
    """Names of the shared variables `node` reads, directly or through single-input nodes
    (the DimShuffle that broadcasts gamma, a cast)."""
    names = []
    for v in node.inputs:
        if isinstance(v, SharedVariable):
            names.append(v.name)
        elif depth and v.owner is not None and len(v.owner.inputs) == 1:
            names += _shared_read(v.owner, depth - 1)
    return names
