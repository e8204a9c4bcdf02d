"""This worker's Keras 2 backend flavour, and what the modules of this package share.

Keras 2 picks its backend at import from KERAS_BACKEND, so `keras` and `K` are imported here,
once, after it is set. A flavour is one module, `<name>_backend.py` (theano, tf1: not
`theano.py`, which would rebind the framework's name in this package's namespace).
"""
from __future__ import absolute_import

import importlib
import os

BACKEND = os.environ.get("KERAS_BACKEND", "theano")
import keras  # noqa: E402  (backend must be chosen first)
from keras import backend as K  # noqa: E402

__all__ = ["BACKEND", "K", "keras", "load", "fresh_graph"]

# Keras backend name -> "module:class" inside this package.
_FLAVOURS = {"theano": "theano_backend:Theano", "tensorflow": "tf1_backend:TF1"}


def load():
    """This worker's flavour: where it computes, its versions, how to tell where a graph ran."""
    module_name, class_name = _FLAVOURS[BACKEND].split(":")
    module = importlib.import_module("{}.{}".format(__package__, module_name))
    return getattr(module, class_name)()


def fresh_graph():
    # TF1 keeps every graph in one default graph: start each build on a fresh one.
    # (Keras' Theano backend has no session and no clear_session.)
    if hasattr(K, "clear_session"):
        K.clear_session()
