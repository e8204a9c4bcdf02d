"""`python -m kmicro.harness.worker --stack NAME --family F --device D --jit J`: one stack.

Loads the family's adapter (kmicro.backends.load) once, then answers jobs on the line
protocol (kmicro/harness/protocol.py), each dispatched on its `kind` to kmicro/harness/jobs/.
Runs on every stack's Python (3.6 to 3.11).
"""
import argparse
import gc
import os
import platform
import sys
import time

from kmicro import backends
from kmicro.backends.base import DeviceUnavailable
from kmicro.core import kernel_env
from kmicro.harness import protocol
from kmicro.harness.jobs import ab, attribution, calibrate, graph, model, op

__all__ = ["HANDLERS", "main"]

# job kind -> handle(adapter, info, job) yielding the job's records
HANDLERS = {"op": op.run, "calibrate": calibrate.run, "model": model.run,
            "attribution": attribution.run, "graph": graph.run, "ab": ab.run}


def main(argv=None) -> int:
    args = _parse(argv)
    return protocol.serve(lambda: _start(args), _handle)


def _parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--stack", required=True)
    p.add_argument("--family", required=True)
    p.add_argument("--device", default="auto")
    p.add_argument("--jit", default="auto")
    p.add_argument("--gpu-optional", action="store_true",
                   help="start on a stack without the GPU --device gpu asks for (graph "
                        "inspection reports that itself)")
    return p.parse_args(argv)


def _start(args):
    adapter = backends.load(args.family, args.device, args.jit)
    if args.device == "gpu" and not adapter.gpu and not args.gpu_optional:
        # Report 000: Theano silently ran on the CPU. Refuse instead.
        raise DeviceUnavailable(
            f"--device gpu, but stack {args.stack} sees no GPU (it would run on the CPU)")
    info = dict(adapter.info(), stack=args.stack, python=platform.python_version(),
                requested_device=args.device, malloc=os.environ.get("GLIBC_TUNABLES", ""),
                cpus=_cpus(), kernel_env=kernel_env.read())
    # The framework's million objects live as long as the worker: out of the collector's
    # way, each collection between passes costs a tenth of what it did (not in Python 3.6).
    gc.collect()
    getattr(gc, "freeze", lambda: None)()
    return adapter, info


def _cpus():
    """The CPUs this process may run on, as its framework saw them when it started."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _handle(adapter, info, job):
    _inject_fault(job)
    for record in HANDLERS[job["kind"]](adapter, info, job):
        yield record
    if job["kind"] != ab.KIND:  # an A/B round's bursts are short: no full collection each
        gc.collect()


def _inject_fault(job):
    """Test hook for failure isolation: KMICRO_FAULT=hang:WHAT or die:WHAT, WHAT an op (its
    op jobs) or a job kind."""
    how, _, what = os.environ.get("KMICRO_FAULT", "").partition(":")
    if what in (job["kind"], job.get("case", {}).get("op")):
        if how == "hang":
            time.sleep(3600)
        if how == "die":
            os._exit(17)


if __name__ == "__main__":
    sys.exit(main())
