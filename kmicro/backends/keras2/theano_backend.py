"""Keras 2 on Theano (2.2.4 / 2.3.1): the device comes from THEANO_FLAGS, kernels are flipped."""
from __future__ import absolute_import

import theano

from kmicro.backends.base import cpu_name

__all__ = ["Theano"]


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
