"""The manager side of the independent loop (kmicro/backends/independent_loop.py): one live
process per stack that times a case's layer with plain Keras and the framework's own timer.

The script is run by its path, not as a module, so that nothing of kmicro is imported on
the independent side.
"""
from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from pathlib import Path

from kmicro.core.stacks import worker_env
from kmicro.harness import placement
from kmicro.harness.runner import STARTUP_TIMEOUT_S, WorkerDied, WorkerTimeout

__all__ = ["SCRIPT", "IndependentLoop", "request"]

SCRIPT = Path(__file__).resolve().parents[1] / "backends" / "independent_loop.py"


def request(case, pass_name, min_run_time=0.4) -> dict:
    """What the independent side needs of a case: the Keras layer, its options and shape
    (and, for a one-off measurement, how long to time it)."""
    return {"layer": case.layer, "kwargs": case.layer_kwargs(),
            "input_shape": list(case.input_shape), "n_inputs": case.n_inputs,
            "pass": pass_name, "min_run_time": min_run_time}


class IndependentLoop:
    """`prepare(case, pass_name)` -> {"number", "timer"} or {"error"}: the pass built, warmed
    up and its calls per block chosen; then `block()` -> mean seconds per call of one block."""

    def __init__(self, stack, device="auto", cpus=None):
        """`cpus`: the CPUs it may use, set before its framework starts (and sizes its thread
        pools from them)."""
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([str(stack.interpreter), str(SCRIPT)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1,
                                     env=worker_env(stack, device))
        if cpus:
            placement.pin(self.proc.pid, cpus)
        self.lines = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        hello = self._read(STARTUP_TIMEOUT_S)
        self.versions, self.cpus = hello["versions"], hello.get("cpus")

    def prepare(self, case, pass_name, timeout_s=300.0) -> dict:
        self._send(dict(request(case, pass_name), prepare=True))
        return self._read(timeout_s)

    def block(self, timeout_s=60.0) -> float:
        self._send({"block": True})
        answer = self._read(timeout_s)
        if "error" in answer:  # the step that ran a moment ago failed: not a number to pair
            raise WorkerDied(f"the independent loop failed a block: {answer['error']}")
        return answer["s_per_call"]

    def _send(self, message):
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the next read says how it died

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def _read(self, timeout_s) -> dict:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise WorkerTimeout(f"the independent loop gave no answer within {timeout_s:g} s") \
                from None
        if not line:
            self.proc.wait()
            self.stderr.seek(0)
            tail = [ln for ln in self.stderr.read().splitlines() if ln.strip()]
            raise WorkerDied(f"the independent loop exited with code {self.proc.returncode}: "
                             f"{tail[-1][:300] if tail else 'no output'}")
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
