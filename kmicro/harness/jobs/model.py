"""Job kind "model": one zoo model trained for its timed steps (or a full epoch) on this
stack, one record (kmicro/models/job.py's) per job. The payload is a models.job.Settings."""
from kmicro.backends.base import UnsupportedPass
from kmicro.harness.protocol import message
from kmicro.models import data as data_mod
from kmicro.models import epoch, job as model_job, zoo

__all__ = ["run"]


def run(adapter, info, payload) -> list:
    """The model's record: timings when it trains, its error otherwise (never a crash)."""
    settings = model_job.Settings.from_payload(payload)
    spec = zoo.get(settings.model)
    record = model_job.blank_record(info, spec, settings)
    try:
        n_train, n_test = settings.samples(spec)
        data = data_mod.load(settings.data, n_train, n_test, settings.seed)
        trainer = adapter.build_model(spec, settings.seed)
        record.update(epoch.run(trainer, data, spec, settings), status="ok", data=data.source)
    except UnsupportedPass as exc:
        record.update(status="unsupported", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a model failing on a stack is a record
        record.update(status="error", error=message(exc))
    return [record]
