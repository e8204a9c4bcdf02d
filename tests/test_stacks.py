"""kmicro's stack declaration and the Makefile must agree (asv.conf.json: tests/test_asv.py)."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from kmicro.core import stacks


def test_makefile_builds_every_keras2_stack_with_its_python():
    makefile = (ROOT / "Makefile").read_text()
    for s in stacks.STACKS.values():
        assert (ROOT / s.requirements).exists() or s.name == "theano-2019", s.requirements
        if s.family == "keras2":
            assert f"PY_{s.name} := {s.python}" in makefile


def test_asv_runs_with_the_allocator_policy_of_the_workers():
    makefile = (ROOT / "Makefile").read_text()
    assert f"MALLOC_TUNABLES := {stacks.MALLOC_TUNABLES}\n" in makefile
    assert 'GLIBC_TUNABLES="$(MALLOC_TUNABLES)"' in makefile


def test_workers_run_with_fixed_malloc_thresholds_unless_told_otherwise(monkeypatch):
    stack = stacks.resolve(["numpy"])[0]
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert stacks.worker_env(stack, "cpu")["GLIBC_TUNABLES"] == stacks.MALLOC_TUNABLES
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")  # the user's own wins
    assert stacks.worker_env(stack, "cpu")["GLIBC_TUNABLES"] == "glibc.malloc.tcache_count=0"


# A thread other than the main one fills its arena's heap, then allocates and frees a 4 MiB
# buffer over and over, as a framework's compute thread does each step: the minor page faults
# per buffer. With the thresholds alone the buffer lands in a fresh heap that each free unmaps.
_THREAD_BUFFERS = """
import resource, threading
def step(out):
    held = [b"h" * (1 << 20) for _ in range(60)]
    first = b"x" * (4 << 20)  # the first buffer faults its pages in whatever the policy
    del first
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(20):
        buf = b"x" * (4 << 20)
        del buf
    out.append((resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before) / 20)
out = []
thread = threading.Thread(target=step, args=(out,))
thread.start(); thread.join()
print(out[0])
"""


def _faults_per_buffer(tunables) -> float:
    env = dict(os.environ, GLIBC_TUNABLES=tunables)
    run = subprocess.run([sys.executable, "-c", _THREAD_BUFFERS], env=env, capture_output=True,
                         text=True, check=True)
    return float(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_threads_step_buffers_are_reused_not_faulted_in_again():
    pages = (4 << 20) // os.sysconf("SC_PAGE_SIZE")
    thresholds_only = stacks.MALLOC_TUNABLES.replace(":glibc.malloc.arena_max=1", "")
    assert _faults_per_buffer(thresholds_only) > pages / 2  # the failure this setting prevents
    assert _faults_per_buffer(stacks.MALLOC_TUNABLES) < pages / 10


def test_theano_compiles_into_a_per_user_cache_every_checkout_shares(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    flags = stacks.worker_env(stacks.STACKS["theano"], "cpu")["THEANO_FLAGS"]
    assert f"compiledir={tmp_path / 'kmicro' / 'compiled' / 'theano'}" in flags
    assert str(ROOT) not in flags  # a fresh clone (CI's) would compile everything again
