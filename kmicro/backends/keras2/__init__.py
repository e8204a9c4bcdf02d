"""Keras 2 adapter: the theano and tf1 stacks (Keras 2.2.4 / 2.3.1, Python 3.7 / 3.9).

Imported only inside a worker process whose KERAS_BACKEND is already set. Modules: adapter
(the Adapter a worker uses), backend (keras and K imported once, the flavour loader),
theano_backend and tf1_backend (one per flavour), layers (a layer built alone on
placeholders), models (models compiled for training, model surgery for attribution), graph
(facts read from compiled graphs, for `kmicro diagnose`).
"""
from kmicro.backends.keras2.adapter import Adapter
from kmicro.backends.keras2.backend import BACKEND, K, keras
from kmicro.backends.keras2.layers import build

__all__ = ["Adapter", "BACKEND", "K", "build", "keras"]
