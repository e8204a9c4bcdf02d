"""Keras 3 adapter: tensorflow, jax, torch and numpy backends.

Imported only inside a worker process whose KERAS_BACKEND is already set.
Each backend compiles the way a Keras 3 train step does by default
(jit="auto": TF uses XLA only when a GPU is visible, JAX always jits, torch
runs eagerly); jit="on"/"off" forces it.
"""
from __future__ import annotations

import os
import re

import numpy as np

from kmicro.backends.base import Prepared, UnsupportedPass, cpu_name

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402  (backend must be chosen first)


class _Backend:
    """What differs per backend: placement, compilation, gradients, sync, device."""

    name = BACKEND
    module = None

    def __init__(self, jit):
        self.jit = jit

    def versions(self) -> dict:
        return {"keras": keras.__version__, BACKEND: self.module.__version__, "numpy": np.__version__}

    def has_gpu(self) -> bool:
        return False

    def gpu_name(self) -> str:
        return ""

    def to_device(self, a):
        return keras.ops.convert_to_tensor(a)

    def sync(self, out):
        return out

    def device_of(self, out) -> str:
        return "cpu"

    def to_numpy(self, t):
        return keras.ops.convert_to_numpy(t)


class _TensorFlow(_Backend):
    def __init__(self, jit):
        import tensorflow as tf

        self.tf, self.module = tf, tf
        super().__init__(jit)
        self.xla = self.has_gpu() if jit == "auto" else jit == "on"

    def has_gpu(self):
        return bool(self.tf.config.list_physical_devices("GPU"))

    def gpu_name(self):
        gpus = self.tf.config.list_physical_devices("GPU")
        return self.tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")

    def compile(self, fn):
        f = self.tf.function(fn, jit_compile=self.xla)
        errors = (self.tf.errors.UnimplementedError, self.tf.errors.InvalidArgumentError)

        def call(*a):
            try:
                return f(*a)
            except errors as exc:
                raise _nhwc_only(exc) or exc

        return call

    def forward(self, layer, xs, training):
        return self.compile(lambda *a: layer(_arg(a), training=training)), xs

    def fwd_bwd(self, layer, xs, dy):
        tf = self.tf

        def step(*a):
            with tf.GradientTape() as tape:
                tape.watch(a)
                y = layer(_arg(a), training=True)
                loss = tf.reduce_sum(y * dy)
            return y, tape.gradient(loss, [*a, *layer.trainable_variables])

        return self.compile(step), xs

    def sync(self, out):
        # CPU eager execution is synchronous; on GPU wait for every queued kernel.
        if self.has_gpu_device:
            self.tf.test.experimental.sync_devices()
        return out

    def device_of(self, out):
        return "gpu" if "GPU" in _first(out).device.upper() else "cpu"


class _Jax(_Backend):
    def __init__(self, jit):
        import jax

        self.jax, self.module = jax, jax
        super().__init__(jit)
        self.wrap = jax.jit if jit in ("auto", "on") else (lambda f: f)

    def has_gpu(self):
        return self.jax.devices()[0].platform == "gpu"

    def gpu_name(self):
        return self.jax.devices()[0].device_kind

    def forward(self, layer, xs, training):
        tv = [v.value for v in layer.trainable_variables]
        ntv = [v.value for v in layer.non_trainable_variables]

        kw = _training_kwarg(layer, training)

        def call(tv, ntv, *a):
            return layer.stateless_call(tv, ntv, _arg(a), **kw)[0]

        f = self.wrap(call)
        return (lambda *a: f(tv, ntv, *a)), xs

    def fwd_bwd(self, layer, xs, dy):
        jnp = self.jax.numpy
        tv = [v.value for v in layer.trainable_variables]
        ntv = [v.value for v in layer.non_trainable_variables]

        kw = _training_kwarg(layer, True)

        def loss(a, tv):
            y = layer.stateless_call(tv, ntv, _arg(a), **kw)[0]
            return jnp.sum(y * dy), y

        grad = self.jax.grad(loss, argnums=(0, 1), has_aux=True)

        def step(*a):
            (ga, gw), y = grad(a, tv)
            return y, [*ga, *gw]

        f = self.wrap(step)
        return f, xs

    def sync(self, out):
        return self.jax.block_until_ready(out)

    def device_of(self, out):
        return "gpu" if next(iter(_first(out).devices())).platform == "gpu" else "cpu"


class _Torch(_Backend):
    def __init__(self, jit):
        import torch

        self.torch, self.module = torch, torch
        super().__init__(jit)
        self.wrap = torch.compile if jit == "on" else (lambda f: f)

    def has_gpu(self):
        return self.torch.cuda.is_available()

    def gpu_name(self):
        return self.torch.cuda.get_device_name(0)

    def forward(self, layer, xs, training):
        torch = self.torch
        f = self.wrap(lambda *a: layer(_arg(a), training=training))

        def step(*a):
            with torch.no_grad():
                return f(*a)

        return step, xs

    def fwd_bwd(self, layer, xs, dy):
        torch = self.torch
        xs = [x.detach().requires_grad_(True) for x in xs]
        weights = [v.value for v in layer.trainable_variables]

        def step(*a):
            y = layer(_arg(a), training=True)
            return y, torch.autograd.grad((y * dy).sum(), [*a, *weights])

        return self.wrap(step), xs

    def sync(self, out):
        if self.has_gpu_device:
            self.torch.cuda.synchronize()
        return out

    def device_of(self, out):
        return _first(out).device.type.replace("cuda", "gpu")


class _Numpy(_Backend):
    module = np

    def forward(self, layer, xs, training):
        return (lambda *a: layer(_arg(a), training=training)), xs

    def fwd_bwd(self, layer, xs, dy):
        raise UnsupportedPass("the numpy backend has no gradients (forward only)")


def _nhwc_only(exc):
    """Where TensorFlow's CPU Conv2D kernels take NHWC only (it depends on the CPU): unsupported
    there, not an error."""
    lines = [ln for ln in exc.message.splitlines() if "NHWC" in ln]
    if lines:
        return UnsupportedPass("TensorFlow: " + re.sub(r"\{\{.*?\}\}\s*", "", lines[0]).strip())
    return None


def _training_kwarg(layer, training) -> dict:
    # stateless_call passes kwargs straight to call(); most layers take no `training`.
    return {"training": training} if layer._call_has_training_arg else {}


def _arg(a):
    return a[0] if len(a) == 1 else list(a)


def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


class Adapter:
    """Builds a case's layer with the shared seeded weights and hands out timed steps."""

    family = "keras3"

    def __init__(self, device="auto", jit="auto"):
        impl = {"tensorflow": _TensorFlow, "jax": _Jax, "torch": _Torch, "numpy": _Numpy}[BACKEND]
        self.impl = impl(jit)
        self.gpu = self.impl.has_gpu()
        self.impl.has_gpu_device = self.gpu and device != "cpu"
        self.jit = jit

    def info(self) -> dict:
        device = "gpu" if self.impl.has_gpu_device else "cpu"
        name = self.impl.gpu_name() if device == "gpu" else cpu_name()
        return {"backend": BACKEND, "versions": self.impl.versions(), "device": device,
                "device_name": name, "gpu_visible": self.gpu, "jit": self.jit}

    def build(self, case, weights):
        layer = getattr(keras.layers, case.layer)(**case.layer_kwargs())
        shape = list(case.input_shape)
        layer.build([shape] * case.n_inputs if case.n_inputs > 1 else shape)
        got = [tuple(w.shape) for w in layer.get_weights()]
        if got != [tuple(w.shape) for w in weights]:
            raise RuntimeError(f"{case.layer} weights {got} do not match the reference layout")
        if weights:
            layer.set_weights(weights)
        return layer

    def prepare(self, case, pass_name, weights, inputs, dy) -> Prepared:
        layer = self.build(case, weights)
        xs = [self.impl.to_device(x) for x in inputs]
        if pass_name == "backward":
            step, xs = self.impl.fwd_bwd(layer, xs, self.impl.to_device(dy))
        else:
            step, xs = self.impl.forward(layer, xs, pass_name == "forward_train")
        return Prepared(step=lambda: step(*xs), sync=self.impl.sync,
                        outputs=self._outputs, device_of=self.impl.device_of)

    def _outputs(self, out) -> tuple:
        """(y, grads) as NumPy arrays from a step's result."""
        if isinstance(out, (tuple, list)) and len(out) == 2 and isinstance(out[1], (tuple, list)):
            return self.impl.to_numpy(out[0]), [self.impl.to_numpy(g) for g in out[1]]
        return self.impl.to_numpy(out), None
