"""User models for `kmicro attribute` tests, given as user_models:FUNCTION.

Each function returns an uncompiled model. They use only API that Keras 2.3.1 and Keras 3
share (keras.layers.Input, keras.models.Model), so one function serves --model and
--model-keras2. Keras is imported inside the functions: the CLI side never imports it.
Shapes are small so the tests stay fast on a 2-core CPU.
"""


def one_expensive():
    """Cheap layers around one Conv2D, which must rank first. Its 144 multiply-adds per output
    keep it far ahead of the memory-bound pooling after it, whose backward writes as much as the
    conv outputs (with 4 inputs and 256 filters the conv was 3x the pooling on a quiet machine,
    and below it once in CI)."""
    import keras
    from keras import layers

    x = inputs = layers.Input(shape=(16, 16, 8))
    x = layers.Conv2D(16, 1, name="cheap")(x)
    x = layers.Activation("relu")(x)
    x = layers.Conv2D(64, 3, padding="same", name="expensive")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10, activation="softmax")(x)
    return keras.models.Model(inputs, x)


def bn_heavy():
    """Mostly BatchNormalization: removing it must make the step clearly faster."""
    import keras
    from keras import layers

    x = inputs = layers.Input(shape=(32, 32, 16))
    for _ in range(3):
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10, activation="softmax")(x)
    return keras.models.Model(inputs, x)


def small_cnn():
    """A little of everything: conv, BN, pooling, dropout, dense (2-D output: crossentropy)."""
    import keras
    from keras import layers

    x = inputs = layers.Input(shape=(16, 16, 3))
    x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = layers.BatchNormalization()(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Dropout(0.25)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(10, activation="softmax")(x)
    return keras.models.Model(inputs, x)


def regression():
    """A 3-D output: trained with mean squared error."""
    import keras
    from keras import layers

    x = inputs = layers.Input(shape=(8, 4))
    x = layers.Dense(4)(x)
    return keras.models.Model(inputs, x)


def not_a_model():
    return [1, 2, 3]


def broken():
    raise ValueError("this model has a bug")
