"""The Keras 1 adapter: its layer names, and the keras1-theano stack (report 000's Keras 1.2.1 +
Theano 0.8.2 on Python 3.6) through the real runner and worker, on small shapes."""
import subprocess

import pytest
from test_keras2 import _not_ok, _one_case_per_op, _run, _stack

from kmicro.backends.keras1.names import translate
from kmicro.core import cases, ops, stacks
from conftest import KMICRO, ROOT, load


def test_keras2_spellings_in_keras1_words():
    assert translate("Conv2D", {"filters": 32, "kernel_size": 3, "padding": "same",
                                "strides": 2, "data_format": "channels_first"}) == (
        "Convolution2D", {"nb_filter": 32, "nb_row": 3, "nb_col": 3, "border_mode": "same",
                          "subsample": (2, 2), "dim_ordering": "th"})
    assert translate("BatchNormalization", {"axis": 1}) == (
        "BatchNormalization", {"mode": 0, "axis": 1})
    assert translate("Dense", {"units": 10, "activation": "softmax"}) == (
        "Dense", {"output_dim": 10, "activation": "softmax"})
    assert translate("Dropout", {"rate": 0.25}) == ("Dropout", {"p": 0.25})
    assert translate("Add", {}) == ("Merge", {"mode": "sum"})
    assert translate("Flatten", {"data_format": "channels_last"}) == ("Flatten", {})


def test_what_keras1_cannot_say_is_named():
    with pytest.raises(ValueError, match="dilation_rate"):
        translate("Conv2D", {"filters": 8, "kernel_size": 3, "dilation_rate": 2})
    with pytest.raises(ValueError, match="data_format='channels_first'"):
        translate("Flatten", {"data_format": "channels_first"})  # Keras 2 reorders; 1 cannot
    with pytest.raises(ValueError, match="Keras 1 has no SeparableConv2D"):
        translate("SeparableConv2D", {})


def test_worker_code_compiles_on_python_3_6():
    # The keras1-theano stack's worker runs kmicro on Python 3.6: no syntax of later Pythons
    # (`from __future__ import annotations`, :=) in anything a worker imports.
    python = stacks.STACKS["keras1-theano"].interpreter
    if not python.exists():
        pytest.skip("stack keras1-theano is not installed (make legacy)")
    manager_only = {"runner.py", "independent.py", "independent_loop.py"}
    worker_side = [p for p in (ROOT / "kmicro").rglob("*.py")
                   if p.parent.name in ("kmicro", "core", "ops", "harness", "jobs", "backends",
                                        "keras2", "keras1", "models")
                   and p.name not in manager_only and p.name != "asvconf.py"]
    code = "import sys\nfor f in sys.argv[1:]: compile(open(f).read(), f, 'exec')"
    p = subprocess.run([str(python), "-c", code, *map(str, worker_side)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-800:]


def test_keras1_every_op_and_layout_matches_the_reference():
    records = _run(_stack("keras1-theano"), _one_case_per_op())
    assert len(records) == len(ops.SEED_OPS) * len(cases.PASSES) * len(cases.DATA_FORMATS)
    # Keras 1's Flatten has no data_format: it flattens channels_first in memory order, which
    # Keras 2 and the reference reorder first. Said, not guessed.
    unsupported = [r for r in records if r["status"] == "unsupported"]
    assert {(r["op"], r["data_format"]) for r in unsupported} == {("flatten", "channels_first")}
    assert not _not_ok([r for r in records if r not in unsupported])
    assert {r["versions"]["keras"] for r in records} == {"1.2.1"}
    assert {r["versions"]["theano"] for r in records} == {"0.8.2"}
    assert {r["python"][:3] for r in records} == {"3.6"}
    assert {r["device"] for r in records} == {"cpu"}


def test_keras1_trains_report_000s_model(tmp_path):
    # Report 000's cifar10_cnn, built from the zoo in Keras 1's words, with its SGD.
    _stack("keras1-theano")
    out = tmp_path / "models.json"
    p = subprocess.run([*KMICRO, "models", "--stacks", "keras1-theano", "--models",
                        "cifar10_cnn", "--steps", "3", "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
    (r,) = [r for r in load(out) if r["kind"] == "model"]
    assert r["status"] == "ok" and r["step_s"] > 0 and r["augment"] is True
    assert r["versions"]["keras"] == "1.2.1" and "nesterov=True" in r["optimizer"]
