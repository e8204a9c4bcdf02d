"""Keras 3 adapter: the tensorflow, jax, torch and numpy backends behind one `Adapter`.

Imported only inside a worker process whose KERAS_BACKEND is already set; only that
backend's framework is imported. Modules: adapter (the Adapter a worker uses), backend (what
a backend provides, and the loader), <name>_backend (one per Keras backend), layers (a layer
built alone), models (models compiled for training, model surgery for attribution).
"""
from kmicro.backends.keras3.adapter import Adapter
from kmicro.backends.keras3.backend import BACKEND

__all__ = ["Adapter", "BACKEND"]
