"""asv suite: the reports' models (kmicro models) on the stack of this environment.

`time_train_step` / `time_test_step` time one synchronous train_on_batch / test_on_batch on a
fixed prepared batch (augmentation and batch preparation excluded: the step alone);
`track_epoch_s` is kmicro's epoch estimate (median of 20 timed steps x 50,000 / batch, batch
preparation and augmentation included, as `kmicro models` reports it); `track_compile_s` is
the first train step (trace + compile + run); `peakmem_train_step` is the process's peak RSS
around a train step (framework included: compare it across commits and versions, not across
stacks).
"""
from kmicro.backends.base import UnsupportedPass
from kmicro.core import timing
from kmicro.models import data as data_mod
from kmicro.models import epoch, zoo
from kmicro.models.job import Settings

from .common import adapter, cached, skip

MODELS = list(zoo.DEFAULT)
STEPS = 20


def trained(model):
    """(trainer, a prepared train batch, compile_s) of a model, compiled, once per process."""
    return cached(("model", model), lambda: _build(zoo.get(model)))


def _build(spec):
    try:
        trainer = adapter().build_model(spec, seed=0)
    except UnsupportedPass as exc:
        raise skip(str(exc)) from None
    data = data_mod.synthetic(spec.batch_size, spec.batch_size, seed=0)
    batch = epoch.Batches(data.x_train, data.y_train, spec.batch_size, None, 0,
                          spec.num_classes)[0]
    _, compile_s = timing.first_call(lambda: trainer.train(*batch), timing.host_values)
    trainer.test(*batch)
    return trainer, batch, compile_s


def epoch_estimate(model):
    """kmicro models' record fields for STEPS timed steps, once per process."""
    def run():
        spec = zoo.get(model)
        n = epoch.samples_needed(STEPS, spec.batch_size)
        settings = Settings(spec.name, steps=STEPS)
        return epoch.run(trained(model)[0], data_mod.synthetic(n, n, seed=0), spec, settings)
    return cached(("epoch", model), run)


class Models:
    params = MODELS
    param_names = ["model"]
    timeout = 900
    warmup_time = 0.5

    def setup(self, model):
        self.trainer, self.batch, self.compile_s = trained(model)

    def time_train_step(self, model):
        self.trainer.train(*self.batch)

    def time_test_step(self, model):
        self.trainer.test(*self.batch)

    def track_epoch_s(self, model):
        """Estimated seconds per epoch of 50,000 samples (kmicro models' default method)."""
        return epoch_estimate(model)["epoch_s"]

    track_epoch_s.unit = "seconds"

    def track_compile_s(self, model):
        return self.compile_s

    track_compile_s.unit = "seconds"

    def peakmem_train_step(self, model):
        self.trainer.train(*self.batch)
