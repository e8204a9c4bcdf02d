"""The worker side of the runner protocol, shared by every `python -m kmicro.*worker`.

  worker -> {"type": "ready", "info": {...}} | {"type": "fatal", "error": "..."}
  runner -> one JSON job per line
  worker -> {"type": "record", "record": {...}} per result, then {"type": "done"}
Framework chatter on stdout is redirected to stderr so it cannot corrupt the protocol.
Runs on every stack's Python (3.7 to 3.11).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys

from kmicro.backends.base import DeviceUnavailable


def serve(module_suffix, class_name, handle, argv=None) -> int:
    """Load `kmicro.backends.<family><module_suffix>.<class_name>`, then answer jobs:
    `handle(adapter, info, job)` yields the records of one job."""
    args = _parse(argv)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by frameworks goes to stderr
    try:
        adapter = _load(args, module_suffix, class_name)
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which records it
        _send(out, {"type": "fatal", "error": message(exc)})
        return 1
    info = dict(adapter.info(), stack=args.stack, python=platform.python_version(),
                requested_device=args.device)
    _send(out, {"type": "ready", "info": info})
    for line in sys.stdin:
        for record in handle(adapter, info, json.loads(line)):
            _send(out, {"type": "record", "record": record})
        _send(out, {"type": "done"})
    return 0


def _parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--stack", required=True)
    p.add_argument("--family", required=True)
    p.add_argument("--device", default="auto")
    p.add_argument("--jit", default="auto")
    return p.parse_args(argv)


def _load(args, module_suffix, class_name):
    module = importlib.import_module(f"kmicro.backends.{args.family}{module_suffix}")
    adapter = getattr(module, class_name)(device=args.device, jit=args.jit)
    if args.device == "gpu" and not adapter.gpu:
        # Report 000: Theano silently ran on the CPU. Refuse instead.
        raise DeviceUnavailable(
            f"--device gpu, but stack {args.stack} sees no GPU (it would run on the CPU)")
    return adapter


def message(exc) -> str:
    """One line for a record's `error`: the exception type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def _send(out, obj):
    out.write(json.dumps(obj) + "\n")
