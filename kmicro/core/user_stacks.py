"""Adding and removing user stacks: validated before anything is stored.

A stack is a name, an interpreter, a KERAS_BACKEND, an adapter family and extra environment
variables. Bad input (a built-in name, a missing interpreter, one that cannot import keras or
the backend, a malformed --env) is one UsageError, and nothing is written.
"""
import shutil
import subprocess
from pathlib import Path

from kmicro.core import envs, stack_config
from kmicro.core.errors import UsageError
from kmicro.core.stacks import ROOT, STACKS, Stack, all_stacks, from_entry, resolve

__all__ = ["BACKENDS", "FAMILIES", "parse_env", "check_name", "make", "save", "remove",
           "made_by_env", "create_variant"]

BACKENDS = ("tensorflow", "jax", "torch", "numpy", "theano")
FAMILIES = ("keras3", "keras2", "keras1")
# Reads the interpreter's version and checks both imports exist without importing them
# (importing a framework takes seconds; theano compiles).
_PROBE = ("import importlib.util as u, platform, sys; "
          "missing = [m for m in sys.argv[1:] if u.find_spec(m) is None]; "
          "print(platform.python_version()); print(' '.join(missing))")


def parse_env(pairs) -> tuple:
    """['KEY=VALUE', ...] -> (('KEY', 'VALUE'), ...)."""
    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"malformed --env {pair!r}; expected KEY=VALUE")
        parsed.append((key.strip(), value))
    return tuple(parsed)


def check_name(name: str):
    if name in STACKS:
        raise UsageError(f"{name!r} is a built-in stack; choose another name "
                         f"(built-in: {', '.join(STACKS)})")
    if not name or "," in name or name != name.strip():
        raise UsageError(f"malformed stack name {name!r}; no commas or surrounding spaces")


def make(name, python, backend, family=None, env=(), **made_by) -> Stack:
    """A validated user stack (not stored yet); `made_by`: base, overrides, pins."""
    check_name(name)
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    interpreter = Path(python).expanduser()
    if not interpreter.is_file():
        raise UsageError(f"interpreter {interpreter} does not exist")
    version = _check_imports(interpreter, backend)
    family = family or ("keras2" if backend == "theano" else "keras3")
    entry = dict(name=name, backend=backend, family=family, executable=str(interpreter.absolute()),
                 python=version, env=[list(kv) for kv in env], **made_by)
    return from_entry(entry)


def _check_imports(interpreter: Path, backend: str) -> str:
    try:
        out = subprocess.run([str(interpreter), "-c", _PROBE, "keras", backend],
                             capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise UsageError(f"cannot run {interpreter}: {exc.strerror}") from None
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) < 1:
        raise UsageError(f"cannot run {interpreter} as a Python interpreter")
    missing = lines[1].split() if len(lines) > 1 else []
    if missing:
        raise UsageError(f"{interpreter} cannot import {' and '.join(missing)}; install them "
                         "there or choose another interpreter")
    return lines[0]


def save(stack: Stack):
    """Store (or replace) the user stack `stack`."""
    with stack_config.locked():
        entries = [e for e in stack_config.load() if e["name"] != stack.name]
        entries.append(dict(name=stack.name, backend=stack.backend, family=stack.family,
                            executable=stack.executable, python=stack.python,
                            env=[list(kv) for kv in stack.env], base=stack.base,
                            overrides=list(stack.overrides), pins=list(stack.pins),
                            cached=stack.cached))
        stack_config.save(entries)


def remove(name: str) -> Stack:
    if name in STACKS:
        raise UsageError(f"{name!r} is a built-in stack; only user stacks can be removed")
    users = {n: s for n, s in all_stacks().items() if not s.builtin}
    if name not in users:
        offered = [n for n, s in users.items() if not s.cached]
        raise UsageError(f"no user stack {name!r}; user stacks: {', '.join(offered) or 'none'}")
    with stack_config.locked():
        stack_config.save([e for e in stack_config.load() if e["name"] != name])
    return users[name]


def made_by_env(stack: Stack):
    """The environment directory `kmicro env` made for `stack`, else None."""
    env_dir = stack.interpreter.parent.parent
    return env_dir if stack.base and env_dir.parent == envs.envs_home() else None


def create_variant(name, base_name, overrides, cached=False) -> Stack:
    """`kmicro env`: build an environment from `base_name`'s pins with `overrides` swapped in,
    and store it as stack `name` (replacing an older one of that name); `cached`: one of
    kmicro's own (kmicro.core.variant_cache)."""
    check_name(name)
    base = resolve([base_name])[0]
    if not base.installed:
        raise UsageError(f"stack {base.name} is not installed; {base.install_hint}")
    lines = envs.requirements(_pins_of(base), overrides)
    env_dir = envs.envs_home() / name
    envs.build(env_dir, str(base.interpreter.resolve()), lines, overrides,
               legacy=base.family != "keras3")
    try:
        stack = make(name, str(env_dir / "bin" / "python"), base.backend, base.family, base.env,
                     base=base.name, overrides=[o.describe() for o in overrides], pins=lines,
                     cached=cached)
    except UsageError:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise
    save(stack)
    return stack


def _pins_of(base: Stack) -> list:
    if base.pins:
        return list(base.pins)
    if not base.requirements:
        raise UsageError(f"stack {base.name} has no recorded pins (added with `kmicro stack "
                         "add`); start from a built-in stack or one made by `kmicro env`")
    path = ROOT / base.requirements
    if not path.is_file():
        raise UsageError(f"the pins of {base.name} ({base.requirements}) are in kmicro's "
                         "checkout; run `kmicro env` from there")
    return [ln.split("#")[0].strip() for ln in path.read_text().splitlines()
            if ln.split("#")[0].strip()]
