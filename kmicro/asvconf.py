"""asv.conf.json, written from kmicro's stacks and pinned requirements (one declaration).

  python -m kmicro.asvconf > asv.conf.json          # what is committed (a test compares)
  python -m kmicro.asvconf --vary keras=3.15.1,3.14.0 --backends jax -o asv.versions.conf.json

Every asv environment is a stack family: the Keras 3 environment (KERAS_BACKEND varies at run
time only, env_nobuild, so one environment serves tensorflow, jax, torch and numpy) and one
`include` entry per default Keras 2 stack. Only Keras and the packages --vary names are in
the matrix, so environment names stay short (py3.11-keras3.15.1-KERAS_BACKENDjax); every
other package is installed exactly as pinned by the install step (pip --no-deps), marked with
its family's Python. `--vary` writes a second config over the same results, so other
versions of one package land in the same history as separate environments.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys

from kmicro.core import stacks
from kmicro.core.errors import UsageError

# In requirements/keras3.txt for the test and benchmark tools, not for the benchmarked stack.
TOOLING = {"asv", "asv-runner", "build", "click", "distlib", "execnet", "grimp", "import-linter",
           "iniconfig", "json5", "lazy-importer", "pluggy", "pympler", "pyproject-hooks", "pytest",
           "pytest-xdist", "python-discovery", "tabulate", "uv", "virtualenv"}
# What only one Keras 3 backend needs: dropped by --lean from a config that leaves it out.
# Keras' numpy backend imports jax (keras/src/backend/numpy/math.py, nn.py).
BACKEND_PACKAGES = {"tensorflow": {"tensorflow-cpu"}, "jax": {"jax", "jaxlib"},
                    "torch": {"torch"}, "numpy": {"jax", "jaxlib"}}
# kmicro's wheel is built with --no-build-isolation (no registry round trip per commit): PEP 621
# metadata needs setuptools >= 61. asv itself installs pyproject.toml's build requirement with
# --upgrade, i.e. the newest setuptools for the environment's Python: pinning that release keeps
# the environment's name (and the versions recorded with its results) true.
SETUPTOOLS = {"3.11": "84.2.1", "3.9": "82.0.1"}
HEADER = """\
// Written by `python -m kmicro.asvconf` from kmicro/core/stacks.py and requirements/*.txt:
// edit those and regenerate (tests/test_asv.py fails when this file is stale). See docs/guide-asv.md.
"""


def pins(requirements) -> dict:
    """{normalised name: version} of a pinned requirements file."""
    out = {}
    for line in (stacks.ROOT / requirements).read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def install_pins(conf) -> dict:
    """{python version or None: {name: version}} installed by a config's install step."""
    found = {}
    for arg in shlex.split(conf["install_command"][0]):
        requirement, _, marker = arg.partition(";")
        if "==" not in requirement:
            continue  # the command itself
        name, version = requirement.split("==")
        python = re.search(r"'([0-9.]+)'", marker).group(1) if marker else None
        found.setdefault(python, {})[name] = version
    return found


# Always in an environment's name (with what --vary adds): the rest of the exact pins are
# installed by the install step, so names stay short and readable (py3.11-keras3.15.1-...).
NAMED = ("keras",)


def _keras3_pins(backends, lean) -> dict:
    needed = set().union(*(BACKEND_PACKAGES[b] for b in backends))
    dropped = set().union(*BACKEND_PACKAGES.values()) - needed if lean else set()
    pinned_ = {k: v for k, v in pins(_family("keras3").requirements).items()
               if k not in TOOLING and k not in dropped}
    return {**pinned_, "setuptools": SETUPTOOLS[_family("keras3").python]}


def _family(family) -> stacks.Stack:
    return next(s for s in stacks.STACKS.values() if s.family == family)


def _keras2_stacks() -> list:
    return [s for s in stacks.STACKS.values() if s.family == "keras2" and s.default]


def _keras2_pins(stack) -> dict:
    return {**pins(stack.requirements), "setuptools": SETUPTOOLS[stack.python]}


def _named(pinned_, vary=None) -> dict:
    """The matrix `req`: NAMED packages at their pin, varied ones at each of their versions."""
    req = {name: pinned_[name] for name in NAMED if name in pinned_}
    for name, versions in (vary or {}).items():
        if name not in pinned_:
            raise UsageError(f"{name!r} is not pinned in the Keras 3 environment; "
                             f"valid: {', '.join(sorted(pinned_))}")
        req[name] = versions
    return req


def _install_pins(families) -> str:
    """One `pip install --no-deps` of every exact pin not in an environment's name, each
    marked with its family's Python so one command serves every environment."""
    args = []
    for python, pinned_, named in families:
        marker = f"; python_version == '{python}'" if len(families) > 1 else ""
        args += [f'"{name}=={version}{marker}"' for name, version in sorted(pinned_.items())
                 if name not in named]
    return "in-dir={env_dir} python -m pip install -q --no-deps " + " ".join(args)


def config(backends=None, vary=None, keras2=True, lean=False) -> dict:
    """The asv config dict. Environment names carry only NAMED and --vary packages; the
    exact pins of everything else are installed per commit by the install step."""
    keras3 = [s for s in stacks.STACKS.values() if s.family == "keras3"]
    names = [s.backend for s in keras3]
    backends = backends or names
    unknown = [b for b in backends if b not in names]
    if unknown:
        raise UsageError(f"unknown backend {unknown[0]!r}; valid: {', '.join(names)}")
    pinned3 = _keras3_pins(backends, lean)
    req = _named(pinned3, vary)
    families = [(keras3[0].python, pinned3, set(req))]
    includes = []
    for s in _keras2_stacks() if keras2 else []:
        pinned2 = _keras2_pins(s)
        named2 = _named(pinned2)
        families.append((s.python, pinned2, set(named2)))
        includes.append({"python": s.python, "req": named2,
                         "env_nobuild": {"KERAS_BACKEND": s.backend}})
    return {
        "version": 1,
        "project": "kmicro",
        "project_url": "https://example.invalid/kmicro",
        "repo": ".",
        "branches": ["main"],
        "environment_type": "virtualenv",
        "pythons": [keras3[0].python],
        # Build once per commit without touching the registry; install without resolving.
        "build_command": ["python -m pip wheel --no-deps --no-build-isolation "
                          "-w {build_cache_dir} {build_dir}"],
        "install_command": [_install_pins(families),
                            "in-dir={env_dir} python -m pip install --no-deps {wheel_file}"],
        "matrix": {"req": req, "env_nobuild": {"KERAS_BACKEND": list(backends)}},
        "include": includes,
        "benchmark_dir": "benchmarks",
        "env_dir": ".asv/env",
        "results_dir": ".asv/results",
        "html_dir": ".asv/html",
    }


def render(conf) -> str:
    return HEADER + json.dumps(conf, indent=4) + "\n"


def parse_vary(text) -> dict:
    """'keras=3.15.1,3.14.0' -> {'keras': ['3.15.1', '3.14.0']}."""
    name, _, versions = text.partition("=")
    values = [v.strip() for v in versions.split(",") if v.strip()]
    if not name or len(values) < 2:
        raise UsageError(f"--vary {text!r}: expected PACKAGE=V1,V2[,...]")
    return {name.strip().lower().replace("_", "-"): values}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kmicro.asvconf", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vary", help="PACKAGE=V1,V2,...: one Keras 3 environment per version")
    p.add_argument("--backends", help="comma list of Keras 3 backends (default: all)")
    p.add_argument("--no-keras2", action="store_true", help="leave the Keras 2 stacks out")
    p.add_argument("--lean", action="store_true",
                   help="drop the packages of the backends not in --backends (a smaller, "
                        "separate environment)")
    p.add_argument("-o", "--output", help="write here instead of standard output")
    args = p.parse_args(argv)
    try:
        backends = [b for b in (args.backends or "").split(",") if b]
        text = render(config(backends, parse_vary(args.vary) if args.vary else None,
                             keras2=not args.no_keras2, lean=args.lean))
    except UsageError as exc:
        print(f"kmicro.asvconf: {exc}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
