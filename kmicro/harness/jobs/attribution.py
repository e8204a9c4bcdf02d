"""Job kind "attribution": a model's training step and its layers, timed on this stack.

A job is a payload of kmicro.analysis.attribution.Request with "kind": "attribution" and a
`task`:
  describe      the model's layers (shapes, types), not written to the results file
  step          the full training step (train_on_batch), --steps samples after warm-up
  layer         one layer, rebuilt alone from its config: forward and forward+backward
  ablated_step  the step of the model without the `ablate` layer type
  in_situ       the real step under the backend's profiler: one "profiled_step" record
                (profiler on, and off in the blocks around it) and one "in_situ" record
                per part of the step (each layer, loss, metrics, optimizer, framework);
                then the same for the evaluation step (test_on_batch):
                "profiled_eval_step" and "in_situ_eval" records
The built model is cached per worker (kmicro/harness/jobs/built_models.py), so layer jobs
reuse the model the step trained. The CLI side imports this module for `blank_record`:
no framework at module level.
"""
import statistics

import numpy as np

from kmicro.backends.base import UnsupportedPass
from kmicro.core import other_load, records, timing
from kmicro.harness.jobs.built_models import Session, UserModelError
from kmicro.harness.protocol import message

__all__ = ["KIND", "LAYER_PASSES", "IN_SITU", "PROFILED", "IN_SITU_PASSES", "WARMUP_STEPS",
           "run", "case_id", "blank_record"]

KIND = "attribution"
LAYER_PASSES = ("forward", "backward")
IN_SITU, PROFILED = "in_situ", "profiled_step"  # the passes of the in_situ task's records
# phase -> (pass of its step record, pass of its part records)
IN_SITU_PASSES = {"train": (PROFILED, IN_SITU), "test": ("profiled_eval_step", "in_situ_eval")}
UNPLACED = "(unplaced) "
WARMUP_STEPS = 2  # as kmicro models: the steps after the first still settle allocations

_SESSIONS = {}  # one per adapter: the worker process serves one stack


def run(adapter, info, payload) -> list:
    session = _SESSIONS.setdefault(id(adapter), Session(adapter))
    task = payload["task"]
    passes = LAYER_PASSES if task == "layer" else (task,)
    if task == IN_SITU:
        passes = tuple(steps for steps, _ in IN_SITU_PASSES.values())
    found = [blank_record(info, payload, p) for p in passes]
    try:
        ablate = payload["ablate"] if task == "ablated_step" else None
        model, trainer = session.built(payload, ablate)
        if task == "describe":
            found[0].update(_describe(adapter, model, payload["batch"]), status="ok")
        elif task == "layer":
            _time_layer(adapter, model, payload, found)
        elif task == "ablated_step":
            found[0].update(_time_ablated(session, model, trainer, payload))
        elif task == IN_SITU:
            for record, phase in zip(list(found), IN_SITU_PASSES):
                record.update(_profiled(adapter, model, trainer, payload, phase))
                found += _in_situ_parts(adapter, info, model, payload, record, phase)
        else:
            found[0].update(_time_step(adapter, model, trainer, payload))
    except UserModelError as exc:
        _fail(found, "error", str(exc), usage=True)
    except UnsupportedPass as exc:
        _fail(found, "unsupported", str(exc))
    except Exception as exc:  # noqa: BLE001 - a failing model is a record, not a crash
        _fail(found, "error", message(exc))
    return found


def _fail(found, status, error, **extra):
    for r in found:
        if r["status"] is None:
            r.update(status=status, error=error, **extra)


def _describe(adapter, model, batch) -> dict:
    """The layer list the CLI plans its layer jobs from; `key` (type#k) matches across stacks."""
    layers, seen = [], {}
    for index, layer in enumerate(adapter.describe(model)):
        k = seen[layer["type"]] = seen.get(layer["type"], -1) + 1
        for field in ("input_shapes", "output_shapes"):
            layer[field] = [_batched(s, batch) for s in layer[field]]
        layers.append(dict(layer, index=index, key="{}#{}".format(layer["type"], k),
                           params=int(layer["params"])))
    inputs, outputs = adapter.io(model)
    return {"layers": layers, "input_shapes": [_batched(s, batch) for s, _ in inputs],
            "output_shapes": [_batched(s, batch) for s in outputs]}


def _batched(shape, batch) -> list:
    """The shape with the batch filled in, as plain ints (Keras 2 may give NumPy ints)."""
    return [batch if i == 0 and d is None else (None if d is None else int(d))
            for i, d in enumerate(shape)]


def _batch(adapter, model, payload):
    """(x, y, first input array) of one seeded batch, as train_on_batch takes them."""
    inputs, outputs = adapter.io(model)
    rng = np.random.RandomState(payload["seed"])
    xs = [_data(rng, _batched(s, payload["batch"]), dtype) for s, dtype in inputs]
    ys = [_target(rng, _batched(s, payload["batch"])) for s in outputs]
    return (xs[0] if len(xs) == 1 else xs), (ys[0] if len(ys) == 1 else ys), xs[0]


def _trained(trainer, x, y):
    """One synchronous step: train_on_batch returns host values."""
    return lambda: trainer.train(x, y)


def _steps_policy(payload, steps=None):
    # Exactly --steps (or `steps`) samples of one step each (min_sample_s=0: no loops per sample).
    steps = steps or payload["steps"]
    return timing.Policy(warmup=WARMUP_STEPS, warmup_s=0.0, min_samples=steps,
                         max_samples=steps, min_sample_s=0.0, budget_s=float("inf"))


def _step_fields(trainer, compile_s, x0) -> dict:
    return dict(status="ok", compile_s=compile_s, device=trainer.device(x0),
                optimizer=trainer.optimizer, params=int(trainer.params))


def _time_step(adapter, model, trainer, payload) -> dict:
    x, y, x0 = _batch(adapter, model, payload)
    step = _trained(trainer, x, y)
    _, compile_s = timing.first_call(step, timing.host_values)
    with other_load.watching(other_load.Watch()) as watch:
        m = timing.measure(step, timing.host_values, _steps_policy(payload))
    return dict(m.summary(), share=1.0, other_load=watch.share,
                **_step_fields(trainer, compile_s, x0))


def _time_ablated(session, model, trainer, payload) -> dict:
    """The ablated step, in turns with the full step: load that drifts during a run (other
    jobs on the machine) then moves both medians alike and cancels in the delta."""
    x, y, x0 = _batch(session.adapter, model, payload)
    cut = _trained(trainer, x, y)
    _, compile_s = timing.first_call(cut, timing.host_values)
    fields = _step_fields(trainer, compile_s, x0)
    try:
        full = _trained(session.built(payload)[1], x, y)
        full()
    except Exception:  # noqa: BLE001 - TF1: building the ablated model cleared the full one
        m = timing.measure(cut, timing.host_values, _steps_policy(payload))
        return dict(m.summary(), **fields)
    a, b = timing.in_turns(cut, full, payload["steps"], WARMUP_STEPS)
    return dict(a.summary(), baseline_s=b.median, baseline_iqr_s=b.iqr,
                delta_s=a.median - b.median, delta_pct=(a.median - b.median) / b.median, **fields)


def _profiled(adapter, model, trainer, payload, phase) -> dict:
    """The train (or test) step with the profiler on, in turns with blocks of steps without it
    (plain, profiled, plain, ...: drift over the run hits both sides alike, so the profiler's
    overhead is read side by side); `parts` is the profile's split, turned into records by
    _in_situ_parts. The --steps profiled steps are split over the adapter's
    `profile_sessions`."""
    x, y, x0 = _batch(adapter, model, payload)
    step = _trained(trainer, x, y) if phase == "train" else (lambda: trainer.test(x, y))
    _, compile_s = timing.first_call(step, timing.host_values)
    sessions = _split(payload["steps"], adapter.profile_sessions)
    plain = timing.measure(step, timing.host_values, _steps_policy(payload, sessions[0])).samples
    profiles, watch = [], other_load.Watch()
    for steps in sessions:
        with other_load.watching(watch):
            profiles.append(adapter.profile_steps(model, step, steps, phase))
        plain += timing.measure(step, timing.host_values, _steps_policy(payload, steps)).samples
    profile = _merged(profiles)
    on, off = timing.Measurement(samples=profile["steps_s"]), timing.Measurement(samples=plain)
    totals = [sum(t) for t in zip(*(p["times_s"] for p in profile["parts"]))]
    return dict(on.summary(), method="in_situ", share=1.0, unprofiled_s=off.median,
                unprofiled_iqr_s=off.iqr, profiler_overhead=on.median / off.median - 1,
                profile_sessions=len(sessions), other_load=watch.share,
                # the profile's own step ranges against the clock around each step
                accounted=sum(totals) / sum(profile["steps_s"]), parts=profile["parts"],
                **_step_fields(trainer, compile_s, x0))


def _split(steps, sessions) -> list:
    """`steps` spread over at most `sessions` profiled sessions, e.g. 10 over 3: [4, 3, 3]."""
    n = max(1, min(sessions, steps))
    return [steps // n + (1 if i < steps % n else 0) for i in range(n)]


def _merged(profiles) -> dict:
    """Several profile_steps results as one: the steps of every session in order, each part's
    times per step (0 in a session where the part did not occur)."""
    by_key = [{(p["layer"], p["part"]): p["times_s"] for p in profile["parts"]}
              for profile in profiles]
    keys = list(dict.fromkeys(key for times in by_key for key in times))  # first seen first
    parts = [{"layer": layer, "part": part,
              "times_s": [t for times, profile in zip(by_key, profiles)
                          for t in times.get((layer, part), [0.0] * len(profile["steps_s"]))]}
             for layer, part in keys]
    return {"steps_s": [s for profile in profiles for s in profile["steps_s"]], "parts": parts}


def _in_situ_parts(adapter, info, model, payload, step, phase) -> list:
    """One "in_situ" record per part of the profiled step (see _part_medians)."""
    parts = step.pop("parts", None)
    if step["status"] != "ok" or not parts:
        return []
    described = {layer["name"]: layer for layer in
                 _describe(adapter, model, payload["batch"])["layers"]}
    out = []
    for name, fields in _part_medians(parts).items():
        # "(unplaced) Conv2D": time a profiler gave a layer type but not to one of its layers
        kind = name[len(UNPLACED):] if name.startswith(UNPLACED) else name
        layer = described.get(name) or {"name": name, "key": name, "type": kind}
        record = blank_record(info, dict(payload, layer=layer), IN_SITU_PASSES[phase][1])
        record.update(fields, status="ok", method="in_situ", device=step.get("device"))
        out.append(record)
    return out


def _part_medians(parts) -> dict:
    """{layer or part: record fields} from a profile's parts. A part's time is its median
    over the profiled steps, not the mean: on a busy machine a thread that loses its CPU for
    a few milliseconds inflates whichever op it was in, and in one step of three that lifted
    a Dense(10) above a conv 30x its work. Shares are of the medians added up, so they
    still sum to one; `forward_s`, `backward_s`... are each kind's median."""
    by_layer = {}
    for p in parts:
        by_layer.setdefault(p["layer"], {})[p["part"]] = p["times_s"]
    totals = {name: timing.Measurement(samples=[sum(t) for t in zip(*kinds.values())])
              for name, kinds in by_layer.items()}
    per_step = sum(m.median for m in totals.values())
    return {name: dict({"{}_s".format(k): statistics.median(t) for k, t in kinds.items()},
                       time_s=totals[name].median, median_s=totals[name].median,
                       mean_s=statistics.mean(totals[name].samples), iqr_s=totals[name].iqr,
                       n_samples=len(totals[name].samples),
                       share=totals[name].median / per_step)
            for name, kinds in by_layer.items()}


def _time_layer(adapter, model, payload, found):
    layer = payload["layer"]
    rng = np.random.RandomState(payload["seed"] + 1 + layer["index"])
    inputs = [_data(rng, s, d) for s, d in zip(layer["input_shapes"], layer["dtypes"])]
    dy = rng.standard_normal(layer["output_shapes"][0]).astype(np.float32)
    policy = timing.Policy.quick() if payload["quick"] else timing.Policy()
    for record in found:
        try:
            prepared = adapter.layer_pass(model, layer, record["pass"], inputs, dy)
            out, compile_s = timing.first_call(prepared.step, prepared.sync)
            with other_load.watching(other_load.Watch()) as watch:
                m = timing.measure(prepared.step, prepared.sync, policy)
            record.update(m.summary(), status="ok", compile_s=compile_s,
                          device=prepared.device_of(out), other_load=watch.share)
        except UnsupportedPass as exc:
            record.update(status="unsupported", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - one layer failing leaves the others timed
            record.update(status="error", error=message(exc))
    fwd, both = found
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


# ---- records (also made by the CLI side for jobs that never answered) ---------------------

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
    return records.new(
        KIND, info, case_id(payload, pass_name), pass_name, model=payload["model"],
        model_source=payload.get("source"), layer=layer.get("name"),
        layer_key=layer.get("key"), layer_type=layer.get("type"), input_shape=shapes[0],
        input_shapes=shapes, batch_size=payload["batch"], data_format=None, dtype="float32",
        steps=payload["steps"], ablate=payload["ablate"] if pass_name == "ablated_step" else None,
        share=None, method=_METHODS.get(pass_name))


_METHODS = dict({"forward": "isolated", "backward": "isolated"},
                **{p: "in_situ" for both in IN_SITU_PASSES.values() for p in both})
