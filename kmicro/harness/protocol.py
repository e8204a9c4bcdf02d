"""The line protocol between the runner and `python -m kmicro.harness.worker`, and its Job.

  worker -> {"type": "ready", "info": {...}} | {"type": "fatal", "error": "..."}
  runner -> one JSON job per line, {"kind": KIND, ...} (KIND: op, calibrate, model,
            attribution, graph, ab; the rest is the kind's payload)
  worker -> {"type": "record", "record": {...}} per result, then {"type": "done"}
  worker -> {"type": "turn", "phase": "..."} within a job (`turn`): the runner does its own
            work (the other side of a paired measurement), then answers {"type": "go"}
Framework chatter on stdout is redirected to stderr so it cannot corrupt the protocol.
Runs on every stack's Python (3.7 to 3.11).
"""
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable

__all__ = ["Job", "serve", "turn", "message"]

_OUT = []  # the protocol's stream, once `serve` has set it up


@dataclass(frozen=True)
class Job:
    """One unit of work for a worker: one record comes back per entry of `passes`.

    `payload` is the job line (with its `kind`); `blank(info, pass_name)` makes the record
    to fill in when the worker never answers (it crashed, hung, or could not start);
    `label` names the job in progress output.
    """

    payload: dict
    passes: tuple
    blank: Callable
    label: str


def serve(start, handle) -> int:
    """The worker's side: `start()` returns (adapter, info) or raises (the runner records the
    error for every job), then `handle(adapter, info, job)` yields each job's records."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by frameworks goes to stderr
    _OUT[:] = [out]
    try:
        adapter, info = start()
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which records it
        _send(out, {"type": "fatal", "error": message(exc)})
        return 1
    _send(out, {"type": "ready", "info": info})
    for line in sys.stdin:
        for record in handle(adapter, info, json.loads(line)):
            _send(out, {"type": "record", "record": record})
        _send(out, {"type": "done"})
    return 0


def turn(phase):
    """Within a job: hand the machine to the runner and wait until it answers "go"."""
    _send(_OUT[0], {"type": "turn", "phase": phase})
    if not sys.stdin.readline():
        raise EOFError("the runner closed the protocol during a turn")


def message(exc) -> str:
    """One line for a record's `error`: the exception type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def _send(out, obj):
    out.write(json.dumps(obj) + "\n")
