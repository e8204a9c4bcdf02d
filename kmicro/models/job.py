"""What the runner sends a model job, and the record every answer fills in.

Shared by the runner side and the worker side, so it must import on Python 3.7.
Record fields follow the JSON contract with `model` in place of `op`.
"""
from dataclasses import asdict, dataclass
from typing import Optional

from kmicro.core import records
from kmicro.models import data as data_mod
from kmicro.models import epoch

__all__ = ["KIND", "PASS", "Settings", "case_id", "blank_record"]

KIND = "model"  # the worker's job kind and the records' kind
PASS = "train"  # one record per model and stack: the training epoch (evaluation inside it)


@dataclass(frozen=True)
class Settings:
    model: str
    steps: int = 20
    full_epoch: bool = False
    augment: bool = True  # only where the model's script augmented (spec.augment)
    data: Optional[str] = None  # CIFAR-10 directory; None = synthetic
    seed: int = 0
    train_samples: int = data_mod.TRAIN_SAMPLES
    eval_samples: int = data_mod.TEST_SAMPLES

    def payload(self) -> dict:
        return dict(asdict(self), kind=KIND)

    @classmethod
    def from_payload(cls, payload) -> "Settings":
        return cls(**{k: v for k, v in payload.items() if k != "kind"})

    def augments(self, spec) -> bool:
        return self.augment and spec.augment is not None

    def samples(self, spec):
        """(train, test) samples a worker must hold for this run."""
        if self.full_epoch:
            return self.train_samples, self.eval_samples
        n = epoch.samples_needed(self.steps, spec.batch_size)
        return min(n, self.train_samples), min(n, self.eval_samples)


def case_id(spec, settings) -> str:
    """Stable id, e.g. 'resnet_bn@b32' or 'cifar10_cnn@b32+aug' (augmentation is extra work)."""
    return "{}@b{}{}".format(spec.name, spec.batch_size, "+aug" if settings.augments(spec) else "")


def blank_record(info, spec, settings) -> dict:
    """Every contract field of a model record, status still unset. `info` describes the stack."""
    steps = (epoch.steps_per_epoch(settings.train_samples, spec.batch_size)
             if settings.full_epoch else settings.steps)
    return records.new(
        KIND, info, case_id(spec, settings), PASS, model=spec.name,
        input_shape=[spec.batch_size] + list(spec.input_shape), data_format="channels_last",
        dtype="float32", epoch_s=None, step_s=None, eval_s=None, steps=steps,
        samples=settings.train_samples, eval_samples=settings.eval_samples,
        batch_size=spec.batch_size, full_epoch=settings.full_epoch,
        augment=settings.augments(spec), data=settings.data or data_mod.SYNTHETIC,
        optimizer=spec.optimizer.describe(), source=spec.source)
