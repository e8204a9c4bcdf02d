"""Job kind "graph": facts read from this stack's compiled graphs (`kmicro diagnose`).

A job is {"kind": "graph", "part": "bn" | "model", "samples": N, "repeats": R}. Its one
answer carries the adapter's fact and error messages as they are, with the worker's info;
what they mean for a user is kmicro/analysis/diagnose.py's job:
  {"type": "finding", "case": ID, "data_format": F, "name": N, "value": V}
  {"type": "error", "case": ID, "data_format": F, "error": "..."}   a case that failed
"""
from kmicro.harness.protocol import Job, message

__all__ = ["KIND", "PASS", "job", "blank", "run"]

KIND = "graph"
PASS = "graph"


def job(part, samples=320, repeats=5) -> Job:
    """The runner's job for one part; `samples`/`repeats`: the model part's timed predict."""
    payload = {"kind": KIND, "part": part, "samples": samples, "repeats": repeats}
    return Job(payload, (PASS,), lambda info, _pass: blank(info, part), part)


def blank(info, part) -> dict:
    """The answer of a part, status still unset (the runner fills it in when the worker never
    answers: timeout, crash, failed start)."""
    return {"kind": KIND, "stack": info["stack"], "case": part, "pass": PASS, "part": part,
            "info": info, "messages": [], "status": None, "error": None}


def run(adapter, info, payload) -> list:
    answer = blank(info, payload["part"])
    try:
        answer["messages"] = adapter.inspect(payload["part"], payload["samples"],
                                             payload["repeats"])
        answer["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - the part's failure is diagnose's record
        answer.update(status="error", error=message(exc))
    return [answer]
