"""The op registry: one op per Keras layer type, found by its CLI name.

The seed models' layers have NumPy references, one module each (a subclass of base.Op). Every
other layer of Keras' layer benchmark is a KerasLayer checked against its float64 twin: one
line in KERAS_LAYERS.
"""
from kmicro.core.ops import activation, add, batchnorm, conv2d, dense, dropout, flatten, pooling
from kmicro.core.ops.base import Op
from kmicro.core.ops.keras_layer import FLOAT64_TWIN, KerasLayer

__all__ = ["FAMILIES", "FLOAT64_TWIN", "KERAS_LAYERS", "OPS", "Op", "REGISTERED", "SEED_OPS",
           "USER", "get"]

# Append-only: the order is the CLI's and the reports' op order.
SEED_OPS = (
    conv2d.Conv2D(),
    batchnorm.BatchNormalization(),
    pooling.MaxPooling2D(),
    pooling.AveragePooling2D(),
    dense.Dense(),
    activation.Activation(),
    add.Add(),
    dropout.Dropout(),
    flatten.Flatten(),
)


def _group(family, *layers):
    """KerasLayers of one family: (name, Keras class[, options]) each."""
    return tuple(KerasLayer(name, layer, family, **(more[0] if more else {}))
                 for name, layer, *more in layers)


# Keras' own layer benchmark (benchmarks/layer_benchmark in keras-team/keras), but for the
# classes above. Append-only, like SEED_OPS.
KERAS_LAYERS = (
    _group("activation", ("elu", "ELU"), ("prelu", "PReLU"), ("relu", "ReLU"),
           ("leaky_relu", "LeakyReLU"), ("softmax", "Softmax")),
    _group("attention", ("attention", "Attention", dict(n_inputs=2)),
           ("multi_head_attention", "MultiHeadAttention", dict(n_inputs=2, positional=True)),
           ("additive_attention", "AdditiveAttention", dict(n_inputs=2))),
    _group("conv", ("conv1d", "Conv1D"), ("conv3d", "Conv3D"),
           ("depthwise_conv1d", "DepthwiseConv1D"), ("depthwise_conv2d", "DepthwiseConv2D"),
           ("separable_conv1d", "SeparableConv1D"), ("separable_conv2d", "SeparableConv2D"),
           ("conv1d_transpose", "Conv1DTranspose"), ("conv2d_transpose", "Conv2DTranspose"),
           ("conv3d_transpose", "Conv3DTranspose")),
    _group("core", ("einsum_dense", "EinsumDense"),
           ("embedding", "Embedding", dict(int_inputs="input_dim"))),
    _group("merge", *((name, layer, dict(n_inputs=2)) for name, layer in (
        ("average", "Average"), ("concatenate", "Concatenate"), ("dot", "Dot"),
        ("maximum", "Maximum"), ("minimum", "Minimum"), ("multiply", "Multiply"),
        ("subtract", "Subtract")))),
    _group("normalization", ("group_normalization", "GroupNormalization"),
           ("layer_normalization", "LayerNormalization"),
           ("unit_normalization", "UnitNormalization")),
    _group("pooling", ("average_pooling1d", "AveragePooling1D"),
           ("average_pooling3d", "AveragePooling3D"), ("max_pooling1d", "MaxPooling1D"),
           ("max_pooling3d", "MaxPooling3D"),
           ("global_average_pooling1d", "GlobalAveragePooling1D"),
           ("global_average_pooling2d", "GlobalAveragePooling2D"),
           ("global_average_pooling3d", "GlobalAveragePooling3D"),
           ("global_max_pooling1d", "GlobalMaxPooling1D"),
           ("global_max_pooling2d", "GlobalMaxPooling2D"),
           ("global_max_pooling3d", "GlobalMaxPooling3D")),
    _group("regularization",
           ("gaussian_dropout", "GaussianDropout", dict(random="gaussian_dropout")),
           ("gaussian_noise", "GaussianNoise", dict(random="gaussian_noise")),
           ("spatial_dropout1d", "SpatialDropout1D", dict(random="mask")),
           ("spatial_dropout2d", "SpatialDropout2D", dict(random="mask")),
           ("spatial_dropout3d", "SpatialDropout3D", dict(random="mask"))),
    _group("reshaping", ("cropping1d", "Cropping1D"), ("cropping2d", "Cropping2D"),
           ("cropping3d", "Cropping3D"), ("permute", "Permute"),
           ("up_sampling1d", "UpSampling1D"), ("up_sampling2d", "UpSampling2D"),
           ("up_sampling3d", "UpSampling3D"), ("zero_padding1d", "ZeroPadding1D"),
           ("zero_padding2d", "ZeroPadding2D"), ("zero_padding3d", "ZeroPadding3D")),
    _group("rnn", ("simple_rnn", "SimpleRNN"), ("gru", "GRU"), ("lstm", "LSTM"),
           ("conv_lstm1d", "ConvLSTM1D"), ("conv_lstm2d", "ConvLSTM2D"),
           ("conv_lstm3d", "ConvLSTM3D"),
           ("bidirectional", "Bidirectional", dict(wrapped="LSTM")),
           ("time_distributed", "TimeDistributed", dict(wrapped="Dense"))),
    _group("preprocessing", ("random_rotation", "RandomRotation", dict(random="rotation"))),
)
KERAS_LAYERS = tuple(op for family in KERAS_LAYERS for op in family)
# A user's own layer class: `--layer 'module:Class(kwargs)'`; never in a catalog.
USER = KerasLayer("user", "user", "user")
REGISTERED = SEED_OPS + KERAS_LAYERS

_BY_NAME = {op.name: op for op in REGISTERED + (USER,)}
# op name (CLI) -> Keras layer class name, every op but `user`.
OPS = {op.name: op.layer for op in REGISTERED}
# Report order: Keras' own grouping of its layers.
FAMILIES = ("activation", "attention", "conv", "core", "merge", "normalization", "pooling",
            "regularization", "reshaping", "rnn", "preprocessing")


def get(name) -> Op:
    """The registered op called `name` (ValueError names the registered ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"no op {name!r}; registered: {', '.join(OPS)}") from None
