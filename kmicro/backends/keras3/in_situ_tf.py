"""In-situ attribution on TensorFlow: the model's real train step (a `tf.function`) under
TensorFlow's profiler, each executed op's time given to a Keras layer through the name scopes
in its op name.

Keras 3 builds every layer under `tf.name_scope` (made unique with a suffix: `conv2d_1`), so
the profiler's op events read `functional_1/conv2d_1/convolution:Conv2D` (the layer's
forward), `gradient_tape/functional_1/conv2d_1/...` (its backward), `compile_loss/...` (the
loss) and `adam/...` (the optimizer update). Ops run on TensorFlow's thread pools, several at
once; kmicro/backends/xplane.py shares each step's wall time among them. A fused op keeps the
name of one op it absorbed (oneDNN's `activation_1/Relu:_MklNativeFusedConv2D` is the Conv2D
before the activation, with it), so fusion moves time between neighbouring layers.
"""
from __future__ import annotations

import re
import tempfile
import time

import tensorflow as tf

from kmicro.backends import xplane
from kmicro.backends.name_scopes import tf_part

__all__ = ["profile_steps"]

STEP = "kmicro.step"
_OP = re.compile(r"^[\w./-]+:\w+$")  # "scope/name:OpType", not the runtime's own events


def profile_steps(model, layers, train, steps, phase="train") -> dict:
    """As in_situ_torch.profile_steps: {"steps_s", "parts": [{"layer", "part", "times_s"}]}."""
    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2,
                                                       python_tracer_level=0)
    names = {layer.name for layer in layers}
    optimizer = model.optimizer.name
    walls = []
    with tempfile.TemporaryDirectory(prefix="kmicro-tf-trace-") as log_dir:
        train()  # the step once more outside the profile, as the first profiled one
        tf.profiler.experimental.start(log_dir, options=options)
        try:
            for _ in range(steps):
                t0 = time.perf_counter()
                with tf.profiler.experimental.Trace(STEP):
                    train()
                walls.append(time.perf_counter() - t0)
        finally:
            tf.profiler.experimental.stop()
        space = xplane.read(xplane.trace_file(log_dir))
    windows = sorted((e.start_ps, e.end_ps) for e in space.events if e.name == STEP)
    intervals = [(e.start_ps, e.end_ps, tf_part(e.name.split(":")[0], names, optimizer))
                 for e in space.events if _OP.match(e.name)]
    return {"steps_s": walls, "parts": xplane.step_parts(windows, intervals)}
