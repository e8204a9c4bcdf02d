"""Keras 2 layers built alone on placeholders: a catalog case with the reference weights, or a
model's layer rebuilt from its config (attribution) at the shapes it was called with."""
from __future__ import absolute_import

import importlib

from kmicro.backends.base import UnsupportedPass
from kmicro.backends.keras2.backend import K, keras
from kmicro.core import ops

__all__ = ["build", "built_alone", "rebuild", "flip_kernel", "flip_kernel_gradient"]


def build(case, weights, make_layer=None):
    """(layer, input placeholders, output tensor) with `weights` loaded; shapes checked.
    `make_layer(class name, kwargs)`: how this Keras spells the layer (Keras 2's own names)."""
    make_layer = make_layer or (lambda name, kwargs: getattr(keras.layers, name)(**kwargs))
    layer = make_layer(case.layer, case.layer_kwargs())
    xs = [K.placeholder(shape=tuple(case.input_shape), dtype=case.dtype)
          for _ in range(case.n_inputs)]
    y = layer(xs if case.n_inputs > 1 else xs[0])
    got = [tuple(w.shape) for w in layer.get_weights()]
    want = [tuple(w.shape) for w in weights]
    if got != want:
        raise RuntimeError("{} weights {} do not match the reference layout {}".format(
            case.layer, got, want))
    if weights:
        layer.set_weights(weights)
    return layer, xs, y


def built_alone(case, dtype="float32", weights=None):
    """(layer, input placeholders, output tensor) of a KerasLayer case in `dtype`, with
    `weights` loaded when given; UnsupportedPass when this Keras has no such layer."""
    op = ops.get(case.op)
    module, _, name = op.class_path(case).partition(":")
    make = getattr(importlib.import_module(module), name, None)
    if make is None:
        raise UnsupportedPass("Keras {} has no {}".format(keras.__version__, name))
    kwargs = dict(case.layer_kwargs(), dtype=dtype)
    if op.wrapped:
        inner = getattr(keras.layers, op.wrapped)(**kwargs)
        layer = make(inner, dtype=dtype)
    else:
        layer = make(**kwargs)
    kind = "int32" if op.int_inputs else dtype
    xs = [K.placeholder(shape=tuple(case.input_shape), dtype=kind) for _ in range(case.n_inputs)]
    y = layer(xs if case.n_inputs > 1 else xs[0])
    if weights is not None:
        layer.set_weights([w.astype(dtype) for w in weights])
    return layer, xs, y


def rebuild(original, described, inputs):
    """(layer, placeholders, output): a model layer rebuilt from its config on placeholders
    shaped like `inputs`, with its weights."""
    if type(original).__name__ != described["type"]:
        raise RuntimeError("layer {} is a {}, expected {}".format(
            described["index"], type(original).__name__, described["type"]))
    layer = original.__class__.from_config(original.get_config())
    xs = [K.placeholder(shape=x.shape, dtype=str(x.dtype)) for x in inputs]
    y = layer(xs[0] if len(xs) == 1 else xs)
    layer.set_weights(original.get_weights())
    return layer, xs, y


def flip_kernel(weights):
    # Keras 2's Theano backend computes a true convolution (theano's filter_flip=True), TF and
    # the reference a cross-correlation: the same function needs the kernel flipped in H and W,
    # as keras.utils.conv_utils.convert_kernel does when moving weights between backends.
    return [weights[0][::-1, ::-1].copy()] + list(weights[1:])


def flip_kernel_gradient(gradient):
    return gradient[::-1, ::-1]
