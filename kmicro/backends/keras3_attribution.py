"""Keras 3 side of `kmicro attribute` (tensorflow, jax, torch; numpy has no train step).

Imported only inside an attribution worker whose KERAS_BACKEND is already set. Built-in
models come from the models adapter (the zoo's optimizer and loss), layers are timed with
the op adapter's per-backend compile, gradient and sync code (kmicro/backends/keras3.py),
so a layer here is timed exactly like the same layer in `kmicro ops`.
"""
from __future__ import annotations

import keras

from kmicro.backends import keras3 as ops
from kmicro.backends import keras3_models
from kmicro.backends.base import Prepared, UnsupportedPass
from kmicro.models.epoch import Trainer

USER_OPTIMIZER = "keras.optimizers.Adam(learning_rate=0.001)"


class Attributor:
    family = "keras3"
    model_kind = "a Keras 3 model (keras.Model)"

    def __init__(self, device="auto", jit="auto"):
        self.models = keras3_models.ModelAdapter(device=device, jit=jit)
        self.impl = self.models.ops.impl
        self.gpu = self.models.gpu
        self.jit = jit

    def info(self) -> dict:
        return self.models.info()

    def seed(self, seed):
        keras.utils.set_random_seed(seed)

    def is_model(self, obj) -> bool:
        return isinstance(obj, keras.Model)

    def builtin(self, spec, seed):
        trainer = self.models.build(spec, seed)
        # The bound train_on_batch knows its model: compiled with the zoo's optimizer and loss.
        return trainer.train.__self__, trainer

    def compile_user(self, model) -> Trainer:
        if ops.BACKEND == "numpy":
            raise UnsupportedPass("the numpy backend has no gradients: it cannot train a model")
        losses = ["categorical_crossentropy" if len(t.shape) == 2 else "mse" for t in model.outputs]
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                      loss=losses[0] if len(losses) == 1 else losses,
                      jit_compile=keras3_models.JIT_COMPILE[self.jit])
        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self._device(model), optimizer=USER_OPTIMIZER,
                       params=model.count_params())

    def _device(self, model) -> str:
        # Where the trained weights live is where the train step ran.
        weights = model.trainable_variables
        return self.impl.device_of(weights[0].value) if weights else "cpu"

    def without(self, model, layer_type):
        """The model replayed from fresh layers, skipping `layer_type` layers. (clone_model
        would pass the removed layer's recorded call arguments, e.g. `mask`, to a stand-in,
        and takes no call_function for Sequential models.) Layers are in topological order."""
        new = {}
        inputs = [keras.Input(batch_shape=t.shape, dtype=t.dtype) for t in model.inputs]
        new.update((id(t), x) for t, x in zip(model.inputs, inputs))
        for layer in self.layers(model):
            args = [new[id(t)] for t in _listed(layer.input)]
            if type(layer).__name__ == layer_type:
                outs = args[:1]
            else:
                fresh = layer.__class__.from_config(layer.get_config())
                outs = _listed(fresh(args[0] if len(args) == 1 else args))
            new.update((id(old), out) for old, out in zip(_listed(layer.output), outs))
        return keras.Model(inputs, [new[id(t)] for t in model.outputs])

    @staticmethod
    def layers(model) -> list:
        return [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]

    def describe(self, model) -> list:
        """Per layer: name, type, shapes (batch None) of its first call, input dtypes."""
        return [{"name": layer.name, "type": type(layer).__name__,
                 "input_shapes": _shapes(layer.input), "output_shapes": _shapes(layer.output),
                 "dtypes": [str(t.dtype) for t in _listed(layer.input)],
                 "params": layer.count_params()} for layer in self.layers(model)]

    def io(self, model):
        return ([(list(t.shape), str(t.dtype)) for t in model.inputs],
                [list(t.shape) for t in model.outputs])

    def layer_pass(self, model, described, pass_name, inputs, dy) -> Prepared:
        layer = _fresh(self.layers(model), described, inputs)
        xs = [self.impl.to_device(x) for x in inputs]
        if pass_name == "backward":
            fn, xs = self.impl.fwd_bwd(layer, xs, self.impl.to_device(dy))
        else:
            fn, xs = self.impl.forward(layer, xs, True)  # the step's forward runs in training mode
        return Prepared(step=lambda: fn(*xs), sync=self.impl.sync, outputs=None,
                        device_of=self.impl.device_of)


def _fresh(layers, described, inputs):
    """A new layer from the model layer's config, built at its shapes, with its weights."""
    original = layers[described["index"]]
    if type(original).__name__ != described["type"]:
        raise RuntimeError("layer {} is a {}, expected {}".format(
            described["index"], type(original).__name__, described["type"]))
    layer = original.__class__.from_config(original.get_config())
    symbols = [keras.Input(batch_shape=x.shape, dtype=str(x.dtype)) for x in inputs]
    layer(symbols[0] if len(symbols) == 1 else symbols)  # builds it like the model did
    layer.set_weights(original.get_weights())
    return layer


def _listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _shapes(x) -> list:
    return [list(t.shape) for t in _listed(x)]
