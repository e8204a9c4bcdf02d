"""A planted slowdown for measuring `kmicro ab` (docs/validation.md, "Planted-effect
detection"): on a stack whose PYTHONPATH holds this directory, the Keras layer named by
PLANT_LAYER returns `out + ops.mean(out) * 0.0`, one more reduction over its output that XLA
cannot drop (0 x NaN is NaN).

    kmicro stack add jaxplant --python .venv/bin/python --backend jax \
      --env PYTHONPATH=$PWD/scripts/plant_layer --env PLANT_LAYER=Conv2D
"""
import os

if os.environ.get("KERAS_BACKEND") and os.environ.get("PLANT_LAYER"):  # kmicro's workers only
    import keras
    from keras import ops

    _layer = getattr(keras.layers, os.environ["PLANT_LAYER"])
    _call = _layer.call

    def _planted(self, inputs, *args, **kwargs):
        out = _call(self, inputs, *args, **kwargs)
        return out + ops.mean(out) * 0.0

    _layer.call = _planted
