"""Keras 2 side of `kmicro attribute`: the theano and tf1 stacks (Python 3.7 / 3.9).

Imported only inside an attribution worker whose KERAS_BACKEND is already set. Built-in
models come from the models adapter; a layer is rebuilt alone on placeholders and compiled
into one backend function per pass the way the op adapter does (kmicro/backends/keras2.py):
learning phase fed 1 (the training step's branch), dy held in a variable.
"""
from __future__ import absolute_import

import numpy as np

from kmicro.backends import keras2 as ops
from kmicro.backends import keras2_models
from kmicro.backends.base import Prepared
from kmicro.models.epoch import Trainer

import keras  # noqa: E402,I100  (imported after the op adapter has chosen the backend)
from keras import backend as K  # noqa: E402

USER_OPTIMIZER = "keras.optimizers.Adam(lr=0.001)"


class Attributor(object):
    family = "keras2"
    model_kind = "a Keras 2 model (keras.models.Model)"

    def __init__(self, device="auto", jit="auto"):
        self.models = keras2_models.ModelAdapter(device=device, jit=jit)
        self.gpu = self.models.gpu

    def info(self) -> dict:
        return self.models.info()

    def seed(self, seed):
        np.random.seed(seed)  # Keras 2 initialisers draw from NumPy on Theano

    def is_model(self, obj) -> bool:
        return isinstance(obj, keras.models.Model)

    def builtin(self, spec, seed):
        trainer = self.models.build(spec, seed)
        # The bound train_on_batch knows its model: compiled with the zoo's optimizer and loss.
        return trainer.train.__self__, trainer

    def compile_user(self, model) -> Trainer:
        losses = ["categorical_crossentropy" if len(K.int_shape(t)) == 2 else "mse"
                  for t in model.outputs]
        model.compile(optimizer=keras.optimizers.Adam(lr=1e-3),
                      loss=losses[0] if len(losses) == 1 else losses)
        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self.models._device(model, x),
                       optimizer=USER_OPTIMIZER, params=model.count_params())

    def without(self, model, layer_type):
        """The model replayed from fresh layers, `layer_type` layers skipped (Keras 2.3.1's
        clone_model takes no clone_function). Layers are in topological order."""
        new = {}
        inputs = []
        for t in model.inputs:
            inputs.append(keras.layers.Input(batch_shape=K.int_shape(t), dtype=K.dtype(t)))
            new[id(t)] = inputs[-1]
        for layer in self.layers(model):
            args = [new[id(t)] for t in _listed(layer.get_input_at(0))]
            if type(layer).__name__ == layer_type:
                outs = args[:1]
            else:
                fresh = layer.__class__.from_config(layer.get_config())
                outs = _listed(fresh(args[0] if len(args) == 1 else args))
            for old, out in zip(_listed(layer.get_output_at(0)), outs):
                new[id(old)] = out
        return keras.models.Model(inputs, [new[id(t)] for t in model.outputs])

    @staticmethod
    def layers(model) -> list:
        return [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]

    def describe(self, model) -> list:
        """Per layer: name, type, shapes (batch None) of its first call, input dtypes."""
        return [{"name": layer.name, "type": type(layer).__name__,
                 "input_shapes": _shapes(layer.get_input_shape_at(0)),
                 "output_shapes": _shapes(layer.get_output_shape_at(0)),
                 "dtypes": [K.dtype(t) for t in _listed(layer.get_input_at(0))],
                 "params": layer.count_params()} for layer in self.layers(model)]

    def io(self, model):
        return ([(list(K.int_shape(t)), K.dtype(t)) for t in model.inputs],
                [list(K.int_shape(t)) for t in model.outputs])

    def layer_pass(self, model, described, pass_name, inputs, dy) -> Prepared:
        original = self.layers(model)[described["index"]]
        if type(original).__name__ != described["type"]:
            raise RuntimeError("layer {} is a {}, expected {}".format(
                described["index"], type(original).__name__, described["type"]))
        layer = original.__class__.from_config(original.get_config())
        xs = [K.placeholder(shape=x.shape, dtype=str(x.dtype)) for x in inputs]
        y = layer(xs[0] if len(xs) == 1 else xs)
        layer.set_weights(original.get_weights())
        outputs = [y]
        if pass_name == "backward":
            # dy lives in a variable: no per-call host copy, no constant folding into the graph.
            outputs += K.gradients(K.sum(y * K.variable(dy)), xs + layer.trainable_weights)
        fn_inputs, feed = list(xs), list(inputs)
        if ops._uses_learning_phase(y):
            fn_inputs.append(K.learning_phase())
            feed.append(1)  # the training step's branch (BN batch statistics, dropout on)
        fn = ops._LazyFunction(fn_inputs, outputs)
        return Prepared(step=lambda: fn(feed), sync=ops._identity, outputs=None,
                        device_of=lambda out: self.models.ops.impl.device_of(fn.fn, feed))


def _listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _shapes(shape) -> list:
    """Keras 2 gives one shape tuple, or a list of them for several inputs."""
    if isinstance(shape, list):
        return [list(s) for s in shape]
    return [list(shape)]
