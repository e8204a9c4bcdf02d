"""The stacks: one interpreter + pinned packages + one Keras backend each.

The built-in stacks are declared here, once; the Makefile's environments and asv.conf.json's
matrix must agree with them (tests/test_stacks.py, tests/test_asv.py check). Users add their
own (`kmicro stack add`, `kmicro env`), stored by kmicro.core.stack_config; every command
resolves names against both.
"""
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kmicro.core import stack_config
from kmicro.core.errors import UsageError

__all__ = ["ROOT", "MALLOC_TUNABLES", "DEVICES", "JIT", "Stack", "STACKS", "all_stacks",
           "resolve", "worker_env", "CACHED_PREFIXES", "in_checkout", "cache_home", "compile_cache_home",
           "import_root"]

ROOT = Path(__file__).resolve().parents[2]  # the checkout, when kmicro runs from one
# glibc malloc hands blocks >= 128 KiB back to the OS and trims its heap, adapting both
# thresholds to what the process freed before: a fresh process then page-faults through every
# step's new buffers (torch Conv2D fwd+bwd 3.5x slower), a process with another history does
# not. Fixed thresholds keep freed memory for reuse, as a warmed-up training process (or
# jemalloc/tcmalloc) does, whatever ran before. One arena: a thread other than the main one
# (XLA's compute thread) allocates from an arena of 64 MiB heaps, and a heap emptied by a free
# is unmapped whatever the trim threshold; where a step's buffer just overflows a heap, every
# call maps and faults a fresh one (1 JAX worker in 36 read ReLU 7-14x slower for its life).
# docs/validation.md, "Fidelity against an independent loop".
MALLOC_TUNABLES = ("glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
                   ":glibc.malloc.arena_max=1")
DEVICES = ("auto", "cpu", "gpu")  # --device: where a stack's work must run
JIT = ("auto", "on", "off")  # --jit: auto = what a Keras train step does per backend


@dataclass(frozen=True)
class Stack:
    name: str
    backend: str  # KERAS_BACKEND
    family: str  # adapter: keras3 | keras2 | keras1
    env_dir: str = ""  # built-in: virtual environment, relative to the checkout
    python: str = ""  # interpreter version
    requirements: str = ""  # built-in: pinned requirements file, relative to the checkout
    default: bool = True  # part of the default comparison when installed
    backward: bool = True
    env: tuple = field(default=())  # extra environment variables (name, value)
    executable: str = ""  # user stacks: the interpreter's absolute path
    base: str = ""  # made by `kmicro env`: the stack it started from...
    overrides: tuple = field(default=())  # ...the --set values it swapped in...
    pins: tuple = field(default=())  # ...and every requirement it installed
    cached: bool = False  # made by `kmicro bisect` or `kmicro sweep`: kmicro's, not the user's

    @property
    def interpreter(self) -> Path:
        return Path(self.executable) if self.executable else ROOT / self.env_dir / "bin" / "python"

    @property
    def installed(self) -> bool:
        return self.interpreter.exists()

    @property
    def builtin(self) -> bool:
        return not self.executable

    @property
    def own_kmicro(self) -> bool:
        """Made with kmicro itself swapped in (bisecting kmicro): its workers run that kmicro,
        not the one on the worker PYTHONPATH."""
        return any(re.split(r"[=@]", o)[0].lower() == "kmicro" for o in self.overrides)

    @property
    def install_hint(self) -> str:
        if not self.builtin:
            return f"its interpreter {self.interpreter} is gone: `kmicro stack remove {self.name}`"
        return "run `make env`" if self.default else "run `make legacy`"


# Theano compiles C per graph: its cache is kept so a second run is fast. {cache} is filled
# in per stack by worker_env (compile_cache_home). Theano is CPU-only here (no pygpu on PyPI).
_THEANO_ENV = (("THEANO_FLAGS", "floatX=float32,device=cpu,blas.ldflags=-lopenblas,"
                                "compiledir={cache}"),)
_KERAS3 = dict(family="keras3", env_dir=".venv", python="3.11", requirements="requirements/keras3.txt")

STACKS = {
    s.name: s
    for s in [
        Stack("tensorflow", "tensorflow", **_KERAS3),
        Stack("jax", "jax", **_KERAS3),
        Stack("torch", "torch", **_KERAS3),
        Stack("numpy", "numpy", backward=False, **_KERAS3),
        Stack("theano", "theano", "keras2", ".envs/theano", "3.9", "requirements/theano.txt",
              env=_THEANO_ENV),
        Stack("theano-2019", "theano", "keras2", ".envs/theano-2019", "3.7",
              "requirements/theano-2019.txt", default=False, env=_THEANO_ENV),
        Stack("tf1", "tensorflow", "keras2", ".envs/tf1", "3.7", "requirements/tf1.txt",
              default=False),
        # Report 000's own stack (Keras 1.2.1 + Theano 0.8.2).
        Stack("keras1-theano", "theano", "keras1", ".envs/keras1-theano", "3.6",
              "requirements/keras1-theano.txt", default=False, env=_THEANO_ENV),
    ]
}


# Names of the variants bisect and sweep build (entries stored before `cached` existed).
CACHED_PREFIXES = ("bisect-", "sweep-")


def from_entry(entry: dict) -> Stack:
    """A user stack from its stored entry (kmicro.core.stack_config)."""
    return Stack(entry["name"], entry["backend"], entry["family"], python=entry.get("python", ""),
                 default=False, backward=entry["backend"] != "numpy",
                 env=tuple(tuple(kv) for kv in entry.get("env", [])),
                 executable=entry["executable"], base=entry.get("base", ""),
                 overrides=tuple(entry.get("overrides", [])), pins=tuple(entry.get("pins", [])),
                 cached=entry.get("cached", bool(entry.get("base"))
                                  and entry["name"].startswith(CACHED_PREFIXES)))


def all_stacks() -> dict:
    """Built-in stacks, then the user's, by name."""
    users = {}
    for entry in stack_config.load():
        try:
            users[entry["name"]] = from_entry(entry)
        except (KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"{stack_config.path()}: stack {entry.get('name')!r} is malformed "
                             f"({type(exc).__name__}: {exc}); fix or remove it") from None
    return dict(STACKS, **users)


def resolve(names=None) -> list:
    """Stacks by name (comma list or iterable); default: every installed default stack."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    known = all_stacks()
    if not names:
        return [s for s in known.values() if s.default and s.installed]
    unknown = [n for n in names if n not in known]
    if unknown:  # kmicro's cached variants resolve, but are not offered
        offered = [n for n, s in known.items() if not s.cached]
        raise UsageError(f"unknown stack {unknown[0]!r}; valid stacks: {', '.join(offered)}")
    return [known[n] for n in names]


def in_checkout() -> bool:
    """True when kmicro runs from its repository (not from an installed wheel)."""
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "kmicro" / "core").is_dir()


def cache_home() -> Path:
    return ROOT / ".cache" if in_checkout() else _user_cache()


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kmicro"


def compile_cache_home() -> Path:
    """Compiled-code caches (Theano's C modules), per user like Theano's own ~/.theano, not per
    checkout: a fresh clone (CI's) reuses them instead of spending minutes compiling again.
    Theano keys its modules by platform, Python and Theano version and locks the directory."""
    return _user_cache() / "compiled"


def import_root() -> Path:
    """A directory whose only package is this kmicro: put on a worker's PYTHONPATH, it makes
    kmicro importable by any interpreter without handing it another environment's packages."""
    if in_checkout():
        return ROOT
    package = Path(__file__).resolve().parents[1]
    root = cache_home() / "pythonpath" / hashlib.sha1(str(package).encode()).hexdigest()[:12]
    if not (root / "kmicro").exists():
        root.mkdir(parents=True, exist_ok=True)
        try:
            (root / "kmicro").symlink_to(package, target_is_directory=True)
        except FileExistsError:
            pass  # another kmicro process made it first
    return root


def worker_env(stack: Stack, device: str) -> dict:
    """Environment of a worker process for this stack and device choice. A stack's own
    variables win over kmicro's defaults; its PYTHONPATH is put in front, not instead."""
    env = dict(os.environ)
    env["KERAS_BACKEND"] = stack.backend
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("GLIBC_TUNABLES", MALLOC_TUNABLES)
    if not stack.own_kmicro:
        env["PYTHONPATH"] = _path_join(str(import_root()), env.get("PYTHONPATH", ""))
    for key, value in stack.env:
        value = value.replace("{cache}", str(compile_cache_home() / stack.name))
        env[key] = _path_join(value, env.get(key, "")) if key == "PYTHONPATH" else value
    if device == "cpu":
        # Hide GPUs so no backend can place work on one.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _path_join(first: str, rest: str) -> str:
    return os.pathsep.join(p for p in (first, rest) if p)
