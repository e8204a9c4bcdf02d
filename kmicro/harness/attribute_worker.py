"""`python -m kmicro.attribute_worker --stack NAME`: one stack, attribution jobs in, records out.

The line protocol is kmicro/protocol.py's (as kmicro.worker and kmicro.model_worker). A job
is a payload of kmicro.attribution.Request with a `kind`:
  describe      the model's layers (shapes, types), not written to the results file
  step          the full training step (train_on_batch), --steps samples after warm-up
  layer         one layer, rebuilt alone from its config: forward and forward+backward
  ablated_step  the step of the model without the `ablate` layer type
The built model is cached per worker, so layer jobs reuse the model the step trained.
Also imported by the CLI side for the record helpers: no framework at module level.
Runs on every stack's Python (3.7 to 3.11).
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
import time
from dataclasses import replace

import numpy as np

from kmicro.harness import protocol
from kmicro.core import timing
from kmicro.backends.base import UnsupportedPass
from kmicro.models import zoo

LAYER_PASSES = ("forward", "backward")
WARMUP_STEPS = 2  # as kmicro models: the steps after the first still settle allocations


class UserModelError(Exception):
    """The user's module:function does not import, raises, or returns no model: bad usage."""


def main(argv=None):
    return protocol.serve("_attribution", "Attributor", _handle, argv)


_SESSIONS = {}  # one per attributor: the worker process serves one stack


def _handle(attributor, info, payload):
    session = _SESSIONS.setdefault(id(attributor), Session(attributor))
    for record in run_job(session, info, payload):
        yield record
    gc.collect()


class Session:
    """The attributor plus the models built so far in this worker."""

    def __init__(self, attributor):
        self.a = attributor
        self._built = {}

    def built(self, payload, ablate=None):
        """(model, models.epoch.Trainer) compiled for training, built once per worker."""
        key = (payload["source"], payload["seed"], ablate)
        if key not in self._built:
            self._built[key] = self._build(payload, ablate)
        return self._built[key]

    def _build(self, payload, ablate):
        if payload["builtin"]:
            spec = zoo.get(payload["source"])
            return self.a.builtin(without(spec, ablate) if ablate else spec, payload["seed"])
        model = self._user_model(payload)
        if ablate:
            model = self.a.without(model, ablate)
        return model, self.a.compile_user(model)

    def _user_model(self, payload):
        source = payload["source"]
        flag = "--model-keras2" if self.a.family == "keras2" else "--model"
        module_name, _, name = source.partition(":")
        if payload.get("cwd") and payload["cwd"] not in sys.path:
            sys.path.insert(0, payload["cwd"])  # where the user ran kmicro, as `python -m` does
        try:
            function = getattr(importlib.import_module(module_name), name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is the user's input
            raise UserModelError("{} {}: cannot import it ({})".format(
                flag, source, protocol.message(exc)))
        self.a.seed(payload["seed"])
        try:
            model = function()
        except Exception as exc:  # noqa: BLE001
            raise UserModelError("{} {}: calling it raised {}".format(
                flag, source, protocol.message(exc)))
        if not self.a.is_model(model):
            raise UserModelError("{} {} returned {}, not {}".format(
                flag, source, type(model).__name__, self.a.model_kind))
        return model


def without(spec, layer_type):
    """A built-in spec with every `layer_type` node removed; its readers read its input."""
    skip = {n.name: n.inputs[0] for n in spec.nodes if n.layer == layer_type}

    def source(name):
        while name in skip:
            name = skip[name]
        return name

    nodes = tuple(replace(n, inputs=tuple(source(i) for i in n.inputs))
                  for n in spec.nodes if n.name not in skip)
    return replace(spec, nodes=nodes)


def run_job(session, info, payload) -> list:
    kind = payload["kind"]
    passes = LAYER_PASSES if kind == "layer" else (kind,)
    records = [blank_record(info, payload, p) for p in passes]
    try:
        ablate = payload["ablate"] if kind == "ablated_step" else None
        model, trainer = session.built(payload, ablate)
        if kind == "describe":
            records[0].update(_describe(session.a, model, payload["batch"]), status="ok")
        elif kind == "layer":
            _time_layer(session.a, model, payload, records)
        elif kind == "ablated_step":
            records[0].update(_time_ablated(session, model, trainer, payload))
        else:
            records[0].update(_time_step(session.a, model, trainer, payload))
    except UserModelError as exc:
        _fail(records, "error", str(exc), usage=True)
    except UnsupportedPass as exc:
        _fail(records, "unsupported", str(exc))
    except Exception as exc:  # noqa: BLE001 - a failing model is a record, not a crash
        _fail(records, "error", protocol.message(exc))
    return records


def _fail(records, status, error, **extra):
    for r in records:
        if r["status"] is None:
            r.update(status=status, error=error, **extra)


def _describe(attributor, model, batch) -> dict:
    """The layer list the CLI plans its layer jobs from; `key` (type#k) matches across stacks."""
    layers, seen = [], {}
    for index, layer in enumerate(attributor.describe(model)):
        k = seen[layer["type"]] = seen.get(layer["type"], -1) + 1
        for field in ("input_shapes", "output_shapes"):
            layer[field] = [_batched(s, batch) for s in layer[field]]
        layers.append(dict(layer, index=index, key="{}#{}".format(layer["type"], k),
                           params=int(layer["params"])))
    inputs, outputs = attributor.io(model)
    return {"layers": layers, "input_shapes": [_batched(s, batch) for s, _ in inputs],
            "output_shapes": [_batched(s, batch) for s in outputs]}


def _batched(shape, batch) -> list:
    """The shape with the batch filled in, as plain ints (Keras 2 may give NumPy ints)."""
    return [batch if i == 0 and d is None else (None if d is None else int(d))
            for i, d in enumerate(shape)]


def _batch(attributor, model, payload):
    """(x, y, first input array) of one seeded batch, as train_on_batch takes them."""
    inputs, outputs = attributor.io(model)
    rng = np.random.RandomState(payload["seed"])
    xs = [_data(rng, _batched(s, payload["batch"]), dtype) for s, dtype in inputs]
    ys = [_target(rng, _batched(s, payload["batch"])) for s in outputs]
    return (xs[0] if len(xs) == 1 else xs), (ys[0] if len(ys) == 1 else ys), xs[0]


def _trained(trainer, x, y):
    """One synchronous step: train_on_batch returns host values."""
    return lambda: trainer.train(x, y)


def _steps_policy(payload):
    # Exactly --steps samples of one step each (min_sample_s=0: no loops per sample).
    return timing.Policy(warmup=WARMUP_STEPS, min_samples=payload["steps"],
                         max_samples=payload["steps"], min_sample_s=0.0, budget_s=float("inf"))


def _time_step(attributor, model, trainer, payload) -> dict:
    x, y, x0 = _batch(attributor, model, payload)
    step = _trained(trainer, x, y)
    _, compile_s = timing.first_call(step, _identity)
    m = timing.measure(step, _identity, _steps_policy(payload))
    return dict(m.summary(), status="ok", compile_s=compile_s, share=1.0,
                device=trainer.device(x0), optimizer=trainer.optimizer,
                params=int(trainer.params))


def _time_ablated(session, model, trainer, payload) -> dict:
    """The ablated step, in turns with the full step: load that drifts during a run (other
    jobs on the machine) then moves both medians alike and cancels in the delta."""
    x, y, x0 = _batch(session.a, model, payload)
    cut = _trained(trainer, x, y)
    _, compile_s = timing.first_call(cut, _identity)
    fields = dict(status="ok", compile_s=compile_s, device=trainer.device(x0),
                  optimizer=trainer.optimizer, params=int(trainer.params))
    try:
        full = _trained(session.built(payload)[1], x, y)
        full()
    except Exception:  # noqa: BLE001 - TF1: building the ablated model cleared the full one
        return dict(timing.measure(cut, _identity, _steps_policy(payload)).summary(), **fields)
    a, b = _in_turns(cut, full, payload["steps"])
    return dict(a.summary(), baseline_s=b.median, baseline_iqr_s=b.iqr,
                delta_s=a.median - b.median, delta_pct=(a.median - b.median) / b.median, **fields)


def _in_turns(step_a, step_b, n, clock=time.perf_counter):
    """Measurements of two steps timed alternately, after WARMUP_STEPS of each."""
    for _ in range(WARMUP_STEPS):
        step_a()
        step_b()
    a, b = timing.Measurement(), timing.Measurement()
    for _ in range(n):
        for m, step in ((a, step_a), (b, step_b)):
            t0 = clock()
            step()
            m.samples.append(clock() - t0)
    return a, b


def _time_layer(attributor, model, payload, records):
    layer = payload["layer"]
    rng = np.random.RandomState(payload["seed"] + 1 + layer["index"])
    inputs = [_data(rng, s, d) for s, d in zip(layer["input_shapes"], layer["dtypes"])]
    dy = rng.standard_normal(layer["output_shapes"][0]).astype(np.float32)
    policy = timing.Policy.quick() if payload["quick"] else timing.Policy()
    for record in records:
        try:
            prepared = attributor.layer_pass(model, layer, record["pass"], inputs, dy)
            out, compile_s = timing.first_call(prepared.step, prepared.sync)
            m = timing.measure(prepared.step, prepared.sync, policy)
            record.update(m.summary(), status="ok", compile_s=compile_s,
                          device=prepared.device_of(out))
        except UnsupportedPass as exc:
            record.update(status="unsupported", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - one layer failing leaves the others timed
            record.update(status="error", error=protocol.message(exc))
    fwd, both = records
    if fwd["status"] == both["status"] == "ok":
        both["backward_s"] = both["median_s"] - fwd["median_s"]


def _data(rng, shape, dtype):
    if "int" in str(dtype):  # indices (Embedding): the smallest valid range
        return rng.randint(0, 2, size=shape).astype(dtype)
    return rng.uniform(0, 1, size=shape).astype(np.float32)  # like the scaled images of the zoo


def _target(rng, shape):
    """One-hot classes for 2-D outputs (categorical crossentropy), values otherwise (MSE)."""
    if len(shape) == 2:
        return np.eye(shape[1], dtype=np.float32)[rng.randint(0, shape[1], size=shape[0])]
    return rng.standard_normal(shape).astype(np.float32)


def _identity(out):
    return out


# ---- records (also used by the CLI side for records of jobs that never answered) ---------

def case_id(payload, pass_name) -> str:
    base = "{}@b{}".format(payload["model"], payload["batch"])
    if pass_name == "ablated_step":
        return "{}-{}".format(base, payload["ablate"])
    layer = payload.get("layer")
    return "{}/{}".format(base, layer["key"]) if layer else base


def blank_record(info, payload, pass_name) -> dict:
    """Every contract field of an attribution record, status still unset."""
    layer = payload.get("layer") or {}
    shapes = layer.get("input_shapes") or payload.get("input_shapes") or [None]
    return {
        "schema": 1, "kind": "attribution", "stack": info["stack"],
        "backend": info.get("backend"), "versions": info.get("versions", {}),
        "python": info.get("python"), "device": info.get("device"),
        "device_name": info.get("device_name"), "jit": info.get("jit"),
        "case": case_id(payload, pass_name), "model": payload["model"],
        "model_source": payload.get("source"), "layer": layer.get("name"),
        "layer_key": layer.get("key"), "layer_type": layer.get("type"), "pass": pass_name,
        "input_shape": shapes[0], "input_shapes": shapes, "batch_size": payload["batch"],
        "data_format": None, "dtype": "float32", "steps": payload["steps"],
        "ablate": payload["ablate"] if pass_name == "ablated_step" else None,
        "status": None, "median_s": None, "iqr_s": None, "compile_s": None,
        "max_rel_err": None, "error": None, "share": None,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_avg_1m": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(),
    }


if __name__ == "__main__":
    sys.exit(main())
