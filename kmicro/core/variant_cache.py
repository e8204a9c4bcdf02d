"""The environments kmicro builds for itself: a base stack with one package at another
version (`kmicro sweep`) or at a commit (`kmicro bisect`, `kmicro sweep --repo`).

Each is built once, on first use, and reused: it is a stack like any other (workers run it,
`kmicro ab` takes its name), but marked `cached`, so the user's own stacks are what `kmicro
stack list` and error messages offer. `kmicro stack cache` lists these and prunes them. A
lock per variant lets several kmicro processes on one machine (sweep cells of a local Ray
cluster) ask for the same one: the first builds it, the others wait and reuse it.
"""
import fcntl
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from kmicro.core import envs, stack_config, user_stacks
from kmicro.core.stacks import all_stacks

__all__ = ["name_of", "variant", "listing", "prune"]


def name_of(base: str, override: envs.Override) -> str:
    """bisect-<package>-<commit>-<base> for a revision, sweep-<package>-<version>-<base>."""
    what, kind = (override.rev[:10], "bisect") if override.rev else (override.version, "sweep")
    return f"{kind}-{envs.normalise(override.package)}-{what}-{base}"


def variant(base: str, override: envs.Override):
    """The stack of `base` with `override` swapped in: built the first time, then reused."""
    name = name_of(base, override)
    with _building(name):
        known = all_stacks().get(name)
        if known is not None and known.installed:
            return known
        return user_stacks.create_variant(name, base, [override], cached=True)


@contextmanager
def _building(name):
    home = envs.envs_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / f".{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def listing() -> list:
    """[(stack, bytes pruning it frees, days since it was built, None when its environment is
    gone)] of the cached variants."""
    found = []
    for stack in all_stacks().values():
        if stack.cached:
            env_dir = user_stacks.made_by_env(stack)
            there = env_dir is not None and env_dir.is_dir()
            found.append((stack, _size(env_dir) if there else 0,
                          (time.time() - env_dir.stat().st_mtime) / 86400 if there else None))
    return found


def prune(older_than_days=0.0) -> list:
    """Deletes the cached variants built at least `older_than_days` ago (all by default),
    and those whose environment is gone; returns [(name, bytes freed)]."""
    gone = [(stack, size) for stack, size, age in listing()
            if age is None or age >= older_than_days]
    names = {stack.name for stack, _ in gone}
    with stack_config.locked():
        stack_config.save([e for e in stack_config.load() if e["name"] not in names])
    for stack, _ in gone:
        env_dir = user_stacks.made_by_env(stack)
        if env_dir:
            shutil.rmtree(env_dir, ignore_errors=True)
    return [(stack.name, size) for stack, size in gone]


def _size(directory: Path) -> int:
    """The bytes deleting `directory` frees: files linked nowhere else (uv hard-links most of
    an environment from its cache; those stay)."""
    total = 0
    for f in directory.rglob("*"):
        if f.is_file() and not f.is_symlink():
            info = f.stat()
            total += info.st_size if info.st_nlink == 1 else 0
    return total
