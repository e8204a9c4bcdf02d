"""`kmicro models`: the reports' epoch tables measured on this machine, on every stack.

`add_parser(subparsers)` registers the subcommand; `run(args)` returns an exit code
(library errors propagate: UsageError -> 2, NothingRan -> 1, mapped by the CLI).
Imports stay light at module level (no rich, no runner) so `kmicro --help` stays fast.
"""
from __future__ import annotations

import sys
from pathlib import Path

from kmicro.core.errors import NothingRan, UsageError
from kmicro.models import zoo  # pure Python: the parser needs the model names
from kmicro.core.stacks import DEVICES, JIT


def add_parser(subparsers):
    p = subparsers.add_parser("models", help="time whole models per epoch on every stack "
                                             "(the reports' tables)")
    p.add_argument("--stacks", help="comma list of stacks (default: installed stacks that train)")
    p.add_argument("--models", default=",".join(zoo.DEFAULT),
                   help="comma list of {}".format(",".join(zoo.MODELS)))
    how = p.add_mutually_exclusive_group()
    how.add_argument("--steps", type=int, default=20,
                     help="timed train (and eval) steps per model, extrapolated to an epoch")
    how.add_argument("--full-epoch", action="store_true",
                     help="train on all 50,000 samples and evaluate on all 10,000")
    p.add_argument("--no-augment", action="store_true",
                   help="turn off the real-time augmentation of cifar10_cnn and resnet20")
    p.add_argument("--data", metavar="PATH", help="CIFAR-10 python batches (default: the Keras "
                   "cache if present, else synthetic data; never downloads)")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--jit", choices=JIT, default="auto",
                   help="auto = what Keras' fit does per backend; on/off forces it")
    p.add_argument("--timeout", type=float,
                   help="seconds per model and stack (default 900, 14400 with --full-epoch)")
    p.add_argument("--json", help="results file (default: results/models-<time>.json)")
    p.set_defaults(command="models", handler=run)
    return p


def run(args) -> int:
    from rich.console import Console

    from kmicro.cli import common
    from kmicro.core import records as results, stacks
    from kmicro.harness import runner
    from kmicro.cli.common import exit_code, refuse_missing_gpu
    from kmicro.models import job as job_mod
    from kmicro.report import models as table

    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    specs = zoo.select(args.models)
    chosen = _stacks(stacks, args.stacks)
    settings = [_settings(spec, args) for spec in specs]
    path = Path(args.json) if args.json else common.default_json("models")
    out = results.ResultsFile(path)
    timeout = args.timeout or (14400.0 if args.full_epoch else 900.0)
    options = runner.Options(device=args.device, jit=args.jit, timeout_s=timeout,
                             worker_module="kmicro.harness.model_worker")
    jobs = [_job(runner, job_mod, spec, s) for spec, s in zip(specs, settings)]
    for stack in chosen:
        runner.run_jobs(stack, jobs, options, out.append, _progress)
    refuse_missing_gpu(out.records, args.device)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    console.print(table.measured_table(out.records))
    console.print(table.caption(out.records), soft_wrap=True)
    console.print(table.published_table([s.name for s in specs]))
    for line in table.problems(out.records):
        console.print("[yellow]![/yellow] " + line, soft_wrap=True)
    console.print("results: {}".format(path))
    return exit_code(out.records)


def _stacks(stacks, names):
    if names:
        return stacks.resolve(names)
    # numpy cannot train; it is still run (as unsupported) when asked for by name.
    chosen = [s for s in stacks.resolve(None) if s.backward]
    if not chosen:
        raise NothingRan("no stack is installed; run `make env` first")
    return chosen


def _settings(spec, args):
    from kmicro.models import data as data_mod
    from kmicro.models import job as job_mod

    return job_mod.Settings(model=spec.name, steps=args.steps, full_epoch=args.full_epoch,
                            augment=not args.no_augment, data=data_mod.locate(args.data))


def _job(runner, job_mod, spec, settings):
    return runner.Job(settings.payload(), (job_mod.PASS,),
                      lambda info, _pass: job_mod.blank_record(info, spec, settings),
                      job_mod.case_id(spec, settings))


def _progress(stack, label):
    print("kmicro models: {} {} done".format(stack, label), file=sys.stderr, flush=True)
