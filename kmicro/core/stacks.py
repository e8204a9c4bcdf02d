"""The stacks: one interpreter + pinned packages + one Keras backend each.

This is kmicro's single declaration of stacks; the Makefile's environments and
asv.conf.json's matrix must agree with it (tests/test_stacks.py checks).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kmicro.core.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
DEVICES = ("auto", "cpu", "gpu")  # --device: where a stack's work must run
JIT = ("auto", "on", "off")  # --jit: auto = what a Keras train step does per backend


@dataclass(frozen=True)
class Stack:
    name: str
    backend: str  # KERAS_BACKEND
    family: str  # adapter: keras3 | keras2
    env_dir: str  # virtual environment, relative to the repository root
    python: str  # interpreter version the environment is built with
    requirements: str  # pinned requirements file
    default: bool = True  # part of the default comparison when installed
    backward: bool = True
    env: tuple = field(default=())  # extra environment variables (name, value)

    @property
    def interpreter(self) -> Path:
        return ROOT / self.env_dir / "bin" / "python"

    @property
    def installed(self) -> bool:
        return self.interpreter.exists()


# Theano compiles C per graph: its cache lives in the project so a second run is fast.
# {cache} is filled in per stack by worker_env. Theano is CPU-only here (no pygpu on PyPI).
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
    ]
}


def resolve(names=None) -> list:
    """Stacks by name (comma list or iterable); default: every installed default stack."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        return [s for s in STACKS.values() if s.default and s.installed]
    unknown = [n for n in names if n not in STACKS]
    if unknown:
        raise UsageError(f"unknown stack {unknown[0]!r}; valid stacks: {', '.join(STACKS)}")
    return [STACKS[n] for n in names]


def worker_env(stack: Stack, device: str) -> dict:
    """Environment of a worker process for this stack and device choice."""
    env = dict(os.environ)
    cache = ROOT / ".cache" / stack.name
    env.update({k: v.format(cache=cache) for k, v in stack.env})
    env["KERAS_BACKEND"] = stack.backend
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if device == "cpu":
        # Hide GPUs so no backend can place work on one.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    return env
