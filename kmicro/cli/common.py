"""What every subcommand shares: list parsing, default result paths, exit codes."""
from __future__ import annotations

import time
from pathlib import Path

from kmicro.core.errors import NothingRan, UsageError


def split(text) -> list:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def default_json(kind: str) -> Path:
    return Path("results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}.json"


def refuse_missing_gpu(records, device):
    """--device gpu where no stack has one is bad usage: one line, records kept on disk."""
    if device == "gpu" and records and all("DeviceUnavailable" in (r["error"] or "")
                                           for r in records):
        raise UsageError("--device gpu, but none of the stacks sees a GPU "
                         f"({', '.join(sorted({r['stack'] for r in records}))}); "
                         "use --device cpu or auto")


def exit_code(records) -> int:
    """0 when anything ran, else NothingRan (exit 1)."""
    if any(r["status"] == "ok" for r in records):
        return 0
    raise NothingRan("nothing ran successfully (see the errors above)")
