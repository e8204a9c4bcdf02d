"""What the asv suites share: the stack this asv environment runs, and per-process caches.

asv re-runs `setup` before every sample (asv-runner >= 0.3), so anything slow (building a
layer, compiling it, checking it) happens once per process through `cached`. The adapter (and
so Keras and its backend) is imported lazily, in the benchmark's own process: a forkserver that
preloaded it would fork a process already running the framework's threads (docs/asv.md).
"""
import os

from kmicro import backends
from kmicro.core.stacks import STACKS

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")  # set by asv.conf.json's env_nobuild
FAMILY = "keras2" if BACKEND == "theano" else "keras3"  # Keras 2 only in the theano env
if BACKEND == "theano":
    # The theano stack's flags (CPU, OpenBLAS), kept out of asv.conf.json so the environment's
    # name stays short; Theano's own compile cache, not the checkout's.
    for _key, _value in STACKS["theano"].env:
        os.environ.setdefault(_key, _value.split(",compiledir=")[0])
_CACHE = {}


def adapter():
    """This environment's adapter (kmicro.backends imports the framework), once per process."""
    return cached("adapter", lambda: backends.load(FAMILY))


def cached(key, build):
    """build() once per process and key; an exception is cached too, so a case that cannot run
    fails (or is skipped) at once in every later setup instead of rebuilding."""
    if key not in _CACHE:
        try:
            _CACHE[key] = (build(), None)
        except Exception as exc:  # noqa: BLE001 - re-raised below, every time
            _CACHE[key] = (None, exc)
    value, exc = _CACHE[key]
    if exc is not None:
        raise exc
    return value


def skip(reason):
    """asv reports a benchmark that raises NotImplementedError in setup as skipped, not failed."""
    return NotImplementedError(reason)
