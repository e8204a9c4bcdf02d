"""Job kind "calibrate": kmicro's median against a bare synchronised loop over the same
compiled step, in interleaved rounds (`kmicro calibrate`: the harness's own overhead).

A job is an op job (kmicro/harness/jobs/op.py) with "kind": "calibrate" and
"calibrate": the number of rounds.
"""
import statistics

from kmicro.backends.base import UnsupportedPass
from kmicro.core import cases, timing
from kmicro.harness.jobs import op

__all__ = ["run"]


def run(adapter, info, job):
    case = cases.case_from_dict(job["case"])
    data, failure = op.case_data(adapter, case, job.get("seed", 0))
    for pass_name in job["passes"]:
        record = op.blank_record(info, case, pass_name, data)
        if data is None:
            record.update(failure)
            yield record
            continue
        try:
            prepared = adapter.prepare(case, pass_name, *data)
        except UnsupportedPass as exc:
            record.update(status="unsupported", error=str(exc))
            yield record
            continue
        timing.first_call(prepared.step, prepared.sync)
        ours, bare = [], []
        for _ in range(job["calibrate"]):
            m = timing.measure(prepared.step, prepared.sync)
            ours.append(m.median)
            bare.append(timing.bare_loop(prepared.step, prepared.sync, len(m.samples) * m.loops))
        record.update(status="ok", median_s=statistics.median(ours),
                      bare_median_s=statistics.median(bare), rounds=job["calibrate"])
        yield record
