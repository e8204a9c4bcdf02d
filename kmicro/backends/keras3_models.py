"""Keras 3 model builder for `kmicro models` (tensorflow, jax, torch; numpy cannot train).

Imported only inside a model worker whose KERAS_BACKEND is already set. Stack info and
device detection come from the op adapter (kmicro/backends/keras3.py), so both commands
describe a stack the same way. Models compile the way `fit` would (jit_compile="auto":
XLA for TensorFlow only with a GPU, jax.jit, torch eager); --jit on/off forces it.
"""
from __future__ import annotations

import keras

from kmicro.backends import keras3 as ops_adapter
from kmicro.backends.base import UnsupportedPass
from kmicro.models import graph
from kmicro.models.epoch import Trainer

JIT_COMPILE = {"auto": "auto", "on": True, "off": False}


class ModelAdapter:
    family = "keras3"

    def __init__(self, device="auto", jit="auto"):
        self.ops = ops_adapter.Adapter(device=device, jit=jit)
        self.gpu = self.ops.gpu
        self.jit = jit

    def info(self) -> dict:
        return self.ops.info()

    def build(self, spec, seed=0) -> Trainer:
        if ops_adapter.BACKEND == "numpy":
            raise UnsupportedPass("the numpy backend has no gradients: it cannot train a model")
        keras.utils.set_random_seed(seed)
        keras.config.set_image_data_format("channels_last")
        model = graph.build(spec, keras)
        optimizer, described = _optimizer(spec.optimizer)
        model.compile(optimizer=optimizer, loss=spec.loss, metrics=["accuracy"],
                      jit_compile=JIT_COMPILE[self.jit])
        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self._device(model), optimizer=described,
                       params=model.count_params())

    def _device(self, model) -> str:
        # Where the trained weights live is where the train step ran.
        return self.ops.impl.device_of(model.trainable_variables[0].value)


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
