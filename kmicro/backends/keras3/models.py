"""Keras 3 models: the zoo's specs compiled the way `fit` would, user models compiled with a
default optimizer, and the model surgery attribution needs (layers, descriptions, ablation).

Models compile like `fit` (jit_compile="auto": XLA for TensorFlow only with a GPU, jax.jit,
torch eager); --jit on/off forces it.
"""
from __future__ import annotations

import keras
from kmicro.backends.keras3.layers import listed, shapes
from kmicro.models import graph

__all__ = ["JIT_COMPILE", "USER_OPTIMIZER", "build", "compile_user", "without", "layers",
           "describe", "io"]

JIT_COMPILE = {"auto": "auto", "on": True, "off": False}
USER_OPTIMIZER = "keras.optimizers.Adam(learning_rate=0.001)"


def build(spec, seed, jit):
    """(model compiled with the spec's optimizer and loss, how the optimizer was built)."""
    keras.utils.set_random_seed(seed)
    keras.config.set_image_data_format("channels_last")
    model = graph.build(spec, keras)
    optimizer, described = _optimizer(spec.optimizer)
    model.compile(optimizer=optimizer, loss=spec.loss, metrics=["accuracy"],
                  jit_compile=JIT_COMPILE[jit])
    return model, described


def compile_user(model, jit):
    """A user's model compiled with Adam and one loss per output: crossentropy for 2-D outputs."""
    losses = ["categorical_crossentropy" if len(t.shape) == 2 else "mse" for t in model.outputs]
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=losses[0] if len(losses) == 1 else losses, jit_compile=JIT_COMPILE[jit])
    return model, USER_OPTIMIZER


def _optimizer(spec):
    """(Keras 3 optimizer, how it was built). Keras 3 dropped `decay`: Keras 2's
    lr / (1 + decay * iterations) is exactly InverseTimeDecay(lr, decay_steps=1, decay_rate=decay)."""
    if spec.name == "adam":
        return keras.optimizers.Adam(learning_rate=spec.learning_rate), \
            "keras.optimizers.Adam(learning_rate={:g})".format(spec.learning_rate)
    lr, lr_text = spec.learning_rate, "{:g}".format(spec.learning_rate)
    if spec.decay:
        lr = keras.optimizers.schedules.InverseTimeDecay(spec.learning_rate, decay_steps=1,
                                                         decay_rate=spec.decay)
        lr_text = "InverseTimeDecay({:g}, decay_steps=1, decay_rate={:g})".format(
            spec.learning_rate, spec.decay)
    optimizer = keras.optimizers.SGD(learning_rate=lr, momentum=spec.momentum,
                                     nesterov=spec.nesterov)
    return optimizer, "keras.optimizers.SGD(learning_rate={}, momentum={:g}, nesterov={})".format(
        lr_text, spec.momentum, spec.nesterov)


def without(model, layer_type):
    """The model replayed from fresh layers, skipping `layer_type` layers. (clone_model
    would pass the removed layer's recorded call arguments, e.g. `mask`, to a stand-in,
    and takes no call_function for Sequential models.) Layers are in topological order."""
    new = {}
    inputs = [keras.Input(batch_shape=t.shape, dtype=t.dtype) for t in model.inputs]
    new.update((id(t), x) for t, x in zip(model.inputs, inputs))
    for layer in layers(model):
        args = [new[id(t)] for t in listed(layer.input)]
        if type(layer).__name__ == layer_type:
            outs = args[:1]
        else:
            fresh = layer.__class__.from_config(layer.get_config())
            outs = listed(fresh(args[0] if len(args) == 1 else args))
        new.update((id(old), out) for old, out in zip(listed(layer.output), outs))
    return keras.Model(inputs, [new[id(t)] for t in model.outputs])


def layers(model) -> list:
    return [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]


def describe(model) -> list:
    """Per layer: name, type, shapes (batch None) of its first call, input dtypes."""
    return [{"name": layer.name, "type": type(layer).__name__,
             "input_shapes": shapes(layer.input), "output_shapes": shapes(layer.output),
             "dtypes": [str(t.dtype) for t in listed(layer.input)],
             "params": layer.count_params()} for layer in layers(model)]


def io(model):
    """([(input shape, dtype)], [output shape]), batch None."""
    return ([(list(t.shape), str(t.dtype)) for t in model.inputs],
            [list(t.shape) for t in model.outputs])
