"""kmicro's stack declaration, the Makefile and asv.conf.json must agree."""
import json
import re

from conftest import ROOT

from kmicro import stacks


def _asv_conf():
    text = (ROOT / "asv.conf.json").read_text()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def test_asv_matrix_backends_are_the_keras3_stacks():
    backends = _asv_conf()["matrix"]["env_nobuild"]["KERAS_BACKEND"]
    assert backends == [s.backend for s in stacks.STACKS.values() if s.family == "keras3"]


def test_asv_pins_match_the_requirements_file():
    pins = dict(line.split("==") for line in (ROOT / "requirements/keras3.txt").read_text()
                .splitlines() if "==" in line and not line.startswith("#"))
    pins = {k.lower().replace("_", "-"): v for k, v in pins.items()}
    for name, version in _asv_conf()["matrix"]["req"].items():
        if name != "setuptools":
            assert pins[name] == version, name


def test_makefile_builds_every_keras2_stack_with_its_python():
    makefile = (ROOT / "Makefile").read_text()
    for s in stacks.STACKS.values():
        assert (ROOT / s.requirements).exists() or s.name == "theano-2019", s.requirements
        if s.family == "keras2":
            assert f"PY_{s.name} := {s.python}" in makefile
