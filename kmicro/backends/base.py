"""What every adapter hands the worker (framework-free, shared by Keras 2 and 3 adapters)."""
from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Callable


class UnsupportedPass(Exception):
    """This stack cannot run this pass (e.g. backward on the numpy backend)."""


class DeviceUnavailable(Exception):
    """A GPU was asked for and this stack sees none."""


@dataclass
class Prepared:
    """A compiled, ready-to-time pass of one case."""

    step: Callable  # runs the pass once, returns the backend's outputs
    sync: Callable  # blocks until the outputs are computed, returns them
    outputs: Callable  # backend outputs -> (y, grads or None) as NumPy arrays
    device_of: Callable  # backend outputs -> "cpu" | "gpu": where they actually live


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"
