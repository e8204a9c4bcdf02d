"""Keras 3 layers built alone: a catalog case with the reference weights, or a model's layer
rebuilt from its config (attribution) at the shapes it was called with."""
from __future__ import annotations

import keras

__all__ = ["build", "rebuild", "listed", "shapes"]


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
