"""What every adapter hands the worker, and what the families' adapters share (framework-free)."""
import platform
from dataclasses import dataclass
from typing import Callable

__all__ = ["UnsupportedPass", "DeviceUnavailable", "Prepared", "FamilyAdapter", "cpu_name"]


class UnsupportedPass(Exception):
    """This stack cannot run this pass (e.g. backward on the numpy backend)."""


class DeviceUnavailable(Exception):
    """A GPU was asked for and this stack sees none."""


@dataclass
class Prepared:
    """A compiled, ready-to-time pass of one case."""

    step: Callable  # runs the pass once, returns the backend's outputs
    sync: Callable  # blocks until the outputs are computed, returns them
    outputs: Callable  # backend outputs -> (y, grads or None) as NumPy arrays
    device_of: Callable  # backend outputs -> "cpu" | "gpu": where they actually live
    # () -> (peak bytes or None, how they were counted, or why not): called once, untimed
    peak_memory: Callable = None


class FamilyAdapter(object):
    """Base of a Keras family's adapter (kmicro.backends.<family>.Adapter(device, jit)).

    What a worker uses: `family`, `gpu`, `jit`, `model_kind`, `info()`;
    layer passes: `prepare(case, pass_name, weights, inputs, dy) -> Prepared`;
    models: `build_model(spec, seed) -> Trainer`; attribution: `seed`, `is_model`, `builtin`,
    `compile_user`, `without`, `layers`, `describe`, `io`, `layer_pass(model, described,
    pass_name, inputs, dy) -> Prepared`, `profile_steps(model, train, steps, phase)`;
    graph inspection: `inspect(part, samples, repeats)`.
    Only what is the same in every family lives here.
    """

    # How many profiler sessions `kmicro attribute --in-situ` may alternate with plain steps:
    # one where a session costs a compilation (Theano profiles a function compiled for it).
    profile_sessions = 1

    def profile_steps(self, model, train, steps, phase="train") -> dict:
        """In-situ attribution (keras3 adapter has the contract); families without it say so."""
        raise UnsupportedPass("in-situ attribution: not implemented for {} stacks yet".format(
            self.family))

    def builtin(self, spec, seed):
        """(model, Trainer) of a zoo model, compiled with the zoo's optimizer and loss."""
        trainer = self.build_model(spec, seed)
        return trainer.train.__self__, trainer  # the bound train_on_batch knows its model


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"
