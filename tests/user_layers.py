"""A user's own Keras 3 layer, for `kmicro ops --layer user_layers:Scale(factor=2.0)`."""
import keras


class Scale(keras.layers.Layer):
    """x * factor * w, with w one trainable weight per feature."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.factor * self.w
