"""The manager side: one worker process per stack and job batch, run one job at a time; a job
that hangs or kills its worker becomes a record, and a fresh worker takes the next job.

Stacks run one after another, never concurrently: on a small machine two workers
would steal each other's cores and distort every number.
"""
from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from kmicro.core import cases as cases_mod
from kmicro.core.stacks import worker_env
from kmicro.harness import placement
from kmicro.harness.jobs import op
from kmicro.harness.protocol import Job

__all__ = ["Options", "Job", "Worker", "WorkerDied", "WorkerTimeout", "run", "run_jobs",
           "probe", "STARTUP_TIMEOUT_S"]

WORKER = "kmicro.harness.worker"
STARTUP_TIMEOUT_S = 300  # importing a framework (and Theano's first compile) is slow


@dataclass(frozen=True)
class Options:
    device: str = "auto"
    jit: str = "auto"
    quick: bool = False
    timeout_s: float = 300.0  # per case, all passes together
    seed: int = 0
    calibrate_rounds: int = 0  # > 0: overhead measurement jobs instead of timing jobs
    # --device gpu on a stack that has none: False lets the worker start anyway (diagnose
    # reads such a stack's graphs and reports the CPU placement as its finding).
    gpu_required: bool = True


class WorkerDied(Exception):
    pass


class WorkerTimeout(Exception):
    pass


class Worker:
    """A live `python -m kmicro.harness.worker` for one stack; `env` adds or replaces
    environment variables (flags a framework reads once, at import). With wait=False the
    process is started but its greeting not yet read: `ready()` does that, so two workers
    can import their frameworks at the same time (nothing is timed while they start).
    `cpus`: the CPUs it may use, set before its framework starts (and sizes its thread pools
    from them)."""

    def __init__(self, stack, options: Options, env=None, wait=True, cpus=None):
        self.stack = stack
        self.stderr = tempfile.TemporaryFile(mode="w+")
        cmd = [str(stack.interpreter), "-m", WORKER, "--stack", stack.name,
               "--family", stack.family, "--device", options.device, "--jit", options.jit]
        if not options.gpu_required:
            cmd.append("--gpu-optional")
        # `python -m` puts the working directory first on sys.path: run from a kmicro checkout,
        # a stack with its own kmicro (`kmicro@REV`) would import the checkout's instead.
        cwd = str(stack.interpreter.parent) if stack.own_kmicro else None
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1, cwd=cwd,
                                     env=dict(worker_env(stack, options.device), **(env or {})))
        if cpus:
            placement.pin(self.proc.pid, cpus)
        # A thread drains stdout so reads can time out without losing buffered lines.
        self.lines = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        self.fatal, self.info = None, None
        if wait:
            self.ready()

    def ready(self):
        """Waits for the worker's greeting (once): `fatal` and `info` are set after it."""
        if self.info is None:
            hello = self.read(STARTUP_TIMEOUT_S)
            self.fatal = hello.get("error") if hello["type"] == "fatal" else None
            self.info = hello.get("info", {})

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def read(self, timeout_s) -> dict:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise WorkerTimeout(f"no answer within {timeout_s:g} s") from None
        if not line:
            self.proc.wait()
            raise WorkerDied(f"worker exited with code {self.proc.returncode}: {self.stderr_tail()}")
        return json.loads(line)

    def ask(self, job: dict, timeout_s: float, on_record, on_turn=None):
        """Send one job; hand each record to `on_record` until the worker says it is done,
        and run `on_turn(phase)` whenever the worker hands over the machine within the job
        (protocol.turn). Raises WorkerTimeout past `timeout_s` (the whole job) or WorkerDied."""
        self.send(job)
        self.answers(timeout_s, on_record, on_turn)

    def answers(self, timeout_s: float, on_record, on_turn=None):
        """The rest of `ask`, for a job already sent: two workers can then run one each."""
        deadline = time.monotonic() + timeout_s
        while True:
            msg = self.read(max(deadline - time.monotonic(), 0.001))
            if msg["type"] == "done":
                return
            if msg["type"] == "turn":
                if on_turn is not None:
                    on_turn(msg["phase"])
                self.send({"type": "go"})
                continue
            on_record(msg["record"])

    def send(self, job: dict):
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the next read reports how the worker died

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        lines = [ln.strip() for ln in self.stderr.read().splitlines() if ln.strip()]
        return lines[-1][:300] if lines else "no output"

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stderr.close()


def run(stacks, cases, passes, options: Options, sink, finished=frozenset(), progress=None):
    """Run every case on every stack; `sink(record)` receives each record as it arrives."""
    wanted = _passes_for(passes)
    for stack in stacks:
        todo = [c for c in cases if any((stack.name, c.id, p) not in finished for p in wanted)]
        run_jobs(stack, [op.job(c, wanted, options) for c in todo], options, sink, progress)


def _passes_for(passes) -> list:
    # backward_s is forward+backward minus forward_train, so backward needs both.
    if "backward" in passes and "forward_train" not in passes:
        return [p for p in cases_mod.PASSES if p in passes or p == "forward_train"]
    return list(passes)


def run_jobs(stack, jobs, options, sink, progress=None, env=None):
    """Send `jobs` to one worker of `stack`, replacing the worker whenever one fails; `env`:
    extra environment variables of this batch's workers."""
    if not jobs:
        return
    if not stack.installed:
        error = (f"stack {stack.name} is not installed (no {stack.interpreter}); "
                 f"{stack.install_hint}")
        _fail_all(stack, jobs, "skipped", error, sink, progress)
        return
    worker = _start(stack, options, env)
    try:
        if worker.fatal:
            _fail_all(stack, jobs, "error", worker.fatal, sink, progress)
            return
        for job in jobs:
            worker = _run_job(worker, stack, job, options, sink, env)
            if progress:
                progress(stack.name, job.label)
    finally:
        worker.close()


def _start(stack, options, env=None):
    try:
        return Worker(stack, options, env)
    except (WorkerDied, WorkerTimeout) as exc:
        return _DeadWorker(f"worker for {stack.name} failed to start: {exc}")


class _DeadWorker:
    def __init__(self, error):
        self.fatal, self.info = error, {}

    def close(self):
        pass


def _run_job(worker, stack, job, options, sink, env):
    """Runs one job; returns the worker to use next (a fresh one after a crash)."""
    got = set()

    def received(record):
        sink(record)
        got.add(record["pass"])
    try:
        worker.ask(job.payload, options.timeout_s, received)
        return worker
    except WorkerTimeout:
        status, error = "timeout", f"exceeded the per-case timeout of {options.timeout_s:g} s"
    except WorkerDied as exc:
        status, error = "error", str(exc)
    for pass_name in job.passes:
        if pass_name not in got:
            sink(_failure_record(stack, job, pass_name, status, error, worker.info))
    worker.close()
    return _start(stack, options, env)


def _fail_all(stack, jobs, status, error, sink, progress):
    for job in jobs:
        for pass_name in job.passes:
            sink(_failure_record(stack, job, pass_name, status, error, {}))
        if progress:
            progress(stack.name, job.label)


def _failure_record(stack, job, pass_name, status, error, info) -> dict:
    info = dict({"backend": stack.backend}, **info)
    info["stack"] = stack.name
    record = job.blank(info, pass_name)
    record.update(status=status, error=error)
    return record


def probe(stack, options: Options) -> dict:
    """Start a worker only to ask what it sees (versions, device)."""
    worker = _start(stack, options)
    try:
        return {"error": worker.fatal} if worker.fatal else worker.info
    finally:
        worker.close()

