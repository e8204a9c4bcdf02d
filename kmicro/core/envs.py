"""`kmicro env`: a stack's environment with some packages swapped, built with uv.

A variant starts from the base stack's exact pins and replaces one package per `--set`:
  keras==3.14.0             another released version
  keras=/path/to/checkout   the package built from that source tree
  keras@REV  (with --repo)  that git revision of a local checkout (exported, then built)
uv resolves and installs in seconds from its cache (venv + pip where uv is missing, and for
the Keras 2 stacks, whose sdists only build with an old setuptools).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kmicro.core.errors import UsageError
from kmicro.core.stacks import cache_home

__all__ = ["Override", "parse_set", "envs_home", "source_cache", "requirements", "build"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
FORMS = "NAME==VERSION, NAME=/path/to/source or NAME@REV with --repo PATH"


@dataclass(frozen=True)
class Override:
    """One swapped package: exactly one of version, source (a directory) is set."""

    package: str
    version: str = ""
    source: str = ""
    rev: str = ""  # the full commit a source tree was exported from, when it came from git

    @property
    def key(self) -> str:
        return normalise(self.package)

    @property
    def requirement(self) -> str:
        if self.version:
            return f"{self.package}=={self.version}"
        return f"{self.package} @ {Path(self.source).resolve().as_uri()}"

    def describe(self) -> str:
        if self.version:
            return self.requirement
        return f"{self.package}@{self.rev[:12]}" if self.rev else f"{self.package}={self.source}"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_set(text: str, repo=None) -> Override:
    """One --set value; a one-line UsageError naming the valid forms when it is not one."""
    text = text.strip()
    m = re.fullmatch(rf"({_NAME})==(\S+)", text)
    if m:
        return Override(m.group(1), version=m.group(2))
    m = re.fullmatch(rf"({_NAME})=(.+)", text)
    if m:
        return Override(m.group(1), source=str(_package_dir(m.group(2), text)))
    m = re.fullmatch(rf"({_NAME})@(\S+)", text)
    if m:
        if not repo:
            raise UsageError(f"--set {text}: a revision needs --repo PATH (a git checkout of "
                             f"{m.group(1)})")
        return _from_git(m.group(1), m.group(2), Path(repo))
    raise UsageError(f"malformed --set {text!r}; expected {FORMS}")


def _package_dir(where: str, text: str) -> Path:
    path = Path(where).expanduser()
    if not any((path / f).is_file() for f in ("pyproject.toml", "setup.py")):
        raise UsageError(f"--set {text}: {path} is not a Python package source tree "
                         "(no pyproject.toml or setup.py)")
    return path.resolve()


def _from_git(package: str, rev: str, repo: Path) -> Override:
    """Export `rev` of `repo` once into the source cache (keyed by the full commit)."""
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise UsageError(f"--set {package}@{rev}: no such revision in {repo} "
                         "(or it is not a git repository)")
    commit = found.stdout.strip()
    tree = source_cache() / f"{normalise(package)}-{commit[:12]}"
    if not tree.exists():
        _export(repo, commit, tree)
    return Override(package, source=str(_package_dir(str(tree), f"{package}@{rev}")),
                    rev=commit)


def _export(repo: Path, commit: str, tree: Path):
    tree.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=tree.parent, prefix=".export-"))
    archive = subprocess.Popen(["git", "-C", str(repo), "archive", commit],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "--no-same-owner", "-x", "-C", str(partial)], stdin=archive.stdout,
                   check=True)
    archive.wait()
    try:
        os.replace(partial, tree)  # whole or not at all: a crash leaves only a .export- folder
    except OSError:
        if not tree.exists():
            raise
        shutil.rmtree(partial)  # another kmicro process exported the same commit first


def source_cache() -> Path:
    """Where exported revisions are kept: kmicro's cache (the checkout's .cache, or
    ~/.cache/kmicro when kmicro runs installed)."""
    return cache_home() / "src"


def envs_home() -> Path:
    """Where `kmicro env` puts environments: $KMICRO_ENVS, else ~/.local/share/kmicro/envs."""
    explicit = os.environ.get("KMICRO_ENVS")
    if explicit:
        return Path(explicit)
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "kmicro" / "envs"


# Never in a stack's pins (the checkout goes on the workers' PYTHONPATH), so --set adds it:
# a stack with kmicro installed runs that kmicro in its workers (Stack.own_kmicro).
ADDED = ("kmicro",)


def requirements(base_pins: list, overrides: list) -> list:
    """The base's pinned lines with each overridden package replaced (kmicro: added)."""
    pinned = {normalise(line.split("==")[0]) for line in base_pins}
    unknown = [o.package for o in overrides if o.key not in pinned and o.key not in ADDED]
    if unknown:
        raise UsageError(f"--set {unknown[0]}: not a package of the base stack; valid: "
                         + ", ".join(sorted(line.split("==")[0] for line in base_pins + ["kmicro"])))
    swapped = {o.key: o.requirement for o in overrides}
    added = [o.requirement for o in overrides if o.key in ADDED and o.key not in pinned]
    return [swapped.get(normalise(line.split("==")[0]), line) for line in base_pins] + added


def build(env_dir: Path, base_python: str, lines: list, overrides: list, legacy: bool):
    """Create `env_dir` (replacing an older one) and install `lines` into it."""
    if env_dir.exists():
        shutil.rmtree(env_dir)
    reqs = env_dir.parent / f".{env_dir.name}.requirements.txt"
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    reqs.write_text("\n".join(lines) + "\n")
    try:
        uv = _uv()
        if uv and not legacy:
            _uv_install(uv, env_dir, base_python, reqs, overrides)
        else:
            _pip_install(env_dir, base_python, reqs, legacy)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise UsageError(f"installing into {env_dir} failed: {_last_line(exc)}") from None
    finally:
        reqs.unlink()


def _uv():
    here = Path(sys.executable).parent / "uv"
    return str(here) if here.exists() else shutil.which("uv")


def _uv_install(uv, env_dir, base_python, reqs, overrides):
    run = _runner()
    run([uv, "venv", "-q", "--python", base_python, str(env_dir)])
    fresh = [a for o in overrides if o.source for a in ("--reinstall-package", o.package)]
    # uv does not read pip's configuration: hand it the wheels pip finds (the CPU torch here).
    links = [a for d in os.environ.get("PIP_FIND_LINKS", "").split() for a in ("--find-links", d)]
    # Compiled bytecode: every worker of the stack starts in about a third of the time where
    # Python may not write .pyc files itself (PYTHONDONTWRITEBYTECODE); pip compiles anyway.
    run([uv, "pip", "install", "-q", "--compile-bytecode", "--python",
         str(env_dir / "bin" / "python"), "-r", str(reqs), *links, *fresh])


def _pip_install(env_dir, base_python, reqs, legacy):
    run = _runner()
    run([base_python, "-m", "venv", str(env_dir)])
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    if legacy:  # Theano's and old Keras' sdists need the build tools of their time
        run([*pip, "install", "pip<24", "setuptools<60", "wheel"])
    run([*pip, "install", "-r", str(reqs)])


def _runner():
    def run(cmd):
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return run


def _last_line(exc: subprocess.CalledProcessError) -> str:
    lines = [ln.strip() for ln in (exc.stderr or exc.stdout or "").splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("WARNING", "warning"))]
    return (useful or lines or [f"exit code {exc.returncode}"])[-1][:300]
