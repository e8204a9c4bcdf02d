"""`kmicro attribute`: a model's training step split into its layers, on every stack.

Framework-free: validates input, plans one worker's jobs per stack (the "attribution" job
kind, kmicro/harness/jobs/attribution.py, does the work), and analyses the records:
per-layer and per-type shares of the step, the unexplained remainder, the dominant layer
type across stacks, ablation deltas. The command (arguments, tables) is kmicro/cli/attribute.py.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from kmicro.analysis import pysource
from kmicro.core.errors import UsageError
from kmicro.harness.jobs import attribution as job_kind
from kmicro.models import zoo

__all__ = ["DESCRIBE", "TOLERATED", "REMAINDER_MEANING", "Request", "check_source",
           "removable_types", "check_ablate", "measured_ok", "step_of", "stacks_of", "summary",
           "shares_by_stack", "type_ranking", "dominant_lines", "ratio_ranking", "ablation",
           "ranked_layers", "attribute"]

DESCRIBE = "describe"  # the worker's layer list: kept in memory, not written to the results
LAYER_PASSES = job_kind.LAYER_PASSES  # training-mode forward; forward+backward
TOLERATED = 0.25  # |remainder| / step above this: the layers do not explain the step
REMAINDER_MEANING = (
    "remainder = step - sum of layers (fwd+bwd). Positive: work outside the layers (loss, "
    "metrics, optimizer update, per-step framework overhead). Negative: the whole step is "
    "cheaper than its parts timed alone (fusion across layers, per-call overhead that timing "
    "layers one by one pays once per layer).")


@dataclass(frozen=True)
class Request:
    model: str  # built-in name or module:function returning a Keras 3 model
    model_keras2: Optional[str] = None  # module:function returning a Keras 2 model
    ablate: Optional[str] = None
    steps: int = 20
    batch: Optional[int] = None  # None: the built-in's batch size, 32 for user models
    quick: bool = False
    seed: int = 0
    cwd: str = ""  # user modules are imported from here first, as `python -m` would
    in_situ: bool = False  # also the real steps under the backend's profiler

    @property
    def builtin(self) -> bool:
        return self.model in zoo.MODELS

    def source(self, family) -> Optional[str]:
        """What this stack family builds: the built-in's name or its module:function."""
        if self.builtin:
            return self.model
        return self.model_keras2 if family == "keras2" else self.model

    def payload(self, family, task, **extra) -> dict:
        """The attribution job of one `task` (describe, step, layer, ablated_step)."""
        batch = self.batch or (zoo.get(self.model).batch_size if self.builtin else 32)
        return dict(asdict(self), kind=job_kind.KIND, task=task, source=self.source(family),
                    builtin=self.builtin, batch=batch, **extra)


# ---- input checks (parent side: no framework is imported here) ---------------------------

def check_source(source, flag):
    """A module:function must name a findable module that defines the function. Checked by
    reading the source (ast), never importing it: the user's module imports Keras."""
    module, sep, name = source.partition(":")
    if not sep or not module or not name.isidentifier():
        raise UsageError(f"{flag} {source!r}: expected a built-in model "
                         f"({', '.join(zoo.MODELS)}) or module:function")
    spec = pysource.find_module(module)
    if spec is None:
        raise UsageError(f"{flag} {source}: no module named {module!r} (searched the current "
                         "directory and sys.path)")
    if not (spec.origin or "").endswith(".py"):
        return  # compiled or namespace module: the worker's import decides
    try:
        names = pysource.defined_names(Path(spec.origin).read_text())
    except (OSError, SyntaxError, ValueError) as exc:
        raise UsageError(f"{flag} {source}: cannot read {spec.origin}: {exc}") from None
    if names is not None and name not in names:
        raise UsageError(f"{flag} {source}: module {module} defines no {name!r}")


def removable_types(layers) -> list:
    """Layer types whose every layer has one input and keeps its shape: removing them
    leaves a model with the same shapes everywhere."""
    types = {}
    for layer in layers:
        keeps = len(layer["input_shapes"]) == 1 and layer["input_shapes"] == layer["output_shapes"]
        types[layer["type"]] = types.get(layer["type"], True) and keeps
    return sorted(t for t, ok in types.items() if ok)


def check_ablate(layer_type, layers, model):
    ok = removable_types(layers)
    if layer_type and layer_type not in ok:
        present = {layer["type"] for layer in layers}
        why = "changes the shape or takes several inputs" if layer_type in present else \
            "is not in the model"
        raise UsageError(f"--ablate {layer_type}: {why} ({model}); removable layer types "
                         f"present: {', '.join(ok) or 'none'}")


def measured_ok(record) -> bool:
    return record["status"] == "ok" and bool(record.get("median_s"))


# ---- analysis ----------------------------------------------------------------------------

def step_of(records, stack, pass_name="step"):
    return next((r for r in records if r["stack"] == stack and r["pass"] == pass_name
                 and measured_ok(r)), None)


def stacks_of(records) -> list:
    return list(dict.fromkeys(r["stack"] for r in records))


def summary(records, stack) -> Optional[dict]:
    """Sum of the layers' fwd+bwd, seconds per layer type and the remainder of one stack."""
    step = step_of(records, stack)
    layers = [r for r in records if r["stack"] == stack and r["pass"] == "backward"]
    if step is None or not layers:
        return None
    by_type = {}
    for r in layers:
        if measured_ok(r):
            by_type[r["layer_type"]] = by_type.get(r["layer_type"], 0.0) + r["median_s"]
    explained = sum(by_type.values())
    remainder = step["median_s"] - explained
    return {"step_s": step["median_s"], "layers_s": explained, "remainder_s": remainder,
            "remainder_share": remainder / step["median_s"], "by_type_s": by_type,
            "layers_missing": sum(1 for r in layers if not measured_ok(r))}


def shares_by_stack(records) -> dict:
    """{stack: {layer_type: seconds}} plus the positive remainder, for plots.stacked_shares."""
    out = {}
    for stack in stacks_of(records):
        s = summary(records, stack)
        if s:
            out[stack] = dict(s["by_type_s"], **({"(remainder)": s["remainder_s"]}
                                                 if s["remainder_s"] > 0 else {}))
    return out


def type_ranking(records) -> list:
    """[(type, {stack: (seconds, share)}, slowest/fastest)] by mean share, largest first."""
    sums = {st: summary(records, st) for st in stacks_of(records)}
    sums = {st: s for st, s in sums.items() if s}
    types = dict.fromkeys(t for s in sums.values() for t in s["by_type_s"])
    rows = []
    for t in types:
        cells = {st: (s["by_type_s"][t], s["by_type_s"][t] / s["step_s"])
                 for st, s in sums.items() if t in s["by_type_s"]}
        times = [c[0] for c in cells.values()]
        ratio = max(times) / min(times) if len(times) > 1 and min(times) > 0 else None
        rows.append((t, cells, ratio))
    return sorted(rows, key=lambda r: -sum(c[1] for c in r[1].values()) / len(r[1]))


def dominant_lines(records, top=3) -> list:
    """'BatchNormalization: 52% of the step on theano, 48% on tensorflow; 2.1x slower on
    theano than tensorflow' for the types with the largest mean share."""
    lines = []
    for t, cells, ratio in type_ranking(records)[:top]:
        order = sorted(cells, key=lambda st: -cells[st][1])
        shares = ", ".join(f"{cells[st][1]:.0%}" + (" of the step" if i == 0 else "")
                           + f" on {st}" for i, st in enumerate(order))
        line = f"{t}: {shares}"
        if ratio and len(cells) > 1:
            slow = max(cells, key=lambda st: cells[st][0])
            fast = min(cells, key=lambda st: cells[st][0])
            line += f"; {ratio:.1f}x slower on {slow} than {fast}"
        lines.append(line)
    return lines


def ratio_ranking(records) -> list:
    """Layer types by cross-stack ratio (slowest/fastest stack), largest first."""
    rows = [(t, r) for t, _, r in type_ranking(records) if r]
    return sorted(rows, key=lambda x: -x[1])


def ablation(records, stack) -> Optional[dict]:
    """The ablated step against the full step timed in turns with it (`baseline_s`), else
    against the step job's median."""
    step, cut = step_of(records, stack), step_of(records, stack, "ablated_step")
    if not cut or not (step or cut.get("baseline_s")):
        return None
    full = cut.get("baseline_s") or step["median_s"]
    delta = cut["median_s"] - full
    return {"step_s": full, "ablated_s": cut["median_s"], "delta_s": delta,
            "delta_pct": delta / full, "ablate": cut["ablate"]}


def ranked_layers(records, stack) -> list:
    """A stack's ok layer records (fwd+bwd), most expensive first."""
    mine = [r for r in records
            if r["stack"] == stack and r["pass"] == "backward" and measured_ok(r)]
    return sorted(mine, key=lambda r: -r["median_s"])


# ---- orchestration -----------------------------------------------------------------------

class _StackPlan:
    """One stack's jobs, made as the answers arrive: the layer jobs need the worker's layer
    list. runner.run_jobs takes the next job only after the last one's records reached
    `sink`, so iterating lazily is enough; a UsageError raised here closes the worker."""

    def __init__(self, request, stack, out):
        self.request, self.stack, self.out, self.described = request, stack, out, None

    def __bool__(self):
        return True

    def __iter__(self):
        yield self._job(DESCRIBE, (DESCRIBE,))
        d = self.described
        if d and d.get("usage"):
            raise UsageError(d["error"])
        if not d or d["status"] != "ok":
            return  # the model does not build here: the sink kept the failure as its step
        check_ablate(self.request.ablate, d["layers"], self.request.model)
        yield self._job("step", ("step",), input_shapes=d["input_shapes"])
        if self.request.in_situ:
            yield self._job(job_kind.IN_SITU, tuple(s for s, _ in
                                                    job_kind.IN_SITU_PASSES.values()),
                            input_shapes=d["input_shapes"])
        for layer in d["layers"]:
            yield self._job("layer", LAYER_PASSES, layer=layer)
        if self.request.ablate:
            yield self._job("ablated_step", ("ablated_step",), input_shapes=d["input_shapes"])

    def _job(self, task, passes, **extra):
        from kmicro.harness import runner

        payload = self.request.payload(self.stack.family, task, **extra)
        label = extra["layer"]["key"] if "layer" in extra else task
        return runner.Job(payload, passes,
                          lambda info, p: job_kind.blank_record(info, payload, p), label)

    def sink(self, record):
        if record["pass"] == DESCRIBE:
            self.described = record
            if record["status"] == "ok" or record.get("usage"):
                return
            record = dict(record, **{"pass": "step"})  # no model here means no step either
        step = step_of(self.out.records, record["stack"])
        if step and measured_ok(record) and record["pass"] in LAYER_PASSES:
            record["share"] = record["median_s"] / step["median_s"]
        if (record["pass"] == "ablated_step" and step and measured_ok(record)
                and "delta_s" not in record):
            record["delta_s"] = record["median_s"] - step["median_s"]  # no baseline in turns
            record["delta_pct"] = record["delta_s"] / step["median_s"]
        self.out.append(record)


def _unsupported(request, stack, out):
    payload = request.payload(stack.family, "step")
    record = job_kind.blank_record({"stack": stack.name, "backend": stack.backend},
                                   payload, "step")
    record.update(status="unsupported", error=f"{request.model} builds a Keras 3 model; give "
                  "the Keras 2 equivalent with --model-keras2 module:function")
    out.append(record)


def attribute(request, chosen, options, out, progress=None):
    """Run the request on every stack, one after another; summaries go into the step records."""
    from kmicro.harness import runner

    for stack in chosen:
        if request.source(stack.family) is None:
            _unsupported(request, stack, out)
            continue
        plan = _StackPlan(request, stack, out)
        runner.run_jobs(stack, plan, options, plan.sink, progress)
        s, step = summary(out.records, stack.name), step_of(out.records, stack.name)
        if s and step:
            out.append(dict(step, **s))
