"""kmicro's stack declaration and the Makefile must agree (asv.conf.json: tests/test_asv.py)."""
from conftest import ROOT

from kmicro.core import stacks


def test_makefile_builds_every_keras2_stack_with_its_python():
    makefile = (ROOT / "Makefile").read_text()
    for s in stacks.STACKS.values():
        assert (ROOT / s.requirements).exists() or s.name == "theano-2019", s.requirements
        if s.family == "keras2":
            assert f"PY_{s.name} := {s.python}" in makefile
