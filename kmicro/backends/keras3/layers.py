"""Keras 3 layers built alone: a catalog case with the reference weights, or a model's layer
rebuilt from its config (attribution) at the shapes it was called with."""
from __future__ import annotations

import importlib

import keras
import numpy as np

from kmicro.backends.base import UnsupportedPass
from kmicro.core import ops

__all__ = ["build", "built_alone", "inputs_of", "rebuild", "listed", "shapes"]


def build(case, weights):
    """The case's layer, built at its input shape, with `weights` loaded; layout checked."""
    layer = getattr(keras.layers, case.layer)(**case.layer_kwargs())
    shape = list(case.input_shape)
    layer.build([shape] * case.n_inputs if case.n_inputs > 1 else shape)
    got = [tuple(w.shape) for w in layer.get_weights()]
    if got != [tuple(w.shape) for w in weights]:
        raise RuntimeError(f"{case.layer} weights {got} do not match the reference layout")
    if weights:
        layer.set_weights(weights)
    return layer


def built_alone(case, dtype="float32", weights=None):
    """(layer, output shape): any layer class of a KerasLayer case (a catalog layer or the
    user's own), made in `dtype` and built, with `weights` loaded when given."""
    op = ops.get(case.op)
    make = _class(op.class_path(case))
    if op.wrapped:  # Bidirectional(LSTM(...)): the case's options are the inner layer's
        inner = _class(f"keras.layers:{op.wrapped}")(**case.layer_kwargs(), dtype=dtype)
        layer = make(inner, dtype=dtype)
    else:
        layer = make(**case.layer_kwargs(), dtype=dtype)
    # Built by a symbolic call: no kernel runs (TensorFlow has no eager float64 AvgPool3D).
    symbols = [keras.KerasTensor(case.input_shape, _input_dtype(case, dtype))
               for _ in range(case.n_inputs)]
    out = layer(*symbols) if op.positional else layer(symbols[0] if len(symbols) == 1 else symbols)
    if weights is not None:
        layer.set_weights([np.asarray(w, dtype) for w in weights])
    return layer, tuple(int(d) for d in listed(out)[0].shape)


def inputs_of(case, arrays, dtype="float32") -> list:
    """The layer's input tensors of `arrays`: integer ids for Embedding, else `dtype`."""
    kind = _input_dtype(case, dtype)
    return [keras.ops.convert_to_tensor(np.asarray(a).astype(kind)) for a in arrays]


def _input_dtype(case, dtype) -> str:
    """int32 for integer ids (Embedding), else `dtype`."""
    return "int32" if getattr(ops.get(case.op), "int_inputs", None) else dtype


def _class(path):
    """The layer class of 'module:Class'; UnsupportedPass when this Keras lacks it."""
    module, _, name = path.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if found is None:
        where = name if module == "keras.layers" else f"{module}.{name}"
        raise UnsupportedPass(f"Keras {keras.__version__} has no {where}")
    return found


def rebuild(original, described, inputs):
    """A new layer from a model layer's config, built at the shapes of `inputs`, with its weights."""
    if type(original).__name__ != described["type"]:
        raise RuntimeError("layer {} is a {}, expected {}".format(
            described["index"], type(original).__name__, described["type"]))
    layer = original.__class__.from_config(original.get_config())
    symbols = [keras.Input(batch_shape=x.shape, dtype=str(x.dtype)) for x in inputs]
    layer(symbols[0] if len(symbols) == 1 else symbols)  # builds it like the model did
    layer.set_weights(original.get_weights())
    return layer


def listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def shapes(x) -> list:
    return [list(t.shape) for t in listed(x)]
