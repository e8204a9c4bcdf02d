"""`python -m kmicro.model_worker --stack NAME`: one stack, model jobs in, one record each out.

Same protocol as kmicro/worker.py (ready line, one JSON job per line in, {"type": "record"}
lines then {"type": "done"} out; framework output goes to stderr). A job is a
kmicro.models.job.Settings payload. Runs on every stack's Python (3.7 to 3.11).
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import sys

from kmicro.backends.base import DeviceUnavailable, UnsupportedPass
from kmicro.models import data as data_mod
from kmicro.models import epoch, job as job_mod, zoo


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--stack", required=True)
    p.add_argument("--family", required=True)
    p.add_argument("--device", default="auto")
    p.add_argument("--jit", default="auto")
    args = p.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by frameworks (Keras 2's progress, Theano) goes to stderr
    try:
        adapter = _load_adapter(args)
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which records it
        _send(out, {"type": "fatal", "error": _message(exc)})
        return 1
    info = dict(adapter.info(), stack=args.stack, python=platform.python_version())
    _send(out, {"type": "ready", "info": info})
    for line in sys.stdin:
        record = run_job(adapter, info, job_mod.Settings.from_payload(json.loads(line)))
        _send(out, {"type": "record", "record": record})
        _send(out, {"type": "done"})
        gc.collect()
    return 0


def _load_adapter(args):
    module = importlib.import_module("kmicro.backends.{}_models".format(args.family))
    adapter = module.ModelAdapter(device=args.device, jit=args.jit)
    if args.device == "gpu" and not adapter.gpu:
        # Report 000: Theano silently trained on the CPU. Refuse instead.
        raise DeviceUnavailable("--device gpu, but stack {} sees no GPU (it would run on the "
                                "CPU)".format(args.stack))
    return adapter


def run_job(adapter, info, settings) -> dict:
    """The model's record: timings when it trains, its error otherwise (never a crash)."""
    spec = zoo.get(settings.model)
    record = job_mod.blank_record(info, spec, settings)
    try:
        n_train, n_test = settings.samples(spec)
        data = data_mod.load(settings.data, n_train, n_test, settings.seed)
        trainer = adapter.build(spec, settings.seed)
        record.update(epoch.run(trainer, data, spec, settings), status="ok", data=data.source)
    except UnsupportedPass as exc:
        record.update(status="unsupported", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a model failing on a stack is a record
        record.update(status="error", error=_message(exc))
    return record


def _message(exc) -> str:
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0] if text else "")[:500]


def _send(out, obj):
    out.write(json.dumps(obj) + "\n")


if __name__ == "__main__":
    sys.exit(main())
