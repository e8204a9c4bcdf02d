"""Keras 2 model builder for `kmicro models`: the theano and tf1 stacks (Python 3.7 / 3.9).

Imported only inside a model worker whose KERAS_BACKEND is already set. Stack info comes
from the op adapter (kmicro/backends/keras2.py). `train_on_batch` runs Keras 2's compiled
training function, the one `fit` calls per batch, and returns host NumPy values, so each
step has finished when it returns.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kmicro.backends import keras2 as ops_adapter
from kmicro.models import graph
from kmicro.models.epoch import Trainer

import keras  # noqa: E402,I100  (imported after the op adapter has chosen the backend)
from keras import backend as K  # noqa: E402


class ModelAdapter(object):
    family = "keras2"

    def __init__(self, device="auto", jit="auto"):
        self.ops = ops_adapter.Adapter(device=device, jit=jit)
        self.gpu = self.ops.gpu

    def info(self) -> dict:
        return self.ops.info()

    def build(self, spec, seed=0) -> Trainer:
        if hasattr(K, "clear_session"):  # TF1: a fresh graph per model (Theano has no session)
            K.clear_session()
        np.random.seed(seed)  # Keras 2 initialisers draw from NumPy on Theano
        K.set_image_data_format("channels_last")
        model = graph.build(spec, keras)
        optimizer, described = _optimizer(spec.optimizer)
        model.compile(optimizer=optimizer, loss=spec.loss, metrics=["accuracy"])
        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self._device(model, x), optimizer=described,
                       params=model.count_params())

    def _device(self, model, x) -> str:
        if not self.ops.use_gpu:
            return "cpu"
        # The op adapter reads the device back from a traced run of a K.function-like object.
        fn = SimpleNamespace(inputs=model.inputs, outputs=model.outputs)
        return self.ops.impl.device_of(fn, [x])


def _optimizer(spec):
    """(Keras 2 optimizer, how it was built). `lr`/`decay` are spelled as in 2.2.4 (2.3.1 accepts them)."""
    if spec.name == "adam":
        return keras.optimizers.Adam(lr=spec.learning_rate), \
            "keras.optimizers.Adam(lr={:g})".format(spec.learning_rate)
    optimizer = keras.optimizers.SGD(lr=spec.learning_rate, decay=spec.decay,
                                     momentum=spec.momentum, nesterov=spec.nesterov)
    return optimizer, "keras.optimizers.SGD(lr={:g}, decay={:g}, momentum={:g}, nesterov={})".format(
        spec.learning_rate, spec.decay, spec.momentum, spec.nesterov)
