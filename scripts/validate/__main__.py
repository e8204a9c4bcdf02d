"""Re-measure the claims of docs/validation.md on this machine, one at a time.

    .venv/bin/python scripts/validate [--quick] [--only ID,...] [--keras-repo PATH]

`make validate` runs every claim, `make validate-quick` the subset marked quick (under 10
minutes after `make bench`). Each claim runs kmicro's own commands (or, for the in-situ and
asv claims, the procedure in this folder) with their output in results/validation-<time>/,
then reads their records into rows. Printed last, and written as JSON and Markdown: one table
per claim in the shape of docs/validation.md (measurement, value, machine, date).
"""
import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]

import claims  # noqa: E402
from validation_table import to_markdown  # noqa: E402

from kmicro.analysis import machine  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/validate", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the claims marked quick, smaller")
    p.add_argument("--only", help=f"comma list of {','.join(c.id for c in claims.CLAIMS)}")
    p.add_argument("--keras-repo", type=Path,
                   help="a clone of keras-team/keras (with tag v3.15.0) for the bisect claim's "
                        "real history")
    p.add_argument("--out", type=Path, help="output folder (default results/validation-<time>)")
    p.add_argument("--repeats", type=int, default=5,
                   help="runs of the planted claim, each its own seed (default 5; 1 with --quick)")
    args = p.parse_args(argv)
    chosen = _chosen(args, p)
    out = args.out or ROOT / "results" / f"validation-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    context = claims.Context(out, args.quick, args.keras_repo, args.repeats)
    doc = {"machine": _machine(), "date": time.strftime("%Y-%m-%d"),
           "commit": claims.git_head(), "quick": args.quick, "claims": []}
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(highlight=False)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        for n, claim in enumerate(chosen, 1):
            task = progress.add_task(f"[{n}/{len(chosen)}] {claim.id}: {claim.title}")
            context.step = lambda text, t=task, c=claim, n=n: progress.update(
                t, description=f"[{n}/{len(chosen)}] {c.id}: {text}")
            result = claims.measure(claim, context)
            progress.remove_task(task)
            doc["claims"].append(result)
            console.print(_status_line(result))
            (out / "validation.json").write_text(json.dumps(doc, indent=1))
    markdown = to_markdown(doc)
    (out / "validation.md").write_text(markdown)
    print(markdown)
    console.print(f"written: {out / 'validation.json'}, {out / 'validation.md'}")
    return 1 if any(c["status"] == "failed" for c in doc["claims"]) else 0


def _chosen(args, parser) -> list:
    wanted = [c for c in claims.CLAIMS if c.quick or not args.quick]
    if args.only:
        ids = [i.strip() for i in args.only.split(",") if i.strip()]
        unknown = [i for i in ids if i not in {c.id for c in claims.CLAIMS}]
        if unknown:
            parser.exit(2, f"validate: error: unknown claim {unknown[0]!r}; valid claims: "
                           f"{', '.join(c.id for c in claims.CLAIMS)}\n")
        wanted = [c for c in claims.CLAIMS if c.id in ids]
    return wanted


def _machine() -> str:
    facts = {f.name: f.value for f in machine.system_facts()}
    return f"{facts['CPUs']}-CPU {facts['CPU model'] or 'unknown CPU'}"


def _status_line(result) -> str:
    head = f"{result['id']}: {result['status']} in {result['wall_s']:.0f} s"
    return head + (f" ({result['why']})" if result["why"] else "")


if __name__ == "__main__":
    sys.exit(main())
