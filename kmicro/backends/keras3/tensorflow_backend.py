"""Keras 3 on TensorFlow: tf.function (XLA only with a GPU unless --jit says), GradientTape."""
from __future__ import annotations

import contextlib
import functools
import re

import tensorflow as tf

from kmicro.backends.base import UnsupportedPass
from kmicro.backends.keras3.backend import (Backend, call_arg, call_args, first, returned,
                                            training_kwarg)

__all__ = ["TensorFlow"]


class TensorFlow(Backend):
    module = tf
    float64 = False  # inside float64_mode

    def __init__(self, jit):
        super().__init__(jit)
        self.xla = self.has_gpu() if jit == "auto" else jit == "on"

    def has_gpu(self):
        return bool(tf.config.list_physical_devices("GPU"))

    def gpu_name(self):
        gpus = tf.config.list_physical_devices("GPU")
        return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")

    def profile_steps(self, model, layers, train, steps, phase) -> dict:
        from kmicro.backends.keras3 import in_situ_tf

        return in_situ_tf.profile_steps(model, layers, train, steps, phase)

    @contextlib.contextmanager
    def float64_mode(self):
        # Some float64 kernels exist only in XLA on the CPU (AvgPool3D): a float64 twin
        # compiles with XLA where TensorFlow has no other kernel; ops with no float64 at all
        # (MaxPool3D) make the pass unsupported (_no_float64).
        self.float64 = True
        try:
            yield
        finally:
            self.float64 = False

    def compile(self, fn):
        f = tf.function(fn, jit_compile=self.xla)
        errors = (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError)
        xla_fallback = self.float64 and not self.xla

        def call(*a):
            nonlocal f
            try:
                return f(*a)
            except errors as exc:
                if xla_fallback and "No OpKernel was registered" in str(exc):
                    f = tf.function(fn, jit_compile=True)
                    return f(*a)
                raise _nhwc_only(exc) or exc
            except TypeError as exc:
                raise (self.float64 and _no_float64(exc)) or exc

        return call

    def forward(self, layer, xs, training, positional=False):
        kw = training_kwarg(layer, training)
        if positional:
            return functools.partial(self.compile(lambda x: layer(*x, **kw)), list(xs))
        return functools.partial(self.compile(lambda x: layer(x, **kw)), call_arg(xs))

    def fwd_bwd(self, layer, xs, dy, positional=False, grad_inputs=True):
        kw = training_kwarg(layer, True)

        # The input (one tensor, or Add's list) and dy are arguments, as a training step's data
        # would be; variables are captured by reference either way. A tuple of inputs would
        # cost tf.function ~15 µs per call to flatten.
        def step(x, dy):
            inputs = list(x) if isinstance(x, list) else [x]
            with tf.GradientTape() as tape:
                if grad_inputs:
                    tape.watch(x)
                y = layer(*call_args(inputs, positional), **kw)
                loss = tf.reduce_sum(y * dy)
            wrt = [*inputs, *layer.trainable_variables] if grad_inputs \
                else list(layer.trainable_variables)
            return y, _no_gradient_is_unsupported(tape.gradient(loss, wrt), layer)

        return functools.partial(self.compile(step), list(xs) if positional else call_arg(xs),
                                 dy)

    def synchroniser(self):
        # CPU eager execution is synchronous; on GPU wait for every queued kernel.
        return _sync_devices if self.has_gpu_device else returned

    def device_of(self, out):
        return "gpu" if "GPU" in first(out).device.upper() else "cpu"

    def peak_memory(self, step, sync):
        if not self.has_gpu_device:
            return None, ("not measured: TensorFlow keeps allocator statistics for GPUs and "
                          "TPUs only (get_memory_info raises for the CPU)")
        tf.config.experimental.reset_memory_stats("GPU:0")
        before = tf.config.experimental.get_memory_info("GPU:0")["current"]
        out = sync(step())
        held = tf.config.experimental.get_memory_info("GPU:0")["peak"] - before
        del out
        return held, ("TensorFlow's GPU allocator: peak in use during one call, less what was "
                      "in use before it")


def _no_gradient_is_unsupported(grads, layer):
    """TensorFlow returns None for a gradient it has no kernel for: say so, not crash later."""
    if any(g is None for g in grads):
        raise UnsupportedPass(f"TensorFlow: no gradient through {type(layer).__name__} "
                              "with respect to some of its inputs or weights")
    return grads


def _sync_devices(out):
    tf.test.experimental.sync_devices()
    return out


def _nhwc_only(exc):
    """Where TensorFlow's CPU Conv2D kernels take NHWC only (it depends on the CPU): unsupported
    there, not an error."""
    lines = [ln for ln in exc.message.splitlines() if "NHWC" in ln]
    if lines:
        return UnsupportedPass("TensorFlow: " + re.sub(r"\{\{.*?\}\}\s*", "", lines[0]).strip())
    return None


def _no_float64(exc):
    """UnsupportedPass for an op TensorFlow defines for narrower floats only (MaxPool3D): the
    layer has no float64 twin to be checked against here."""
    found = re.search(r"DataType float64 not in list of allowed values: ([\w, ]+)", str(exc))
    if found:
        return UnsupportedPass("no float64 twin to check it against: TensorFlow computes it in "
                               f"{found.group(1)} only")
    return None
