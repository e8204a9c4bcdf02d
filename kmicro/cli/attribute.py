"""`kmicro attribute`: a model's training step split into its layers, on every stack.

The analysis (shares, remainder, rankings, ablation) is kmicro.analysis.attribution's and the
tables kmicro.report.attribution_tables'; this module reads the arguments and runs the jobs.
"""
from __future__ import annotations

import os

from kmicro.cli import common
from kmicro.core.errors import UsageError
from kmicro.models import zoo

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("attribute", help="split a model's training step into its layers "
                                                "on every stack (shares, ablation)")
    p.add_argument("--model", required=True, metavar="NAME|MODULE:FUNCTION",
                   help=f"built-in ({', '.join(zoo.MODELS)}) or a function returning an "
                        "uncompiled Keras 3 model")
    p.add_argument("--model-keras2", metavar="MODULE:FUNCTION",
                   help="the same model for Keras 2 stacks (theano, tf1)")
    p.add_argument("--ablate", metavar="LAYER_TYPE",
                   help="also time the step without this shape-preserving layer type")
    p.add_argument("--in-situ", action="store_true",
                   help="also run the real train step under the backend's profiler and split "
                        "it into its layers, loss, optimizer and framework overhead")
    p.add_argument("--steps", type=int, default=20, help="timed train steps (default 20)")
    p.add_argument("--batch", type=int,
                   help="batch size (default: the model's, 32 for user models)")
    common.add_run_flags(p, "attribute", stacks_help=common.TRAINING_STACKS_HELP,
                         quick_help="fewer samples per layer: smoke runs", timeout=600.0,
                         timeout_help="seconds per job (default 600)")
    return p


def _request(args):
    from kmicro.analysis import attribution

    if args.steps < 1 or (args.batch is not None and args.batch < 1):
        raise UsageError("--steps and --batch must be at least 1")
    if args.model not in zoo.MODELS:
        attribution.check_source(args.model, "--model")
    if args.model_keras2:
        if args.model in zoo.MODELS:
            raise UsageError("--model-keras2 goes with a module:function --model; built-in "
                             "models are defined once for every Keras")
        attribution.check_source(args.model_keras2, "--model-keras2")
    return attribution.Request(args.model, args.model_keras2, args.ablate, args.steps,
                               args.batch, args.quick, cwd=os.getcwd(), in_situ=args.in_situ)


def run(args) -> int:
    from kmicro.analysis import attribution, contention  # numpy, the harness: not for --help
    from kmicro.core import records
    from kmicro.report.attribution_tables import print_report
    from kmicro.report.in_situ_tables import print_in_situ

    request = _request(args)
    chosen = common.stacks_to_run(args.stacks, train=True)
    path = common.results_path(args)
    out = records.ResultsFile(path)
    options = common.run_options(args)
    # The describe job prints nothing: a usage error it finds stays one line on stderr.
    progress = common.progress_lines("attribute", quiet=(attribution.DESCRIBE,))
    attribution.attribute(request, chosen, options, out, progress)
    common.refuse_missing_gpu(out.records, args.device)
    console = common.make_console()
    print_report(out.records, console)
    print_in_situ(out.records, console)
    for line in contention.caveat_lines(out.records):
        console.print(f"[yellow]! {line}[/yellow]", soft_wrap=True)
    print(f"results: {path}")
    return common.exit_code(out.records)
