"""Backend adapters: the only modules that import a deep-learning framework.

One adapter per Keras family (a package each: keras3, keras2), with that family's backends
inside it. Adapters are imported inside a worker process, never by the CLI or the runner;
importing this package imports no framework.
"""
import importlib

__all__ = ["FAMILIES", "load"]

FAMILIES = ("keras3", "keras2", "keras1")


def load(family, device="auto", jit="auto"):
    """The family's adapter for this worker's backend (KERAS_BACKEND must already be set)."""
    if family not in FAMILIES:
        raise ValueError("unknown Keras family {!r}; valid: {}".format(family, ", ".join(FAMILIES)))
    return importlib.import_module("{}.{}".format(__name__, family)).Adapter(device=device, jit=jit)
