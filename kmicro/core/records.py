"""Result records and result files (a JSON list of records, rewritten atomically after each).

Every record is made by `new`: the contract fields (stack, backend, versions, device, case,
pass, status, median_s, iqr_s, compile_s, max_rel_err, error), where and when it ran, and an
explicit `kind`; each job kind adds its own fields (op: op, input_shape, data_format...;
model: model, epoch_s...; attribution: layer, share...; diagnose: findings, facts; ab: stack_a,
stack_b, ratio, ci_low, ci_high, verdict, mde, rounds...).
"""
import json
import os
import time
from pathlib import Path

from kmicro.core.errors import UsageError

__all__ = ["SCHEMA", "STATUSES", "KINDS", "FINAL", "new", "load", "kind_of", "key",
           "ResultsFile"]

# 1: first version. 2: records carry `kind` (files of version 1 still load: kind_of).
SCHEMA = 2
STATUSES = ("ok", "error", "timeout", "wrong", "unsupported", "skipped")
KINDS = ("op", "model", "attribution", "diagnose", "ab", "fidelity")
# ab: `kmicro ab` comparisons; fidelity: `kmicro calibrate --independent`
REQUIRED = ("stack", "case", "pass", "status")
# Statuses a --resume run does not repeat: the answer would be the same.
FINAL = ("ok", "wrong", "unsupported")


def new(kind, info, case, pass_name, **fields) -> dict:
    """A record of `kind` with every contract field, status still unset (None) unless
    `fields` set it. `info` describes the stack (a worker's hello, or at least its stack)."""
    record = {
        "schema": SCHEMA, "kind": kind, "stack": info["stack"], "backend": info.get("backend"),
        "versions": info.get("versions", {}), "python": info.get("python"),
        "device": info.get("device"), "device_name": info.get("device_name"),
        "jit": info.get("jit"), "theano_flags": info.get("theano_flags"),
        "malloc": info.get("malloc"), "case": case,
        "pass": pass_name, "status": None, "median_s": None, "iqr_s": None, "compile_s": None,
        "max_rel_err": None, "error": None, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # other work on the machine distorts timings; keep the evidence with the number
        "load_avg_1m": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(),
        "cpus": info.get("cpus"),  # the CPUs the worker could run on (--same-cpu: one)
        # the variables that select kernels and thread counts (kmicro/core/kernel_env.py)
        "kernel_env": info.get("kernel_env"),
    }
    record.update(fields)
    return record


def load(path) -> list:
    """Records of a result file; a one-line UsageError when it is not one."""
    try:
        records = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"cannot read results file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not a kmicro results file (invalid JSON: {exc})") from None
    if not isinstance(records, list) or not all(_is_record(r) for r in records):
        raise UsageError(
            f"{path} is not a kmicro results file (expected a JSON list of records with "
            f"{', '.join(REQUIRED)})")
    return records


def kind_of(record) -> str:
    """The record's `kind`; files written before records carried one are recognised by
    their fields (diagnose findings, attribution, model, op)."""
    if record.get("kind") in KINDS:
        return record["kind"]
    if "finding" in record or "findings" in record:
        return "diagnose"
    if record.get("model"):
        return "model"
    if record.get("op"):
        return "op"
    return "other"


def _is_record(r) -> bool:
    return isinstance(r, dict) and all(k in r for k in REQUIRED) and r["status"] in STATUSES


def key(record) -> tuple:
    """What a record measures; a newer record with the same key replaces it (--resume)."""
    if record.get("kind") == "fidelity":  # one record per round
        return record["stack"], record["case"], record["pass"], record["round"]
    if record.get("role") == "overlap":  # a sweep cell measured again, on another node
        return record["stack"], record["case"], record["pass"], "overlap"
    return record["stack"], record["case"], record["pass"]


class ResultsFile:
    """Appends records and keeps the file a valid JSON list after each one (crash-safe)."""

    def __init__(self, path, resume=False):
        self.path = Path(path)
        self.records = load(self.path) if resume and self.path.exists() else []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write()

    def finished(self) -> set:
        return {key(r) for r in self.records if r["status"] in FINAL}

    def append(self, record):
        self.records = [r for r in self.records if key(r) != key(record)] + [record]
        self._write()

    def rewrite(self):
        """Writes the records again, after a change to them in place."""
        self._write()

    def _write(self):
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.records, indent=1))
        os.replace(tmp, self.path)
