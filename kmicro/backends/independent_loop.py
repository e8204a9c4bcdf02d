"""A layer timed by plain Keras and the framework's own timer, written apart from kmicro.

`kmicro calibrate --independent` runs this file as a script (`python independent_loop.py`,
so no kmicro module is imported; pyproject.toml's import contract keeps it that way) and
alternates it with kmicro's own measurement of the same case. If kmicro's harness, its
adapters or its worker distort a time, the two disagree.

Protocol, one JSON object per line:
  -> {"ready": true, "versions": {...}}
  <- {"layer": "Dense", "kwargs": {...}, "input_shape": [...], "n_inputs": 1,
      "pass": "forward" | "forward_train" | "backward", "min_run_time": 0.4}
  -> {"median_s": s, "blocks": n, "number": calls per block, "timer": "..."}
     or {"error": "...", "unsupported": bool}
A paired measurement (kmicro's samples and this loop's blocks in turns) instead sends
  <- the same request with "prepare": true
  -> {"number": calls per block, "timer": "..."} or the error; then, any number of times,
  <- {"block": true}
  -> {"s_per_call": mean seconds per call of one block of `number` calls}

Every array the step reads (inputs, weights, dy) is an argument of the compiled function, as in
a real training step. Each call is synchronised: JAX `block_until_ready`; TensorFlow and torch
return when done on the CPU (TensorFlow's synchronous execution is checked), and wait with
`sync_devices()` / torch's Timer on a GPU.
"""
import gc
import inspect
import json
import os
import statistics
import sys
import time

import numpy as np

import keras  # KERAS_BACKEND is set by the caller

BLOCK_S = 0.01  # a block of calls lasts at least this long (torch's blocked_autorange too)
WARMUP_S = 0.2  # calls before timing: a fresh pass runs slower for its first ~100 ms
REWARM_S = 0.001  # untimed calls before each paired block, as kmicro's side makes


def main():
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # framework chatter must not corrupt the protocol
    backend = keras.backend.backend()
    builder = {"jax": jax_step, "tensorflow": tensorflow_step, "torch": torch_step,
               "numpy": numpy_step}[backend]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    out.write(json.dumps({"ready": True, "versions": versions(backend), "cpus": cpus}) + "\n")
    paired = None
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request.get("block"):
                # Untimed calls first, as kmicro's side makes before each sample: the other
                # process just had the machine, and caches and thread pools are cold.
                rewarm(paired.call, REWARM_S)
                answer = {"s_per_call": paired.run(paired.number) / paired.number}
            else:
                # Built anew for every request, as kmicro builds its side anew every round:
                # both sides then sample where their buffers land (memory-bound layers feel it).
                step = builder(*layer_and_data(request), request["pass"])
                warm_up(step.call)
                if request.get("prepare"):
                    paired = step
                    step.number = step.calls_per_block()
                    answer = {"number": step.number, "timer": step.timer}
                else:
                    answer = step.autorange(request.get("min_run_time", 0.4))
        except NotImplementedError as exc:
            answer = {"error": str(exc), "unsupported": True}
        except Exception as exc:  # noqa: BLE001 - reported to the caller, which records it
            answer = {"error": "{}: {}".format(type(exc).__name__, str(exc).splitlines()[0]
                                               if str(exc) else "")}
        out.write(json.dumps(answer) + "\n")
    return 0


class Step:
    """A compiled, synchronised pass and its framework's timer: `run(number)` is the seconds
    `number` calls take; `autorange(seconds)` a whole measurement (blocks of >= BLOCK_S
    until `seconds`, median of the blocks' mean per call)."""

    def __init__(self, call, run, timer, autorange=None):
        self.call, self.run, self.timer = call, run, timer
        self.number = None
        if autorange is not None:
            self.autorange = autorange

    def calls_per_block(self):
        """Doubled until a block lasts BLOCK_S."""
        number = 1
        while self.run(number) < BLOCK_S:
            number *= 2
        return number

    def autorange(self, min_run_time):
        """torch.utils.benchmark's blocked_autorange, for frameworks that have none."""
        for _ in range(2):
            self.call()
        number = self.calls_per_block()
        means, total = [], 0.0
        while total < min_run_time or len(means) < 3:
            t = self.run(number)
            means.append(t / number)
            total += t
        return {"median_s": statistics.median(means), "blocks": len(means), "number": number,
                "timer": self.timer}


def synced(call, sync, timer):
    """The Step of `call`, each call waited for with `sync(call())`; the garbage collector is
    off while a block runs, as in timeit and torch's Timer, the standard timers."""
    def run(number):
        enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(number):
                sync(call())
            return time.perf_counter() - t0
        finally:
            if enabled:
                gc.enable()
    return Step(lambda: sync(call()), run, timer)


def versions(backend):
    module = {"jax": "jax", "tensorflow": "tensorflow", "torch": "torch", "numpy": "numpy"}
    return {"keras": keras.__version__,
            backend: __import__(module[backend]).__version__, "numpy": np.__version__}


def layer_and_data(request):
    """The layer built at the request's shape with Keras' own initialisers, its float32
    inputs, dy, and the layer's `call` keyword for the pass."""
    layer = getattr(keras.layers, request["layer"])(**request["kwargs"])
    shape = tuple(request["input_shape"])
    n = request["n_inputs"]
    layer.build([shape] * n if n > 1 else shape)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(shape, dtype=np.float32) for _ in range(n)]
    y = layer(xs if n > 1 else xs[0])
    dy = rng.standard_normal(tuple(y.shape), dtype=np.float32)
    takes_training = "training" in inspect.signature(layer.call).parameters
    training = request["pass"] != "forward"
    kw = {"training": training} if takes_training else {}
    return layer, xs, dy, kw


def arg(xs):
    return list(xs) if len(xs) > 1 else xs[0]


def rewarm(call, seconds):
    """Untimed calls for `seconds`, at least one."""
    started = time.perf_counter()
    call()
    while time.perf_counter() - started < seconds:
        call()


def warm_up(call):
    """Runs the (synchronised) step for WARMUP_S: both this loop and kmicro time the steady
    state, not a fresh pass's slow start."""
    started = time.perf_counter()
    while time.perf_counter() - started < WARMUP_S:
        call()


def jax_step(layer, xs, dy, kw, pass_name):
    import jax

    tv = [v.value for v in layer.trainable_variables]
    ntv = [v.value for v in layer.non_trainable_variables]
    xs = [jax.numpy.asarray(x) for x in xs]
    dy = jax.numpy.asarray(dy)
    if pass_name == "backward":
        def loss(xs, tv, ntv, dy):
            y = layer.stateless_call(tv, ntv, arg(xs), **kw)[0]
            return jax.numpy.sum(y * dy), y

        grad = jax.jit(jax.grad(loss, argnums=(0, 1), has_aux=True))
        call = lambda: grad(xs, tv, ntv, dy)  # noqa: E731
    else:
        forward = jax.jit(lambda tv, ntv, xs: layer.stateless_call(tv, ntv, arg(xs), **kw)[0])
        call = lambda: forward(tv, ntv, xs)  # noqa: E731
    return synced(call, jax.block_until_ready,
                  "blocked loop, jax.jit, block_until_ready per call")


def tensorflow_step(layer, xs, dy, kw, pass_name):
    import tensorflow as tf

    x = arg([tf.constant(x) for x in xs])  # one tensor, or a list for Add
    dy = tf.constant(dy)
    if pass_name == "backward":
        @tf.function
        def step(x, dy):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, **kw)
                loss = tf.reduce_sum(y * dy)
            return y, tape.gradient(loss, [x, *layer.trainable_variables])

        call = lambda: step(x, dy)  # noqa: E731
    else:
        forward = tf.function(lambda x: layer(x, **kw))
        call = lambda: forward(x)  # noqa: E731
    if tf.config.list_physical_devices("GPU"):
        sync, how = lambda out: tf.test.experimental.sync_devices(), "sync_devices() per call"
    else:
        # CPU eager execution is synchronous (TF's default): a call returns when its kernels
        # are done. `.numpy()` would add a copy of every output to the layer's time.
        if not tf.config.experimental.get_synchronous_execution():
            raise RuntimeError("TensorFlow runs asynchronously; this loop assumes it does not")
        sync, how = lambda out: out, "returns when done (synchronous execution)"
    return synced(call, sync, "blocked loop, tf.function, " + how)


def torch_step(layer, xs, dy, kw, pass_name):
    import torch
    from torch.utils import benchmark

    xs = [torch.from_numpy(x) for x in xs]
    dy = torch.from_numpy(dy)
    if pass_name == "backward":
        xs = [x.requires_grad_(True) for x in xs]
        weights = [v.value for v in layer.trainable_variables]

        def call():
            y = layer(arg(xs), **kw)
            return torch.autograd.grad((y * dy).sum(), [*xs, *weights])
    else:
        def call():
            with torch.no_grad():
                return layer(arg(xs), **kw)

    # num_threads: Timer's default is one thread; kmicro and Keras use torch's own count.
    timer = benchmark.Timer(stmt="call()", globals={"call": call},
                            num_threads=torch.get_num_threads())

    def autorange(seconds):
        m = timer.blocked_autorange(min_run_time=seconds)
        return {"median_s": m.median, "blocks": len(m.times), "number": m.number_per_run,
                "timer": "torch.utils.benchmark.Timer.blocked_autorange"}
    # One block is what blocked_autorange times per block (Timer._timeit); the public
    # timeit(number) would add number/100 untimed calls before it, which kmicro's samples,
    # paired with these blocks, do not get.
    return Step(call, timer._timeit, "torch.utils.benchmark.Timer, blocked_autorange's blocks",
                autorange)


def numpy_step(layer, xs, dy, kw, pass_name):
    if pass_name == "backward":
        raise NotImplementedError("the numpy backend has no gradients")
    def call():
        return layer(arg(xs), **kw)
    return synced(call, lambda out: out, "blocked loop")


if __name__ == "__main__":
    sys.exit(main())
