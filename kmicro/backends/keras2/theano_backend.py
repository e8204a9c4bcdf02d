"""Keras 2 on Theano (2.2.4 / 2.3.1): the device comes from THEANO_FLAGS, kernels are flipped."""
from __future__ import absolute_import

import io
import re

import numpy as np
import theano

from kmicro.backends.base import cpu_name

__all__ = ["Theano"]

MEMORY_METHOD = ("Theano's memory profile of one call (ProfileStats.summary_memory of a "
                 "profiled twin of the pass, run once in Theano's Stack VM): the most bytes of "
                 "node outputs alive at once in its execution order; Theano prints KB, so the "
                 "figure is whole KiB, rounded down")
_PEAK = re.compile(r"Max peak memory with current setting\s+CPU: \d+KB.*?\s+GPU: \d+KB.*?"
                   r"\s+CPU \+ GPU: (\d+)KB")


class Theano(object):
    name = "theano"
    flips_kernels = True  # a true convolution: see layers.flip_kernel

    def __init__(self):
        # Only the libgpuarray backend (device=cuda*) or the old one (gpu*) computes on a GPU.
        self.on_gpu = str(theano.config.device).startswith(("cuda", "gpu"))

    def versions(self):
        return {"theano": theano.__version__}

    def extra_info(self):
        c = theano.config
        flags = "device={},floatX={},blas.ldflags={},compiledir={}".format(
            c.device, c.floatX, c.blas.ldflags, c.compiledir)
        return {"theano_flags": flags}

    def device_name(self):
        return str(theano.config.device) if self.on_gpu else cpu_name()

    def device_of(self, fn, feed):
        return "gpu" if self.on_gpu else "cpu"

    def peak_memory(self, make_function, feed):
        """(bytes, method) of one call of the pass `make_function()` compiles: the twin is
        compiled with config.profile and profile_memory on (without config.profile Theano
        records no shapes and summary_memory raises), so the timed function is never
        profiled. The figure is per call: the same after one call and after five."""
        return self._profiled_peak(make_function, lambda twin: twin(feed))

    def train_step_memory(self, model, x, y):
        """(bytes, method) of one more train step: the model's train function compiled again
        as a profiled twin (Keras builds it the same way, the optimizer's updates included),
        run once by `train_on_batch`; the timed train function is put back afterwards."""
        timed = model.train_function

        def make_function():
            model.train_function = None
            model._make_train_function()
            return model.train_function

        try:
            return self._profiled_peak(make_function,
                                       lambda twin: model.train_on_batch(x, y))
        finally:
            model.train_function = timed

    @staticmethod
    def _profiled_peak(make_function, call_once):
        saved = theano.config.profile, theano.config.profile_memory
        theano.config.profile = theano.config.profile_memory = True
        try:
            twin = make_function()
            returned = sum(np.asarray(a).nbytes for a in _listed(call_once(twin)))
        finally:
            theano.config.profile, theano.config.profile_memory = saved
        text = io.StringIO()
        try:
            twin.function.profile.summary_memory(text, N=1)
        except (AssertionError, ValueError):
            # Theano's bookkeeping of views fails on some graphs (Dropout in training): an
            # assertion for one pass, list.remove of a missing view for a model's train step.
            return None, ("not measured: Theano's memory profile fails on this graph (its "
                          "bookkeeping of views in ProfileStats.count_running_memory)")
        match = _PEAK.search(text.getvalue())
        if match is None:
            raise RuntimeError("no peak in Theano's memory profile")
        held = int(match.group(1)) * 1024
        # A call holds at least what it returns. Less means the profile missed nodes: seen
        # for BatchNormalization's inference forward, behind Keras' learning-phase switch
        # (0 B; the same layer compiled without the switch: its 2 MiB output).
        if held + 1024 <= returned:
            return None, ("not measured: Theano's memory profile counted {} B, less than the {} "
                          "B the call returns (it missed nodes)".format(held, returned))
        return held, MEMORY_METHOD


def _listed(out):
    return out if isinstance(out, (list, tuple)) else [out]
