"""The `keras` catalog: one case per class of Keras' own layer benchmark.

Shapes follow keras-team/keras benchmarks/layer_benchmark (sequences of 256 steps, 256 features,
small images), at batch 32 and scaled down where a case would take more than a few
milliseconds on a 2-core CPU (3-D convolutions and recurrent layers mostly). Layers with a
seed op (conv2d, batchnorm, maxpool, avgpool, dense, add, dropout, flatten) use it. Append
only: history is keyed by these ids.
"""

__all__ = ["LAYERS"]

B = 32
SEQ = (B, 256, 16)  # (batch, steps, channels): 1-D convolutions, pooling, padding
IMG = (B, 32, 32, 16)  # 2-D
VOL = (B, 16, 16, 16, 4)  # 3-D
WIDE = (B, 256, 64)  # elementwise and merge layers
TOKENS = (B, 64, 32)  # attention: query and value

# (op, channels_last input shape, layer options), in Keras' family order.
LAYERS = [
    # activation
    ("elu", (B, 128, 128), {}),
    ("prelu", (B, 128, 128), {}),
    ("relu", (B, 128, 128), {}),
    ("leaky_relu", (B, 128, 128), {}),
    ("softmax", (B, 128, 128), {}),
    # attention
    ("attention", TOKENS, {}),
    ("multi_head_attention", TOKENS, dict(num_heads=2, key_dim=16)),
    ("additive_attention", TOKENS, {}),
    # conv
    ("conv1d", SEQ, dict(filters=16, kernel_size=3)),
    ("conv2d", (B, 64, 64, 3), dict(filters=16, kernel_size=3, padding="same")),
    ("conv3d", VOL, dict(filters=8, kernel_size=3)),
    ("depthwise_conv1d", SEQ, dict(kernel_size=3)),
    ("depthwise_conv2d", IMG, dict(kernel_size=3)),
    ("separable_conv1d", SEQ, dict(filters=16, kernel_size=3)),
    ("separable_conv2d", IMG, dict(filters=16, kernel_size=3)),
    ("conv1d_transpose", (B, 128, 16), dict(filters=16, kernel_size=3, strides=2)),
    ("conv2d_transpose", (B, 16, 16, 16), dict(filters=16, kernel_size=3, strides=2)),
    ("conv3d_transpose", (B, 8, 8, 8, 4), dict(filters=8, kernel_size=3, strides=2)),
    # core
    ("dense", (B, 256), dict(units=256)),
    ("einsum_dense", (B, 256), dict(equation="ab,bc->ac", output_shape=256)),
    ("embedding", (B, 64), dict(input_dim=1000, output_dim=64)),
    # merge
    ("add", WIDE, {}),
    ("average", WIDE, {}),
    ("concatenate", WIDE, {}),
    ("dot", TOKENS, dict(axes=2)),
    ("maximum", WIDE, {}),
    ("minimum", WIDE, {}),
    ("multiply", WIDE, {}),
    ("subtract", WIDE, {}),
    # normalization
    ("batchnorm", IMG, {}),
    ("group_normalization", IMG, dict(groups=4)),
    ("layer_normalization", WIDE, {}),
    ("unit_normalization", WIDE, {}),
    # pooling
    ("average_pooling1d", SEQ, dict(pool_size=2)),
    ("avgpool", IMG, dict(pool_size=2)),
    ("average_pooling3d", VOL, dict(pool_size=2)),
    ("max_pooling1d", SEQ, dict(pool_size=2)),
    ("maxpool", IMG, dict(pool_size=2)),
    ("max_pooling3d", VOL, dict(pool_size=2)),
    ("global_average_pooling1d", SEQ, {}),
    ("global_average_pooling2d", IMG, {}),
    ("global_average_pooling3d", VOL, {}),
    ("global_max_pooling1d", SEQ, {}),
    ("global_max_pooling2d", IMG, {}),
    ("global_max_pooling3d", VOL, {}),
    # regularization
    ("dropout", WIDE, dict(rate=0.5)),
    ("gaussian_dropout", WIDE, dict(rate=0.5)),
    ("gaussian_noise", WIDE, dict(stddev=0.5)),
    ("spatial_dropout1d", SEQ, dict(rate=0.5)),
    ("spatial_dropout2d", IMG, dict(rate=0.5)),
    ("spatial_dropout3d", VOL, dict(rate=0.5)),
    # reshaping
    ("cropping1d", SEQ, dict(cropping=2)),
    ("cropping2d", IMG, dict(cropping=2)),
    ("cropping3d", VOL, dict(cropping=2)),
    ("flatten", IMG, {}),
    ("permute", (B, 128, 64), dict(dims=(2, 1))),
    ("up_sampling1d", (B, 128, 16), dict(size=2)),
    ("up_sampling2d", (B, 16, 16, 16), dict(size=2)),
    ("up_sampling3d", (B, 8, 8, 8, 4), dict(size=2)),
    ("zero_padding1d", SEQ, dict(padding=2)),
    ("zero_padding2d", IMG, dict(padding=2)),
    ("zero_padding3d", VOL, dict(padding=2)),
    # rnn
    ("simple_rnn", (B, 32, 16), dict(units=32)),
    ("gru", (B, 32, 16), dict(units=32)),
    ("lstm", (B, 32, 16), dict(units=32)),
    ("conv_lstm1d", (B, 8, 32, 4), dict(filters=8, kernel_size=3)),
    ("conv_lstm2d", (B, 4, 16, 16, 4), dict(filters=8, kernel_size=3)),
    ("conv_lstm3d", (B, 4, 8, 8, 8, 2), dict(filters=4, kernel_size=3)),
    ("bidirectional", (B, 32, 16), dict(units=16)),
    ("time_distributed", (B, 16, 64), dict(units=32)),
    # preprocessing
    ("random_rotation", (B, 32, 32, 3), dict(factor=0.1)),
]
