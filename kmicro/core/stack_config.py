"""User-defined stacks, kept in one JSON file so every command (and every checkout) sees them.

The file is `$KMICRO_CONFIG` if set, else `$XDG_CONFIG_HOME/kmicro/stacks.json`
(`~/.config/kmicro/stacks.json`). Each entry is one stack: a name, an interpreter, a Keras
backend and family, extra environment variables, and for stacks made by `kmicro env` what
they were made from. Writes are atomic: a crash never leaves half a file.
"""
import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from kmicro.core.errors import UsageError

__all__ = ["path", "load", "save", "locked"]


def path() -> Path:
    explicit = os.environ.get("KMICRO_CONFIG")
    if explicit:
        return Path(explicit)
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(config_home) / "kmicro" / "stacks.json"


def load() -> list:
    """The stored entries (dicts), oldest first; none when the file does not exist."""
    where = path()
    if not where.exists():
        return []
    try:
        entries = json.loads(where.read_text())
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e
                                                for e in entries):
        raise UsageError(f"{where} is not a kmicro stack list; fix or remove it")
    return entries


@contextmanager
def locked():
    """Holds the stack file's lock: a load, change and save inside it is not lost to another
    kmicro process (sweep cells on one machine build variants at once)."""
    where = path()
    where.parent.mkdir(parents=True, exist_ok=True)
    with open(where.with_name(where.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def save(entries: list):
    where = path()
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = where.with_name(where.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=1) + "\n")
    os.replace(tmp, where)
