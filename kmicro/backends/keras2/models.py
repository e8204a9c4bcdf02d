"""Keras 2 models: the zoo's specs compiled as Keras 2 would, user models compiled with a
default optimizer, and the model surgery attribution needs (layers, descriptions, ablation).

`train_on_batch` runs Keras 2's compiled training function, the one `fit` calls per batch,
and returns host NumPy values, so each step has finished when it returns.
"""
from __future__ import absolute_import

import numpy as np

from kmicro.backends.keras2.backend import K, fresh_graph, keras
from kmicro.models import graph

__all__ = ["USER_OPTIMIZER", "build", "make_optimizer", "compile_user", "without", "layers",
           "describe", "io"]

USER_OPTIMIZER = "keras.optimizers.Adam(lr=0.001)"


def build(spec, seed):
    """(model compiled with the spec's optimizer and loss, how the optimizer was built)."""
    fresh_graph()  # TF1: a fresh graph per model
    np.random.seed(seed)  # Keras 2 initialisers draw from NumPy on Theano
    K.set_image_data_format("channels_last")
    model = graph.build(spec, keras)
    optimizer, described = make_optimizer(spec.optimizer)
    model.compile(optimizer=optimizer, loss=spec.loss, metrics=["accuracy"])
    return model, described


def compile_user(model):
    """A user's model compiled with Adam and one loss per output: crossentropy for 2-D outputs."""
    losses = ["categorical_crossentropy" if len(K.int_shape(t)) == 2 else "mse"
              for t in model.outputs]
    model.compile(optimizer=keras.optimizers.Adam(lr=1e-3),
                  loss=losses[0] if len(losses) == 1 else losses)
    return model, USER_OPTIMIZER


def make_optimizer(spec):
    """(Keras 2 optimizer, how it was built). `lr`/`decay` are spelled as in 2.2.4 (2.3.1 accepts them)."""
    if spec.name == "adam":
        return keras.optimizers.Adam(lr=spec.learning_rate), \
            "keras.optimizers.Adam(lr={:g})".format(spec.learning_rate)
    optimizer = keras.optimizers.SGD(lr=spec.learning_rate, decay=spec.decay,
                                     momentum=spec.momentum, nesterov=spec.nesterov)
    return optimizer, "keras.optimizers.SGD(lr={:g}, decay={:g}, momentum={:g}, nesterov={})".format(
        spec.learning_rate, spec.decay, spec.momentum, spec.nesterov)


def without(model, layer_type):
    """The model replayed from fresh layers, `layer_type` layers skipped (Keras 2.3.1's
    clone_model takes no clone_function). Layers are in topological order."""
    new = {}
    inputs = []
    for t in model.inputs:
        inputs.append(keras.layers.Input(batch_shape=K.int_shape(t), dtype=K.dtype(t)))
        new[id(t)] = inputs[-1]
    for layer in layers(model):
        args = [new[id(t)] for t in _listed(layer.get_input_at(0))]
        if type(layer).__name__ == layer_type:
            outs = args[:1]
        else:
            fresh = layer.__class__.from_config(layer.get_config())
            outs = _listed(fresh(args[0] if len(args) == 1 else args))
        for old, out in zip(_listed(layer.get_output_at(0)), outs):
            new[id(old)] = out
    return keras.models.Model(inputs, [new[id(t)] for t in model.outputs])


def layers(model) -> list:
    return [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]


def describe(model) -> list:
    """Per layer: name, type, shapes (batch None) of its first call, input dtypes."""
    return [{"name": layer.name, "type": type(layer).__name__,
             "input_shapes": _shapes(layer.get_input_shape_at(0)),
             "output_shapes": _shapes(layer.get_output_shape_at(0)),
             "dtypes": [K.dtype(t) for t in _listed(layer.get_input_at(0))],
             "params": layer.count_params()} for layer in layers(model)]


def io(model):
    """([(input shape, dtype)], [output shape]), batch None."""
    return ([(list(K.int_shape(t)), K.dtype(t)) for t in model.inputs],
            [list(K.int_shape(t)) for t in model.outputs])


def _listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _shapes(shape) -> list:
    """Keras 2 gives one shape tuple, or a list of them for several inputs."""
    if isinstance(shape, list):
        return [list(s) for s in shape]
    return [list(shape)]
