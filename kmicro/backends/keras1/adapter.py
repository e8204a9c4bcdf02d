"""The Keras 1 adapter: Keras 2's (kmicro/backends/keras2/adapter.py) building Keras 1 layers.

Layers and models are spelled as in Keras 2 everywhere in kmicro (the case catalog, the model
zoo); names.translate says them in Keras 1.2.1's words. What else differs from Keras 2:
- `dim_ordering` "th" (channels_first) keeps a convolution kernel as (filters, channels,
  rows, cols), not (rows, cols, channels, filters): weights and gradients are transposed;
- a functional model takes `input=`/`output=`, and the image layout is set with
  `set_image_dim_ordering`.
"""
from __future__ import absolute_import

import numpy as np

from kmicro.backends.base import UnsupportedPass
from kmicro.backends.keras1.names import translate
from kmicro.backends.keras2 import adapter, layers, models
from kmicro.backends.keras2.backend import K, fresh_graph, keras
from kmicro.models import graph

__all__ = ["Adapter"]

_TH_KERNEL = (3, 2, 0, 1)  # (rows, cols, channels, filters) -> (filters, channels, rows, cols)


def make_layer(name, kwargs):
    """The Keras 1 layer for a Keras 2 class name and kwargs."""
    try:
        keras1_name, keras1_kwargs = translate(name, kwargs)
    except ValueError as exc:
        raise UnsupportedPass(str(exc))
    return getattr(keras.layers, keras1_name)(**keras1_kwargs)


def build_layer(case, weights):
    if case.op == "conv2d" and case.data_format == "channels_first":
        weights = [weights[0].transpose(_TH_KERNEL).copy()] + list(weights[1:])
    return layers.build(case, weights, make_layer)


def build_spec(spec, seed):
    """(the zoo model compiled with its optimizer, how the optimizer was built)."""
    fresh_graph()
    np.random.seed(seed)  # Keras 1 initialisers draw from NumPy
    K.set_image_dim_ordering("tf")
    tensors = {graph.INPUT: keras.layers.Input(shape=spec.input_shape)}
    for node in spec.nodes:
        config = node.config()
        for key, value in config.items():
            if isinstance(value, tuple) and value and value[0] == "l2":
                config[key] = keras.regularizers.l2(value[1])
        args = [tensors[name] for name in node.inputs]
        tensors[node.name] = make_layer(node.layer, config)(args if len(args) > 1 else args[0])
    model = keras.models.Model(input=tensors[graph.INPUT], output=tensors[spec.output],
                               name=spec.name)
    optimizer, _ = models.make_optimizer(spec.optimizer)
    model.compile(optimizer=optimizer, loss=spec.loss, metrics=["accuracy"])
    return model, described(model.optimizer)


def described(optimizer):
    """The optimizer as Keras 1 built it, read back from its config (its own argument names;
    float32 variables rounded to 6 digits)."""
    config = optimizer.get_config()
    args = ", ".join("{}={}".format(k, "{:.6g}".format(v) if isinstance(v, float) else v)
                     for k, v in sorted(config.items()))
    return "keras.optimizers.{}({})".format(type(optimizer).__name__, args)


class Adapter(adapter.Adapter):
    family = "keras1"
    layer_io = float64_twin = None  # the seed layers only (their Keras 2 names translate)
    model_kind = "a Keras 1 model (keras.models.Model)"
    build_layer = staticmethod(build_layer)
    build_spec = staticmethod(build_spec)

    @staticmethod
    def kernel_to_reference(case, gradient):
        if case.data_format == "channels_first":
            gradient = gradient.transpose(2, 3, 1, 0)  # back to (rows, cols, channels, filters)
        return layers.flip_kernel_gradient(gradient)
