"""Keras 3 on JAX: stateless_call under jax.jit (unless --jit off), jax.grad, block_until_ready."""
from __future__ import annotations

import functools

import jax

from kmicro.backends.keras3.backend import Backend, call_arg, call_args, first, training_kwarg

__all__ = ["Jax"]


class Jax(Backend):
    module = jax

    def __init__(self, jit):
        super().__init__(jit)
        self.wrap = jax.jit if jit in ("auto", "on") else (lambda f: f)

    def has_gpu(self):
        return jax.devices()[0].platform == "gpu"

    def gpu_name(self):
        return jax.devices()[0].device_kind

    def profile_steps(self, model, layers, train, steps, phase) -> dict:
        from kmicro.backends.keras3 import in_situ_jax

        return in_situ_jax.profile_steps(model, layers, train, steps, phase)

    def float64_mode(self):
        return jax.enable_x64(True)

    def forward(self, layer, xs, training, positional=False):
        tv = [v.value for v in layer.trainable_variables]
        ntv = [v.value for v in layer.non_trainable_variables]
        kw = training_kwarg(layer, training)

        def call(tv, ntv, x):
            args = x if positional else (x,)
            return layer.stateless_call(tv, ntv, *args, **kw)[0]

        return functools.partial(self.wrap(call), tv, ntv,
                                 tuple(xs) if positional else call_arg(xs))

    def fwd_bwd(self, layer, xs, dy, positional=False, grad_inputs=True):
        tv = [v.value for v in layer.trainable_variables]
        ntv = [v.value for v in layer.non_trainable_variables]
        kw = training_kwarg(layer, True)

        def loss(a, tv, ntv, dy):
            y = layer.stateless_call(tv, ntv, *call_args(a, positional), **kw)[0]
            return jax.numpy.sum(y * dy), y

        grad = jax.grad(loss, argnums=(0, 1) if grad_inputs else (1,), has_aux=True)

        # Weights and dy are arguments, as in a training step: closed over, jit would bake
        # them in as constants and XLA fold what depends on them alone (Dense's dx = dy @ W.T
        # computed at compile time made its backward read 2x too fast).
        def step(a, tv, ntv, dy):
            grads, y = grad(a, tv, ntv, dy)
            ga, gw = grads if grad_inputs else ((), grads[0])
            return y, [*ga, *gw]

        return functools.partial(self.wrap(step), tuple(xs), tv, ntv, dy)

    def synchroniser(self):
        return jax.block_until_ready

    def peak_memory(self, step, sync):
        if self.wrap is not jax.jit:
            return None, "not measured: with --jit off there is no compiled pass to analyse"
        return _analysed(step.func.lower(*step.args, **step.keywords), "the compiled pass")

    def train_step_memory(self, model, x, y):
        """(bytes, method) of one training step: the model's `train_step` jitted as Keras
        jits it (the state donated) and lowered on this batch, then XLA's memory analysis.
        Keras' own jitted step is out of reach inside its trainer; this one compiles the
        same function again, untimed."""
        if self.wrap is not jax.jit:
            return None, "not measured: with --jit off there is no compiled step to analyse"
        state = model._get_jax_state(trainable_variables=True, non_trainable_variables=True,
                                     optimizer_variables=True, metrics_variables=True,
                                     purge_model_variables=False)
        lowered = jax.jit(model.train_step, donate_argnums=0).lower(state, (x, y, None))
        return _analysed(lowered, "the model's train step, jitted as Keras jits it")

    def device_of(self, out):
        return "gpu" if next(iter(first(out).devices())).platform == "gpu" else "cpu"


def _analysed(lowered, what) -> tuple:
    """(bytes, method) from XLA's memory analysis of `lowered`: temporaries and outputs,
    less the outputs that reuse donated inputs."""
    analysis = lowered.compile().memory_analysis()
    if analysis is None:
        return None, "not measured: this XLA backend has no memory analysis"
    held = (analysis.temp_size_in_bytes + analysis.output_size_in_bytes
            - analysis.alias_size_in_bytes)
    return int(held), ("XLA's memory analysis of {}: temporaries and outputs as buffer "
                       "assignment lays them out (scratch a library kernel allocates for "
                       "itself is not in it)".format(what))
