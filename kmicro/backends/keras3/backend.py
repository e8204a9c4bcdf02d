"""What every Keras 3 backend module provides, and the loader that picks this worker's backend.

A backend is one module, `<name>_backend.py`, named after Keras' own backend name. (Not
`tensorflow.py`, `jax.py`...: a submodule named like a framework rebinds that name in this
package's namespace as soon as it is imported, a trap for any `import numpy` there.)
"""
from __future__ import annotations

import contextlib
import importlib
import os

import numpy as np

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402  (backend must be chosen first)

__all__ = ["BACKEND", "Backend", "load", "call_arg", "call_args", "training_kwarg", "first",
           "returned"]

# Keras backend name -> "module:class" inside this package.
_BACKENDS = {"tensorflow": "tensorflow_backend:TensorFlow", "jax": "jax_backend:Jax",
             "torch": "torch_backend:Torch", "numpy": "numpy_backend:Numpy"}


class Backend:
    """What differs per backend: placement, compilation, gradients, sync, device.

    Subclasses add `forward(layer, xs, training, positional)` and `fwd_bwd(layer, xs, dy,
    positional, grad_inputs)`, each returning the pass as a call without arguments
    (`positional`: several inputs go in as positional arguments, not as one list;
    `grad_inputs` False: gradients of the weights only, for integer inputs). It is the compiled function itself with its arrays
    bound (functools.partial), so kmicro adds no Python frame to the timed call: on this
    project's 2-core VM each costs 1-2 µs, 5 % of JAX's Dense(10) forward+backward
    (docs/validation.md, "Fidelity against an independent loop"). Compiled functions take a
    fixed number of arguments: a `tf.function` over `*args` costs ~2 % more per call.
    """

    name = BACKEND
    module = None
    has_gpu_device = False  # set by the adapter: a GPU is visible and was not refused

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

    def synchroniser(self):
        """f(outputs) that returns them once the device has computed them (`timing.measure`'s
        `sync`): on the CPU, every backend's call returns when its work is done."""
        return returned

    def device_of(self, out) -> str:
        return "cpu"

    def peak_memory(self, step, sync) -> tuple:
        """(the most bytes one call of `step` holds at once beyond its inputs and weights, how
        they were counted), or (None, why not): each backend reads its own allocator."""
        return None, f"not measured: the {BACKEND} backend keeps no allocator statistics here"

    def to_numpy(self, t):
        return keras.ops.convert_to_numpy(t)

    @contextlib.contextmanager
    def float64_context(self):
        """Where float64 arrays stay float64, for a float64 twin: Keras' type promotion
        narrows 64-bit results to 32 bits, as JAX does outside its x64 mode
        (`float64_mode`), and its numpy backend converts float64 arrays through that
        promotion."""
        from keras.src.backend.common import dtypes

        narrowing = getattr(dtypes, "BIT64_TO_BIT32_DTYPE", None)  # not in every Keras 3
        floatx = keras.config.floatx()
        if narrowing is not None:
            dtypes.BIT64_TO_BIT32_DTYPE = {}
        keras.config.set_floatx("float64")
        try:
            with self.float64_mode():
                yield
        finally:
            if narrowing is not None:
                dtypes.BIT64_TO_BIT32_DTYPE = narrowing
            keras.config.set_floatx(floatx)

    def float64_mode(self):
        """The backend's own switch for float64 (JAX's x64 mode), if it has one."""
        return contextlib.nullcontext()

    def profile_steps(self, model, layers, train, steps, phase) -> dict:
        """The train step under this backend's profiler, its time split into the model's
        parts (kmicro/backends/keras3/in_situ_torch.py has the contract)."""
        from kmicro.backends.base import UnsupportedPass

        raise UnsupportedPass("in-situ attribution: not implemented for the {} backend "
                              "yet".format(BACKEND))


def load(jit) -> Backend:
    """This worker's backend (KERAS_BACKEND); only its framework gets imported."""
    module_name, class_name = _BACKENDS[BACKEND].split(":")
    module = importlib.import_module("{}.{}".format(__package__, module_name))
    return getattr(module, class_name)(jit)


def call_arg(a):
    """A layer's call argument from a step's positional inputs: one tensor, or a list."""
    return a[0] if len(a) == 1 else list(a)


def call_args(a, positional) -> list:
    """A layer's positional call arguments from a step's inputs."""
    return list(a) if positional else [call_arg(a)]


def training_kwarg(layer, training) -> dict:
    """`training=` for a layer whose call takes it, nothing for the others, as a Keras model
    calls its layers: Keras' torch layers spend ~20 µs per call (6 % of a small Conv2D) on a
    `training` their call does not take."""
    return {"training": training} if layer._call_has_training_arg else {}


def returned(out):
    """The synchroniser of a call that returns when its work is done."""
    return out


def first(out):
    """The first tensor of a (nested) step result: where it lives is where the step ran."""
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out
