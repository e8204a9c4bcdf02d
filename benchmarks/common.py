"""What the asv suites share: the stack this asv environment runs, and per-process caches.

asv re-runs `setup` before every sample (asv-runner >= 0.3), so anything slow (building a
layer, compiling it, checking it) happens once per process through `cached`. The adapter (and
so Keras and its backend) is imported lazily, in the benchmark's own process: a forkserver that
preloaded it would fork a process already running the framework's threads (docs/guide-asv.md).
"""
import os
import sys

from kmicro import backends
from kmicro.core.stacks import STACKS

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")  # set by asv.conf.json's env_nobuild


def _stack():
    """The built-in stack this environment is: its backend at this Python (theano 3.9, Keras 2;
    keras1-theano 3.6, Keras 1: an existing environment, docs/guide-asv.md); else Keras 3."""
    python = "{}.{}".format(*sys.version_info[:2])
    same = [s for s in STACKS.values() if s.backend == BACKEND and s.python == python]
    return same[0] if same else STACKS["theano" if BACKEND == "theano" else "tensorflow"]


STACK = _stack()
FAMILY = STACK.family
# The stack's flags (Theano: CPU, OpenBLAS), kept out of asv.conf.json so the environment's
# name stays short; Theano's own compile cache, not the checkout's.
for _key, _value in STACK.env:
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


def named_cases() -> list:
    """The cases whose ids KMICRO_ASV_CASES names (';' between ids: ids hold commas)."""
    from kmicro.core import cases

    ids = (os.environ.get("KMICRO_ASV_CASES") or "").split(";")
    return [cases.parse_id(i) for i in ids if i.strip()]


def skip(reason):
    """asv reports a benchmark that raises NotImplementedError in setup as skipped, not failed."""
    return NotImplementedError(reason)
