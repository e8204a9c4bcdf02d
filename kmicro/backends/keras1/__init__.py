"""Keras 1 adapter: the keras1-theano stack (Keras 1.2.1 + Theano 0.8.2, Python 3.6: report
000's own versions).

Keras 1 runs the same static graphs as Keras 2 (placeholders, K.function, a learning-phase
input, train_on_batch), so the adapter is Keras 2's with Keras 1's names: names (the
catalog's and model zoo's Keras 2 layer spellings translated), adapter (the Adapter).
"""
from kmicro.backends.keras1.adapter import Adapter

__all__ = ["Adapter"]
