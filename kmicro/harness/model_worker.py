"""`python -m kmicro.model_worker --stack NAME`: one stack, model jobs in, one record each out.

The line protocol is kmicro/protocol.py's; a job is a kmicro.models.job.Settings payload.
Runs on every stack's Python (3.7 to 3.11).
"""
from __future__ import annotations

import gc
import sys

from kmicro.harness import protocol
from kmicro.backends.base import UnsupportedPass
from kmicro.models import data as data_mod
from kmicro.models import epoch, job as job_mod, zoo


def main(argv=None):
    return protocol.serve("_models", "ModelAdapter", _handle, argv)


def _handle(adapter, info, payload):
    yield run_job(adapter, info, job_mod.Settings.from_payload(payload))
    gc.collect()


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
        record.update(status="error", error=protocol.message(exc))
    return record


if __name__ == "__main__":
    sys.exit(main())
