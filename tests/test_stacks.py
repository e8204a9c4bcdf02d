"""kmicro's stack declaration and the Makefile must agree (asv.conf.json: tests/test_asv.py)."""
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
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")  # the user's own wins
    assert stacks.worker_env(stack, "cpu")["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=1"


def test_theano_compiles_into_a_per_user_cache_every_checkout_shares(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    flags = stacks.worker_env(stacks.STACKS["theano"], "cpu")["THEANO_FLAGS"]
    assert f"compiledir={tmp_path / 'kmicro' / 'compiled' / 'theano'}" in flags
    assert str(ROOT) not in flags  # a fresh clone (CI's) would compile everything again
