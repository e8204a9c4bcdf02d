"""Job kind "ab": passes kept compiled between short timed bursts, for interleaved A/B rounds.

`kmicro ab` runs one worker per side and alternates them, so each pass must stay built,
compiled and checked between its bursts. Tasks (the job's `task`):
  prepare  {"case": {...}, "passes": [...], "seed": int, "check": bool} -> one op record
           per pass, checked against the float64 reference unless check is false (status
           ok|wrong|unsupported|error), with `loops`: the calls per sample that make a
           sample last at least `min_sample_s`, and `call_s`: a warm call's seconds
  time     {"case_id": ID, "pass": P, "samples": n} -> {"case": ID, "pass": P,
           "samples": [mean seconds per call of each sample]}
  release  {"case_id": ID} -> nothing; the case's compiled passes are dropped
"""
import gc

from kmicro.core import cases, timing
from kmicro.harness.jobs import op

__all__ = ["KIND", "MIN_SAMPLE_S", "run"]

KIND = "ab"
# Short samples: a round must be short so drift hits both sides alike. Not shorter: 1 ms
# samples took a torch A/A a quarter less time, but a jax A/A flagged 5 and 9 of 81 passes
# with them, 0 of 81 with 2 ms (docs/validation.md).
MIN_SAMPLE_S = 0.002
_PREPARED = {}  # (case id, pass) -> (Prepared, loops): this worker serves one stack


def run(adapter, info, job):
    return {"prepare": _prepare, "time": _time, "release": _release}[job["task"]](
        adapter, info, job)


def _prepare(adapter, info, job) -> list:
    case = cases.case_from_dict(job["case"])
    data, failure = op.case_data(adapter, case, job.get("seed", 0))
    out = []
    for pass_name in job["passes"]:
        record = op.blank_record(info, case, pass_name, data)
        if data is None:
            record.update(failure)
            out.append(record)
            continue
        prepared, fields = op.checked(adapter, case, pass_name, data, job.get("check", True))
        fields = op.insist_on_gpu(fields, info["requested_device"])
        if prepared is not None and fields.get("status") != "error":
            warm = timing.measure(prepared.step, prepared.sync, timing.Policy(
                warmup=2, warmup_s=0.0, min_samples=1, max_samples=1,
                min_sample_s=MIN_SAMPLE_S))
            _PREPARED[(case.id, pass_name)] = (prepared, warm.loops)
            fields.update(status="ok", loops=warm.loops, call_s=warm.median)
        record.update(fields)
        out.append(record)
    return out


def _time(adapter, info, job) -> list:
    prepared, loops = _PREPARED[(job["case_id"], job["pass"])]
    # One untimed sample first: the other side's thread pools may still be spinning, and
    # this side's caches were just someone else's.
    samples = timing.samples(prepared.step, prepared.sync, loops, job.get("samples", 3) + 1)
    return [{"case": job["case_id"], "pass": job["pass"], "samples": samples[1:]}]


def _release(adapter, info, job) -> list:
    for key in [k for k in _PREPARED if k[0] == job["case_id"]]:
        del _PREPARED[key]
    gc.collect()
    return []
