"""The Keras 3 adapter: one object a worker asks for layer passes, models and attribution.

Each backend compiles the way a Keras 3 train step does by default (jit="auto": TF uses XLA
only when a GPU is visible, JAX always jits, torch runs eagerly); jit="on"/"off" forces it.
A layer pass is compiled by the same backend code whether the layer comes from the case
catalog (`prepare`) or from a model (`layer_pass`), so both are timed alike.
"""
from __future__ import annotations

import functools

import keras
import numpy as np

from kmicro.backends.base import FamilyAdapter, Prepared, UnsupportedPass, cpu_name
from kmicro.backends.keras3 import backend, layers, models
from kmicro.core import ops
from kmicro.models.epoch import Trainer

__all__ = ["Adapter"]

NO_GRADIENTS = "the numpy backend has no gradients: it cannot train a model"
NOT_KERAS2 = ("diagnose reads Keras 2 graphs (theano, theano-2019, tf1); Keras 3 builds "
              "BN from primitive ops on every backend")


class Adapter(FamilyAdapter):
    """Builds layers and models on this worker's Keras 3 backend and hands out timed steps."""

    family = "keras3"
    model_kind = "a Keras 3 model (keras.Model)"

    def __init__(self, device="auto", jit="auto"):
        self.impl = backend.load(jit)
        self.gpu = self.impl.has_gpu()
        self.impl.has_gpu_device = self.gpu and device != "cpu"
        self.jit = jit

    def info(self) -> dict:
        device = "gpu" if self.impl.has_gpu_device else "cpu"
        name = self.impl.gpu_name() if device == "gpu" else cpu_name()
        return {"backend": backend.BACKEND, "versions": self.impl.versions(), "device": device,
                "device_name": name, "gpu_visible": self.gpu, "jit": self.jit}

    # ---- layer passes -------------------------------------------------------------------

    def build(self, case, weights):
        """The case's layer with the shared seeded weights."""
        return layers.build(case, weights)

    def prepare(self, case, pass_name, weights, inputs, dy) -> Prepared:
        op = ops.get(case.op)
        if op.reference_kind == ops.FLOAT64_TWIN:
            layer, _ = layers.built_alone(case, case.dtype, weights)
            inputs = layers.inputs_of(case, inputs, case.dtype)
        else:
            layer = self.build(case, weights)
        return self._compiled(layer, pass_name, inputs, dy, training=pass_name == "forward_train",
                              op=op)

    def layer_io(self, case) -> tuple:
        """(weight shapes in Keras order, output shape) of a KerasLayer case's layer."""
        layer, out_shape = layers.built_alone(case)
        return [tuple(w.shape) for w in layer.get_weights()], out_shape

    def float64_twin(self, case, weights, inputs, training, dy=None) -> tuple:
        """(y, grads or None) of the case's layer built in float64, with the same weights and
        inputs, through the same backend calls as the timed pass: the reference of layers
        without a NumPy one (kmicro/core/ops/keras_layer.py)."""
        with self.impl.float64_context():
            layer, _ = layers.built_alone(case, "float64", weights)
            xs = layers.inputs_of(case, inputs, "float64")
            dy64 = None if dy is None else np.asarray(dy, np.float64)
            pass_name = "forward" if dy is None else "backward"
            prepared = self._compiled(layer, pass_name, xs, dy64, training, ops.get(case.op))
            y, grads = prepared.outputs(prepared.sync(prepared.step()))
        as64 = lambda a: np.asarray(a, np.float64)  # noqa: E731
        return as64(y), None if grads is None else [as64(g) for g in grads]

    def layer_pass(self, model, described, pass_name, inputs, dy) -> Prepared:
        """One model layer, rebuilt alone; its forward runs in training mode, as in the step."""
        original = models.layers(model)[described["index"]]
        layer = layers.rebuild(original, described, inputs)
        return self._compiled(layer, pass_name, inputs, dy, training=True)

    def _compiled(self, layer, pass_name, inputs, dy, training, op=None) -> Prepared:
        """`op`: how the layer takes several inputs (positionally or as a list) and whether
        they have a gradient (not Embedding's integer ids)."""
        positional = bool(op and op.positional)
        xs = [self.impl.to_device(x) for x in inputs]
        if pass_name == "backward":
            step = self.impl.fwd_bwd(layer, xs, self.impl.to_device(dy), positional,
                                     grad_inputs=not getattr(op, "int_inputs", None))
        else:
            step = self.impl.forward(layer, xs, training, positional)
        sync = self.impl.synchroniser()
        return Prepared(step=step, sync=sync, outputs=self._outputs,
                        device_of=self.impl.device_of,
                        peak_memory=functools.partial(self.impl.peak_memory, step, sync))

    def _outputs(self, out) -> tuple:
        """(y, grads) as NumPy arrays from a step's result."""
        if isinstance(out, (tuple, list)) and len(out) == 2 and isinstance(out[1], (tuple, list)):
            return self.impl.to_numpy(out[0]), [self.impl.to_numpy(g) for g in out[1]]
        return self.impl.to_numpy(out), None

    # ---- models -------------------------------------------------------------------------

    def build_model(self, spec, seed=0) -> Trainer:
        self._refuse_numpy()
        return self._trainer(*models.build(spec, seed, self.jit))

    def compile_user(self, model) -> Trainer:
        self._refuse_numpy()
        return self._trainer(*models.compile_user(model, self.jit))

    def _refuse_numpy(self):
        if backend.BACKEND == "numpy":
            raise UnsupportedPass(NO_GRADIENTS)

    def _trainer(self, model, optimizer) -> Trainer:
        sync = self.impl.synchroniser()

        def peak_memory(x, y):
            if hasattr(self.impl, "train_step_memory"):  # jax: Keras jits the step itself
                return self.impl.train_step_memory(model, x, y)
            return self.impl.peak_memory(functools.partial(model.train_on_batch, x, y), sync)

        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self._device(model), optimizer=optimizer,
                       params=model.count_params(), peak_memory=peak_memory)

    def _device(self, model) -> str:
        # Where the trained weights live is where the train step ran.
        weights = model.trainable_variables
        return self.impl.device_of(weights[0].value) if weights else "cpu"

    # ---- attribution --------------------------------------------------------------------

    def seed(self, seed):
        keras.utils.set_random_seed(seed)

    def is_model(self, obj) -> bool:
        return isinstance(obj, keras.Model)

    without = staticmethod(models.without)  # (model, layer_type) -> the model without them
    layers = staticmethod(models.layers)  # (model) -> its layers but the inputs
    describe = staticmethod(models.describe)  # (model) -> per layer: name, type, shapes...
    io = staticmethod(models.io)  # (model) -> (input shapes and dtypes, output shapes)

    profile_sessions = 3  # torch, TensorFlow and JAX start a profiler session cheaply

    def profile_steps(self, model, train, steps, phase="train") -> dict:
        """`steps` calls of `train` (a train or test step: `phase`) under the backend's
        profiler, split into the model's parts."""
        return self.impl.profile_steps(model, models.layers(model), train, steps, phase)

    # ---- graph inspection ---------------------------------------------------------------

    def inspect(self, part, samples=320, repeats=5) -> list:
        raise UnsupportedPass(NOT_KERAS2)
