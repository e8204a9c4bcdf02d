"""`kmicro machine`: a quick look at this machine's noise now, and the smallest effect
`kmicro ab` can tell apart here (as `pyperf system show` looks before pyperf measures)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from kmicro.cli import common
from kmicro.core.errors import UsageError

__all__ = ["add_parser", "run"]

PREFERRED = ("jax", "tensorflow", "torch")  # the A/A's stack when none is named


def add_parser(subparsers):
    p = subparsers.add_parser("machine", help="this machine's CPUs, kernel-selecting variables "
                                              "and a short A/A: the smallest effect `kmicro "
                                              "ab` can tell apart here now")
    p.add_argument("--stack", help="the stack of the A/A (default: jax, else the first "
                                   "installed Keras 3 stack)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="seconds for the A/A's rounds (default 60; 0 skips the A/A)")
    common.add_device_flag(p)
    p.add_argument("--json", help="also write what was read and measured to this file")
    return p


def run(args) -> int:
    from kmicro.analysis import machine
    from kmicro.core import cases, kernel_env
    from kmicro.report import machine_tables

    if args.seconds and args.seconds < 10:
        raise UsageError("expected --seconds 0 (no A/A) or at least 10")
    stack = _stack(args.stack) if args.seconds else None
    console = common.make_console()
    facts = machine.system_facts()
    console.print(machine_tables.facts_table(facts))
    drift = machine.vcpu_drift()
    console.print(machine_tables.drift_table(drift))
    variables = kernel_env.read()
    console.print(machine_tables.env_table(variables))
    aa, effect = [], None
    if stack:
        case_list = [cases.parse_id(machine.SMALL_CASE), cases.parse_id(machine.LARGE_CASE)]
        console.print(f"A/A: {stack.name} against itself on {len(case_list)} cases, "
                      f"{args.seconds:.0f} s ...")
        with common.progress_bar(len(case_list) + machine.aa_settings(0).max_rounds) as bar:
            aa = machine.run_aa(stack, case_list, common.run_options(args), args.seconds, bar)
        console.print(machine_tables.aa_table(aa))
        effect = machine.smallest_effect(aa)
        console.print(machine_tables.verdict_line(effect, stack.name), soft_wrap=True)
    tips = machine.advice(facts, drift, effect)
    for line in tips:
        console.print(f"- {line}", soft_wrap=True)
    if args.json:
        _write(args.json, facts, drift, variables, aa, effect, tips)
        console.print(f"written: {args.json}")
    return 0


def _stack(name):
    """The named stack (installed), else jax or the first installed Keras 3 stack."""
    if name:
        return common.stacks_to_run([name])[0]
    installed = {s.name: s for s in common.stacks_to_run(None)}
    for preferred in PREFERRED:
        if preferred in installed:
            return installed[preferred]
    raise UsageError(f"no Keras 3 stack of {', '.join(PREFERRED)} is installed for the "
                     "A/A; name one with --stack, or skip it with --seconds 0")


def _write(path, facts, drift, variables, aa, effect, tips):
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "facts": [vars(f) for f in facts], "vcpu_drift": vars(drift),
           "kernel_env": variables, "aa": aa, "smallest_effect": effect, "advice": tips}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, default=str))
