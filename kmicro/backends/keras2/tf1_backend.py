"""Keras 2 on TensorFlow 1 (2.2.4, TF 1.15): a GPU if the session sees one, read back per run."""
from __future__ import absolute_import

import tensorflow as tf
from tensorflow.python.client import device_lib

from kmicro.backends.base import cpu_name
from kmicro.backends.keras2.backend import K

__all__ = ["TF1"]


class TF1(object):
    name = "tensorflow"
    flips_kernels = False

    def __init__(self):
        gpus = [d for d in device_lib.list_local_devices() if d.device_type == "GPU"]
        self.on_gpu = bool(gpus)
        self.gpu_desc = gpus[0].physical_device_desc if gpus else ""

    def versions(self):
        return {"tensorflow": tf.__version__}

    def extra_info(self):
        return {}

    def device_name(self):
        return self.gpu_desc if self.on_gpu else cpu_name()

    def device_of(self, fn, feed):
        """Where the kernels of `fn` (a K.function, or anything with inputs and outputs)
        actually ran: one traced run, read back from its step stats."""
        if not self.on_gpu:
            return "cpu"
        meta = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        K.get_session().run(fn.outputs, feed_dict=dict(zip(fn.inputs, feed)),
                            options=opts, run_metadata=meta)
        devices = [d.device for d in meta.step_stats.dev_stats]
        return "gpu" if any("gpu" in d.lower() for d in devices) else "cpu"
