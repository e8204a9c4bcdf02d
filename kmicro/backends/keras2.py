"""Keras 2 adapter: the theano and tf1 stacks (Keras 2.2.4 / 2.3.1, Python 3.7 / 3.9).

Imported only inside a worker process whose KERAS_BACKEND is already set. Keras 2
builds a static graph and compiles one backend function per pass, the way
`Model.fit`/`predict` do: the learning phase is a graph input fed 0 or 1, so the
timed graphs contain the same `in_train_phase` switches a Keras 2 model has.
Theano and TF1 session runs return host NumPy arrays, so a step is already synchronous.
"""
from __future__ import absolute_import

import os

import numpy as np

from kmicro.backends.base import Prepared, cpu_name


BACKEND = os.environ.get("KERAS_BACKEND", "theano")
import keras  # noqa: E402  (backend must be chosen first)
from keras import backend as K  # noqa: E402

# Keras 3 kwarg names that Keras 2 spells differently (none so far for the catalog's
# nine layers: Conv2D, BatchNormalization, pooling, Dense, Activation, Add, Dropout,
# Flatten take the same names). Kept so a new case has one obvious place to map.
_RENAMED = {}


def _keras2_kwargs(case) -> dict:
    return {_RENAMED.get(k, k): v for k, v in case.layer_kwargs().items()}


class _Theano(object):
    name = "theano"

    def __init__(self):
        import theano

        self.theano = theano
        # Only the libgpuarray backend (device=cuda*) or the old one (gpu*) computes on a GPU.
        self.on_gpu = str(theano.config.device).startswith(("cuda", "gpu"))

    flips_kernels = True

    def versions(self):
        return {"theano": self.theano.__version__}

    def extra_info(self):
        c = self.theano.config
        flags = "device={},floatX={},blas.ldflags={},compiledir={}".format(
            c.device, c.floatX, c.blas.ldflags, c.compiledir)
        return {"theano_flags": flags}

    def device_name(self):
        return str(self.theano.config.device) if self.on_gpu else cpu_name()

    def device_of(self, fn, feed):
        return "gpu" if self.on_gpu else "cpu"


class _TF1(object):
    name = "tensorflow"

    def __init__(self):
        import tensorflow as tf
        from tensorflow.python.client import device_lib

        self.tf = tf
        gpus = [d for d in device_lib.list_local_devices() if d.device_type == "GPU"]
        self.on_gpu = bool(gpus)
        self.gpu_desc = gpus[0].physical_device_desc if gpus else ""

    flips_kernels = False

    def versions(self):
        return {"tensorflow": self.tf.__version__}

    def extra_info(self):
        return {}

    def device_name(self):
        return self.gpu_desc if self.on_gpu else cpu_name()

    def device_of(self, fn, feed):
        """Where the kernels actually ran: one traced run, read back from its step stats."""
        if not self.on_gpu:
            return "cpu"
        tf = self.tf
        meta = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        K.get_session().run(fn.outputs, feed_dict=dict(zip(fn.inputs, feed)),
                            options=opts, run_metadata=meta)
        devices = [d.device for d in meta.step_stats.dev_stats]
        return "gpu" if any("gpu" in d.lower() for d in devices) else "cpu"


class Adapter(object):
    """Builds a case's layer on placeholders with the shared weights; one compiled function per pass."""

    family = "keras2"

    def __init__(self, device="auto", jit="auto"):
        self.impl = _Theano() if BACKEND == "theano" else _TF1()
        self.gpu = self.impl.on_gpu
        self.use_gpu = self.gpu and device != "cpu"
        self.jit = jit

    def info(self) -> dict:
        versions = {"keras": keras.__version__, "numpy": np.__version__}
        versions.update(self.impl.versions())
        info = {"backend": BACKEND, "versions": versions,
                "device": "gpu" if self.use_gpu else "cpu",
                "device_name": self.impl.device_name() if self.use_gpu else cpu_name(),
                "gpu_visible": self.gpu,
                # Keras 2 always runs a compiled static graph; there is no eager/jit switch.
                "jit": "graph"}
        info.update(self.impl.extra_info())
        return info

    def prepare(self, case, pass_name, weights, inputs, dy) -> Prepared:
        # TF1 keeps every graph in one default graph: start each pass on a fresh one.
        # (Keras' Theano backend has no session and no clear_session.)
        if hasattr(K, "clear_session"):
            K.clear_session()
        flip = self.impl.flips_kernels and case.op == "conv2d"
        layer, xs, y = build(case, _flip_kernel(weights) if flip else weights)
        training = pass_name != "forward"
        outputs = [y]
        if pass_name == "backward":
            # dy lives in a variable: no per-call host copy, no constant folding into the graph.
            loss = K.sum(y * K.variable(dy))
            outputs += K.gradients(loss, xs + layer.trainable_weights)
        fn_inputs, feed = list(xs), list(inputs)
        if _uses_learning_phase(y):
            fn_inputs.append(K.learning_phase())
            feed.append(1 if training else 0)
        fn = _LazyFunction(fn_inputs, outputs)
        n_x = len(xs)

        def split(out):
            arrays = [np.asarray(a) for a in out]
            if pass_name != "backward":
                return arrays[0], None
            grads = arrays[1:]
            if flip:  # gradient of the flipped kernel, flipped back to the reference layout
                grads[n_x] = grads[n_x][::-1, ::-1]
            return arrays[0], grads

        return Prepared(step=lambda: fn(feed), sync=_identity, outputs=split,
                        device_of=lambda out: self.impl.device_of(fn.fn, feed))


class _LazyFunction(object):
    """K.function compiled on the first call, so the worker's first-call time is the compile time
    (Theano compiles inside K.function, TF1 on its first session run)."""

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs, self.fn = inputs, outputs, None

    def __call__(self, feed):
        if self.fn is None:
            self.fn = K.function(self.inputs, self.outputs)
        return self.fn(feed)


def build(case, weights):
    """(layer, input placeholders, output tensor) with `weights` loaded; shapes checked."""
    layer = getattr(keras.layers, case.layer)(**_keras2_kwargs(case))
    xs = [K.placeholder(shape=tuple(case.input_shape), dtype=case.dtype)
          for _ in range(case.n_inputs)]
    y = layer(xs if case.n_inputs > 1 else xs[0])
    got = [tuple(w.shape) for w in layer.get_weights()]
    want = [tuple(w.shape) for w in weights]
    if got != want:
        raise RuntimeError("{} weights {} do not match the reference layout {}".format(
            case.layer, got, want))
    if weights:
        layer.set_weights(weights)
    return layer, xs, y


def _uses_learning_phase(tensor) -> bool:
    # Keras 2 marks tensors that depend on K.learning_phase() (Dropout, BN); feeding the
    # phase to a graph that ignores it is harmless on TF1 but would be dead input on Theano.
    return bool(getattr(tensor, "_uses_learning_phase", False))


def _identity(out):
    return out


def _flip_kernel(weights):
    # Keras 2's Theano backend computes a true convolution (theano's filter_flip=True), TF and
    # the reference a cross-correlation: the same function needs the kernel flipped in H and W,
    # as keras.utils.conv_utils.convert_kernel does when moving weights between backends.
    return [weights[0][::-1, ::-1].copy()] + list(weights[1:])
