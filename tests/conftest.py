import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KMICRO = [sys.executable, "-m", "kmicro.cli"]
# Tests see kmicro as a new user does: no user-defined stacks unless a test adds its own.
os.environ["KMICRO_CONFIG"] = os.path.join(tempfile.mkdtemp(prefix="kmicro-test-"), "stacks.json")


def run_kmicro(*args, env=None, timeout=600):
    """Run the real CLI as a user would; returns CompletedProcess (text)."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([*KMICRO, *args], capture_output=True, text=True, cwd=ROOT,
                          env=full_env, timeout=timeout)


def load(path):
    return json.loads(Path(path).read_text())


@pytest.fixture
def kmicro():
    return run_kmicro
