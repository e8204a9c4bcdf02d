"""kmicro: layer-level microbenchmarks for Keras across backends."""

__version__ = "0.1.0"
