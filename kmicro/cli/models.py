"""`kmicro models`: the reports' epoch tables measured on this machine, on every stack."""
from __future__ import annotations

from kmicro.cli import common
from kmicro.core.errors import UsageError
from kmicro.models import zoo  # pure Python: the parser needs the model names

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("models", help="time whole models per epoch on every stack "
                                             "(the reports' tables)")
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
    common.add_run_flags(
        p, "models", stacks_help=common.TRAINING_STACKS_HELP,
        jit_help="auto = what Keras' fit does per backend; on/off forces it",
        timeout_help="seconds per model and stack (default 900, 14400 with --full-epoch)")
    return p


def run(args) -> int:
    from kmicro.core import records
    from kmicro.harness import runner
    from kmicro.report import findings
    from kmicro.report import models as table

    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    specs = zoo.select(args.models)
    chosen = common.stacks_to_run(args.stacks, train=True)
    jobs = [_job(spec, args) for spec in specs]
    path = common.results_path(args)
    out = records.ResultsFile(path)
    timeout = args.timeout or (14400.0 if args.full_epoch else 900.0)
    options = common.run_options(args, timeout_s=timeout)
    for stack in chosen:
        runner.run_jobs(stack, jobs, options, out.append, common.progress_lines("models"))
    common.refuse_missing_gpu(out.records, args.device)
    console = common.make_console()
    console.print(table.measured_table(out.records))
    console.print(table.caption(out.records), soft_wrap=True)
    console.print(table.published_table([s.name for s in specs]))
    for line in table.problems(out.records):
        console.print("[yellow]![/yellow] " + line, soft_wrap=True)
    console.print(f"results: {path}")
    common.print_findings(findings.model_findings(out.records), console)
    return common.exit_code(out.records)


def _job(spec, args):
    """The runner's job for one model: its settings, and the record to fill in when the
    worker never answers."""
    from kmicro.harness import runner
    from kmicro.models import data, job

    settings = job.Settings(model=spec.name, steps=args.steps, full_epoch=args.full_epoch,
                            augment=not args.no_augment, data=data.locate(args.data))
    return runner.Job(settings.payload(), (job.PASS,),
                      lambda info, _pass: job.blank_record(info, spec, settings),
                      job.case_id(spec, settings))
