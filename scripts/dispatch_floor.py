"""What one call of a compiled step costs when it computes nothing: the framework's dispatch
floor, to read small layers' times against (docs/measurements.md, "Fidelity").

    KERAS_BACKEND=tensorflow .venv/bin/python scripts/dispatch_floor.py   # or jax, torch

Times, with the independent loop's timer (kmicro/backends/independent_loop.py), an identity
function compiled the way kmicro compiles a layer's forward (tf.function, jax.jit, eager torch
under no_grad) on a 32x512 float32 input, and the same through Keras: `Activation("linear")`.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kmicro", "backends"))
import independent_loop as loop  # noqa: E402  (a script: imports nothing of kmicro)

import keras  # noqa: E402


def identity_step(backend, x):
    if backend == "tensorflow":
        import tensorflow as tf
        f, t = tf.function(lambda x: x), tf.constant(x)
        return lambda: f(t), lambda out: out
    if backend == "jax":
        import jax
        f, t = jax.jit(lambda x: x), jax.numpy.asarray(x)
        return lambda: f(t), jax.block_until_ready
    if backend == "torch":
        import torch
        t = torch.from_numpy(x)

        def call():
            with torch.no_grad():
                return t.view_as(t)
        return call, lambda out: out
    raise SystemExit(f"no compiled identity for KERAS_BACKEND={backend}")


def main():
    backend = keras.backend.backend()
    x = np.random.default_rng(0).standard_normal((32, 512), dtype=np.float32)
    identity = loop.synced(*identity_step(backend, x), "")
    loop.warm_up(identity.call)
    bare = identity.autorange(0.4)["median_s"]
    request = {"layer": "Activation", "kwargs": {"activation": "linear"},
               "input_shape": [32, 512], "n_inputs": 1, "pass": "forward"}
    step = getattr(loop, backend + "_step")(*loop.layer_and_data(request), "forward")
    loop.warm_up(step.call)
    layer = step.autorange(0.4)["median_s"]
    print(f"{backend}: compiled identity {bare * 1e6:.1f} us per call; "
          f"Keras Activation('linear') {layer * 1e6:.1f} us per call")


if __name__ == "__main__":
    main()
