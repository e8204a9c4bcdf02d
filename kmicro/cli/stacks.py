"""`kmicro stacks`: every declared stack, installed or not, with its versions and device, and
this machine's matmul/copy peaks."""
from __future__ import annotations

import os

from kmicro.cli import common
from kmicro.core.stacks import all_stacks, resolve

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    p = subparsers.add_parser("stacks", help="stacks, installed or not, versions, device, "
                                             "machine peaks")
    p.add_argument("--stacks", help="comma list of stacks to show (default: every declared one)")
    common.add_device_flag(p)
    p.add_argument("--no-peaks", action="store_true", help="skip measuring matmul/copy peaks")
    return p


def run(args) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from rich.table import Table

    from kmicro.core import peaks
    from kmicro.harness import runner

    console = common.make_console()
    table = Table(title="kmicro stacks")
    for col in ("stack", "installed", "python", "backend", "versions", "device", "defined by"):
        table.add_column(col)
    options = runner.Options(device=args.device)
    # kmicro's cached bisect and sweep variants only when named (`kmicro stack cache` lists them)
    shown = resolve(args.stacks) if args.stacks else [s for s in all_stacks().values()
                                                      if not s.cached]
    # Each probe starts a stack's Python and its framework (seconds, mostly imports): side by side.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        infos = pool.map(lambda s: runner.probe(s, options) if s.installed else {}, shown)
    for s, info in zip(shown, infos):
        versions = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
        device = info.get("error") or f"{info.get('device', '')} ({info.get('device_name', '')})"
        table.add_row(s.name, "yes" if s.installed else f"no ({s.install_hint})",
                      info.get("python", s.python), s.backend, versions,
                      device if s.installed else "", _origin(s))
    console.print(table)
    if not args.no_peaks:
        p = peaks.measure()
        console.print(f"machine peaks (NumPy, host CPU): matmul {p['matmul_gflops']:.1f} GFLOP/s "
                      f"(float32), copy {p['copy_gbps']:.1f} GB/s")
    return 0


def _origin(stack) -> str:
    if stack.builtin:
        return "kmicro"
    if stack.base:
        return f"kmicro env, from {stack.base}: {'; '.join(stack.overrides)}"
    return f"kmicro stack add ({stack.interpreter})"
