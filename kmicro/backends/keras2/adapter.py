"""The Keras 2 adapter: one object a worker asks for layer passes, models and attribution.

Keras 2 builds a static graph and compiles one backend function per pass, the way
`Model.fit`/`predict` do: the learning phase is a graph input fed 0 or 1, so the timed
graphs contain the same `in_train_phase` switches a Keras 2 model has. A layer pass is
compiled by the same code whether the layer comes from the case catalog (`prepare`) or
from a model (`layer_pass`). Theano and TF1 session runs return host NumPy arrays, so a
step is already synchronous.
"""
from __future__ import absolute_import

from types import SimpleNamespace

import numpy as np

from kmicro.backends.base import FamilyAdapter, Prepared, cpu_name
from kmicro.backends.keras2 import backend, layers, models
from kmicro.backends.keras2.backend import K, keras
from kmicro.core import ops
from kmicro.models.epoch import Trainer

__all__ = ["Adapter"]


class Adapter(FamilyAdapter):
    """Builds layers and models on this worker's Keras 2 backend; one compiled function per pass."""

    family = "keras2"
    model_kind = "a Keras 2 model (keras.models.Model)"
    build_layer = staticmethod(layers.build)  # (case, weights) -> (layer, placeholders, output)
    build_spec = staticmethod(models.build)  # (spec, seed) -> (compiled model, optimizer)

    def __init__(self, device="auto", jit="auto"):
        self.impl = backend.load()
        self.gpu = self.impl.on_gpu
        self.use_gpu = self.gpu and device != "cpu"
        self.jit = jit

    def info(self) -> dict:
        versions = {"keras": keras.__version__, "numpy": np.__version__}
        versions.update(self.impl.versions())
        info = {"backend": backend.BACKEND, "versions": versions,
                "device": "gpu" if self.use_gpu else "cpu",
                "device_name": self.impl.device_name() if self.use_gpu else cpu_name(),
                "gpu_visible": self.gpu,
                # Keras 2 always runs a compiled static graph; there is no eager/jit switch.
                "jit": "graph"}
        info.update(self.impl.extra_info())
        return info

    # ---- layer passes -------------------------------------------------------------------

    def prepare(self, case, pass_name, weights, inputs, dy) -> Prepared:
        backend.fresh_graph()
        op = ops.get(case.op)
        if op.reference_kind == ops.FLOAT64_TWIN:
            layer, xs, y = layers.built_alone(case, case.dtype, weights)
            return self._compiled(layer, xs, y, pass_name, inputs, dy,
                                  training=pass_name != "forward",
                                  grad_inputs=not op.int_inputs)
        flip = self.impl.flips_kernels and case.op == "conv2d"
        layer, xs, y = self.build_layer(case, layers.flip_kernel(weights) if flip else weights)
        # The gradient of a flipped kernel is flipped back to the reference layout.
        back = ((len(xs), lambda g: self.kernel_to_reference(case, g))
                if flip and pass_name == "backward" else None)
        return self._compiled(layer, xs, y, pass_name, inputs, dy,
                              training=pass_name != "forward", kernel_back=back)

    def layer_io(self, case) -> tuple:
        """(weight shapes in Keras order, output shape) of a KerasLayer case's layer."""
        backend.fresh_graph()
        layer, _, y = layers.built_alone(case)
        return [tuple(w.shape) for w in layer.get_weights()], tuple(K.int_shape(y))

    def float64_twin(self, case, weights, inputs, training, dy=None) -> tuple:
        """(y, grads or None) of the case's layer built in float64 with the same weights and
        inputs (kmicro/core/ops/keras_layer.py)."""
        backend.fresh_graph()
        floatx = K.floatx()
        K.set_floatx("float64")  # the zeros Keras makes itself (an RNN's initial state) too
        try:
            layer, xs, y = layers.built_alone(case, "float64", weights)
            kind = "int32" if ops.get(case.op).int_inputs else "float64"
            feed = [np.asarray(x).astype(kind) for x in inputs]
            dy64 = None if dy is None else np.asarray(dy, np.float64)
            prepared = self._compiled(layer, xs, y, "forward" if dy is None else "backward",
                                      feed, dy64, training, grad_inputs=kind == "float64")
        finally:
            K.set_floatx(floatx)
        out, grads = prepared.outputs(prepared.step())
        return np.asarray(out, np.float64), None if grads is None else [
            np.asarray(g, np.float64) for g in grads]

    @staticmethod
    def kernel_to_reference(case, gradient):
        """A flipped kernel's gradient, flipped back to the reference layout."""
        return layers.flip_kernel_gradient(gradient)

    def layer_pass(self, model, described, pass_name, inputs, dy) -> Prepared:
        """One model layer, rebuilt alone; learning phase 1 (the training step's branch:
        BN batch statistics, dropout on)."""
        original = models.layers(model)[described["index"]]
        layer, xs, y = layers.rebuild(original, described, inputs)
        return self._compiled(layer, xs, y, pass_name, inputs, dy, training=True)

    def _compiled(self, layer, xs, y, pass_name, inputs, dy, training, kernel_back=None,
                  grad_inputs=True):
        """`kernel_back`: (index among the gradients, function) that brings the kernel's
        gradient back to the reference layout; `grad_inputs` False: the weights' gradients
        only (integer inputs)."""
        outputs = [y]
        if pass_name == "backward":
            # dy lives in a variable: no per-call host copy, no constant folding into the graph.
            wrt = (xs if grad_inputs else []) + layer.trainable_weights
            outputs += K.gradients(K.sum(y * K.variable(dy, dtype=str(dy.dtype))), wrt)
        fn_inputs, feed = list(xs), list(inputs)
        if _uses_learning_phase(y):
            fn_inputs.append(K.learning_phase())
            feed.append(1 if training else 0)
        fn = _LazyFunction(fn_inputs, outputs)

        def split(out):
            """(y, grads or None) as NumPy arrays."""
            arrays = [np.asarray(a) for a in out]
            grads = arrays[1:] if pass_name == "backward" else None
            if kernel_back is not None:
                index, to_reference = kernel_back
                grads[index] = to_reference(grads[index])
            return arrays[0], grads

        peak = getattr(self.impl, "peak_memory", None)  # Theano's profiler; TF1 has none
        return Prepared(step=lambda: fn(feed), sync=_synchronous, outputs=split,
                        device_of=lambda out: self.impl.device_of(fn.fn, feed),
                        peak_memory=peak and (lambda: peak(
                            lambda: K.function(fn_inputs, outputs), feed)))

    # ---- models -------------------------------------------------------------------------

    def build_model(self, spec, seed=0) -> Trainer:
        return self._trainer(*self.build_spec(spec, seed))

    def compile_user(self, model) -> Trainer:
        return self._trainer(*models.compile_user(model))

    def _trainer(self, model, optimizer) -> Trainer:
        step_memory = getattr(self.impl, "train_step_memory", None)  # Theano's; TF1 has none
        return Trainer(train=model.train_on_batch, test=model.test_on_batch,
                       device=lambda x: self._device(model, x), optimizer=optimizer,
                       params=int(model.count_params()),  # Keras 1: a NumPy int
                       peak_memory=step_memory and (lambda x, y: step_memory(model, x, y)))

    def _device(self, model, x) -> str:
        if not self.use_gpu:
            return "cpu"
        # The backend reads the device back from a traced run of a K.function-like object.
        fn = SimpleNamespace(inputs=model.inputs, outputs=model.outputs)
        return self.impl.device_of(fn, [x])

    # ---- attribution --------------------------------------------------------------------

    def seed(self, seed):
        np.random.seed(seed)  # Keras 2 initialisers draw from NumPy on Theano

    def is_model(self, obj) -> bool:
        return isinstance(obj, keras.models.Model)

    without = staticmethod(models.without)  # (model, layer_type) -> the model without them
    layers = staticmethod(models.layers)  # (model) -> its layers but the inputs
    describe = staticmethod(models.describe)  # (model) -> per layer: name, type, shapes...
    io = staticmethod(models.io)  # (model) -> (input shapes and dtypes, output shapes)

    def profile_steps(self, model, train, steps, phase="train") -> dict:
        """The train (test) function under Theano's ProfileStats (in_situ_theano); TF1: none."""
        if backend.BACKEND != "theano":
            return FamilyAdapter.profile_steps(self, model, train, steps, phase)
        from kmicro.backends.keras2 import in_situ_theano

        return in_situ_theano.profile_steps(model, models.layers(model), train, steps, phase)

    # ---- graph inspection ---------------------------------------------------------------

    def inspect(self, part, samples=320, repeats=5) -> list:
        """Facts read from this stack's compiled graphs (`kmicro diagnose`)."""
        from kmicro.backends.keras2 import graph  # only diagnose needs it

        return graph.inspect(self, part, samples, repeats)


class _LazyFunction(object):
    """K.function compiled on the first call, so the worker's first-call time is the compile time
    (Theano compiles inside K.function, TF1 on its first session run)."""

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs, self.fn = inputs, outputs, None

    def __call__(self, feed):
        if self.fn is None:
            self.fn = K.function(self.inputs, self.outputs)
        return self.fn(feed)


def _uses_learning_phase(tensor) -> bool:
    # Keras 2 marks tensors that depend on K.learning_phase() (Dropout, BN); feeding the
    # phase to a graph that ignores it is harmless on TF1 but would be dead input on Theano.
    return bool(getattr(tensor, "_uses_learning_phase", False))


def _synchronous(out):
    return out  # session runs return host arrays: the step has finished
