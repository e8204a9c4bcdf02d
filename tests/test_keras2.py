"""The Keras 2 adapter through the real runner and worker (Theano / TF1 on small shapes)."""
import pytest

from kmicro.core import cases, ops, stacks
from kmicro.harness import runner

SHAPES = [(2, 8, 8, 4), (2, 8)]  # >= 8 so AveragePooling2D(8) has a window


def _one_case_per_op(ops=None):
    """Every op once per layout: the catalog's first case of each op, on the small shapes."""
    chosen = []
    for data_format in cases.DATA_FORMATS:
        seen = set()
        for case in cases.select(ops, data_format, SHAPES):
            if case.op not in seen:
                seen.add(case.op)
                chosen.append(case)
    return chosen


def _stack(name):
    stack = stacks.STACKS[name]
    if not stack.installed:
        pytest.skip(f"stack {name} is not installed (make .envs/{name}/.installed)")
    return stack


def _run(stack, case_list, **options):
    records = []
    runner.run([stack], case_list, cases.PASSES, runner.Options(quick=True, **options),
               records.append)
    return records


def _not_ok(records):
    return [(r["case"], r["pass"], r["status"], r["error"]) for r in records if r["status"] != "ok"]


def test_theano_every_op_and_layout_matches_the_reference():
    records = _run(_stack("theano"), _one_case_per_op())
    assert len(records) == len(ops.SEED_OPS) * len(cases.PASSES) * len(cases.DATA_FORMATS)
    assert not _not_ok(records)
    assert {r["device"] for r in records} == {"cpu"}
    assert all(r["max_rel_err"] <= 1e-3 for r in records)
    assert {r["versions"]["keras"] for r in records} == {"2.3.1"}
    assert all("blas.ldflags=-lopenblas" in r["theano_flags"] for r in records)  # recorded


def test_theano_info_names_the_flags_that_matter():
    info = runner.probe(_stack("theano"), runner.Options())
    assert info["versions"]["theano"] == "1.0.5" and info["device"] == "cpu"
    assert "device=cpu" in info["theano_flags"] and "blas.ldflags=-lopenblas" in info["theano_flags"]
    assert info["gpu_visible"] is False


def test_theano_gpu_request_is_an_error_not_a_cpu_run():
    records = _run(_stack("theano"), cases.select(["batchnorm"], shapes=[SHAPES[0]]), device="gpu")
    assert records and {r["status"] for r in records} == {"error"}
    assert all("GPU" in r["error"] for r in records)


@pytest.mark.parametrize("name", ["tf1", "theano-2019"])
def test_legacy_stacks_conv_bn_dropout(name):
    # The layers whose Keras 2 code differs per backend (kernel flip, BN path, learning phase).
    records = _run(_stack(name), _one_case_per_op(["conv2d", "batchnorm", "dropout"]))
    assert len(records) == 3 * len(cases.PASSES) * len(cases.DATA_FORMATS)
    assert not _not_ok(records)
