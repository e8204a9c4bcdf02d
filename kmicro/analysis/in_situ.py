"""In-situ attribution (`kmicro attribute --in-situ`): the parts of the real training step as
the backend's profiler saw them, by layer type, next to the same layers timed alone.

The worker's "in_situ" task (kmicro/harness/jobs/attribution.py) writes one "profiled_step"
record per stack and one "in_situ" record per part of the step: each layer (its forward and
backward inside the step) and the step's other parts, named in parentheses: (loss),
(metrics), (optimizer), (no layer) for backward nodes no layer recorded, and (framework)
for the step's time outside every op range. Their shares add up to the profiled step.
"""
from __future__ import annotations

from typing import Optional

from kmicro.harness.jobs.attribution import IN_SITU, IN_SITU_PASSES, PROFILED

__all__ = ["IN_SITU", "PROFILED", "PHASES", "profiled_step", "by_type", "dominant_type",
           "share_of", "versus_isolated", "DISAGREE"]

PHASES = tuple(IN_SITU_PASSES)  # "train": the training step, "test": the evaluation step

DISAGREE = 0.10  # in-situ vs isolated beyond this fraction of the step (and their noise)


def _ok(record) -> bool:
    return record["status"] == "ok" and record.get("time_s") is not None


def profiled_step(records, stack, phase="train") -> Optional[dict]:
    step_pass = IN_SITU_PASSES[phase][0]
    return next((r for r in records if r["stack"] == stack and r["pass"] == step_pass
                 and r["status"] == "ok"), None)


def _parts(records, stack, phase="train") -> list:
    part_pass = IN_SITU_PASSES[phase][1]
    return [r for r in records if r["stack"] == stack and r["pass"] == part_pass and _ok(r)]


def is_layer(layer_type) -> bool:
    return not layer_type.startswith("(")


def by_type(records, stack, phase="train") -> dict:
    """{layer type or (part): {"time_s", "share", "noise_s"}} of one stack's profiled step,
    largest first; noise_s sums the parts' per-step IQRs."""
    out = {}
    for r in _parts(records, stack, phase):
        cell = out.setdefault(r["layer_type"], {"time_s": 0.0, "share": 0.0, "noise_s": 0.0})
        cell["time_s"] += r["time_s"]
        cell["share"] += r["share"]
        cell["noise_s"] += r.get("iqr_s") or 0.0
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["time_s"]))


def dominant_type(records, stack, phase="train") -> Optional[tuple]:
    """(layer type, share) of the layer type taking most of the profiled step."""
    layers = [(t, c["share"]) for t, c in by_type(records, stack, phase).items()
              if is_layer(t)]
    return max(layers, key=lambda tc: tc[1]) if layers else None


def share_of(records, stack, layer_type, phase="train") -> Optional[float]:
    """The share of the profiled step a layer type takes (None: the stack has no profile)."""
    if profiled_step(records, stack, phase) is None:
        return None
    return by_type(records, stack, phase).get(layer_type, {"share": 0.0})["share"]


def versus_isolated(records, stack) -> list:
    """[(layer type, in-situ s, isolated s, difference as a share of the step)] where the two
    differ by more than DISAGREE of the profiled step and by more than both sides' noise.
    Isolated: the layers' fwd+bwd timed alone ("backward" records of the isolated jobs)."""
    step = profiled_step(records, stack)
    if step is None:
        return []
    isolated, noise = {}, {}
    for r in records:
        if r["stack"] == stack and r["pass"] == "backward" and r.get("method") == "isolated" \
                and r["status"] == "ok" and r.get("median_s"):
            isolated[r["layer_type"]] = isolated.get(r["layer_type"], 0.0) + r["median_s"]
            noise[r["layer_type"]] = noise.get(r["layer_type"], 0.0) + (r.get("iqr_s") or 0.0)
    total = sum(c["time_s"] for c in by_type(records, stack).values())
    out = []
    for t, cell in by_type(records, stack).items():
        if t not in isolated:
            continue
        diff = cell["time_s"] - isolated[t]
        if abs(diff) > DISAGREE * total and abs(diff) > cell["noise_s"] + noise[t]:
            out.append((t, cell["time_s"], isolated[t], diff / total))
    return out
