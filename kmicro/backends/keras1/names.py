"""Keras 2 layer spellings (the case catalog's and the model zoo's) in Keras 1.2.1's words.

Pure data, no Keras: `translate("Conv2D", {"filters": 32, "kernel_size": 3, ...})` ->
("Convolution2D", {"nb_filter": 32, "nb_row": 3, "nb_col": 3, ...}). An argument Keras 1
has no word for raises ValueError naming it.
"""

__all__ = ["translate", "DIM_ORDERING"]

DIM_ORDERING = {"channels_last": "tf", "channels_first": "th"}

# Keras 2 argument -> Keras 1 argument, per layer; None: the same name.
_CONV = {"filters": "nb_filter", "padding": "border_mode", "strides": "subsample",
         "kernel_initializer": "init", "kernel_regularizer": "W_regularizer",
         "bias_regularizer": "b_regularizer", "use_bias": "bias", "activation": None,
         "data_format": "dim_ordering"}
_POOL = {"pool_size": None, "strides": None, "padding": "border_mode",
         "data_format": "dim_ordering"}
_LAYERS = {
    "Conv2D": ("Convolution2D", _CONV),
    "Dense": ("Dense", {"units": "output_dim", "kernel_initializer": "init",
                        "kernel_regularizer": "W_regularizer", "bias_regularizer": "b_regularizer",
                        "use_bias": "bias", "activation": None}),
    # mode 0: feature-wise, batch statistics in training (Keras 2's only mode).
    "BatchNormalization": ("BatchNormalization", {"axis": None, "momentum": None,
                                                  "epsilon": None}),
    "MaxPooling2D": ("MaxPooling2D", _POOL),
    "AveragePooling2D": ("AveragePooling2D", _POOL),
    "Dropout": ("Dropout", {"rate": "p"}),
    "Flatten": ("Flatten", {}),
    "Activation": ("Activation", {"activation": None}),
    "Add": ("Merge", {}),  # Keras 1 adds tensors with a Merge layer, mode "sum"
}
_FIXED = {"BatchNormalization": {"mode": 0}, "Merge": {"mode": "sum"}}


def translate(layer, kwargs):
    """(Keras 1 class name, Keras 1 kwargs) of a Keras 2 layer and its kwargs."""
    if layer not in _LAYERS:
        raise ValueError("Keras 1 has no {}; layers kmicro maps: {}".format(
            layer, ", ".join(_LAYERS)))
    name, words = _LAYERS[layer]
    out = dict(_FIXED.get(name, {}))
    for key, value in kwargs.items():
        if key == "kernel_size":
            out["nb_row"], out["nb_col"] = _pair(value)
            continue
        if name == "Flatten" and key == "data_format" and value == "channels_last":
            continue  # Keras 1 flattens in memory order: the channels_last order
        if key not in words:
            raise ValueError("Keras 1's {} has no counterpart of {}={!r}".format(name, key, value))
        if key == "data_format":
            value = DIM_ORDERING[value]
        elif key in ("strides", "pool_size") and value is not None:
            value = _pair(value)
        out[words[key] or key] = value
    return name, out


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)
