"""kmicro.diagnose from real compiled Keras 2 and Keras 1 graphs (Theano on the CPU; TF1 and
keras1-theano when `make legacy` built them)."""
import json

import pytest
from rich.console import Console

from conftest import load

from kmicro.analysis import diagnose
from kmicro.harness import runner
from kmicro.core import stacks

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("diagnose")


def _stack(name):
    stack = stacks.STACKS[name]
    if not stack.installed:
        pytest.skip(f"stack {name} is not installed (make .envs/{name}/.installed)")
    return stack


@pytest.fixture(scope="module")
def theano_records():
    # quick: predict on 64 samples; no optimizer_excluding=inplace comparison (its own compile).
    return diagnose.run([_stack("theano")], runner.Options(quick=True), parts=("bn", "model"))


def _by_case(records):
    return {(r["data_format"], r["case"].split("@")[0]): r for r in records}


def _finding(record, name):
    return next(f for f in record["findings"] if f["name"] == name)


def test_records_are_json_and_carry_the_contract_fields(theano_records):
    json.dumps(theano_records)
    for r in theano_records:
        for key in ("stack", "backend", "versions", "device", "case", "data_format", "status",
                    "error", "findings"):
            assert key in r
        assert r["status"] == "ok", r["error"]
        assert all(f["meaning"] for f in r["findings"])


def test_theano_bn_graph_is_cpu_reductions(theano_records):
    cl = _by_case(theano_records)[("channels_last", "batchnorm()")]
    facts = cl["facts"]
    assert facts["forward_train.batch_reductions"] > 0
    assert facts["backward.batch_reductions"] > facts["forward_train.batch_reductions"]
    assert facts["forward_train.gpu_ops"] == facts["backward.gpu_ops"] == 0
    assert facts["backward.cudnn_bn_ops"] == 0
    assert cl["device"] == "cpu"
    assert _finding(cl, "bn_path")["level"] == "warn"
    assert "channels_first" in _finding(cl, "bn_path")["meaning"]
    cf = _by_case(theano_records)[("channels_first", "batchnorm()")]
    assert cf["facts"]["bn_axes"] == [0, 2, 3] and cf["facts"]["backward.batch_reductions"] > 0


def test_theano_predict_runs_the_training_branch(theano_records):
    model = _by_case(theano_records)[("channels_last", diagnose.MODEL_CASE)]
    facts = model["facts"]["default"]
    assert facts["bn_layers"] == 4
    assert facts["reductions_executed_per_batch"] > 0
    assert facts["predict_s"] > 0
    assert _finding(model, "predict_runs_training_branch")["value"].startswith("yes")


def test_gpu_request_on_a_cpu_graph_is_loud():
    records = diagnose.run([_stack("theano")], runner.Options(device="gpu"), parts=("bn",))
    assert records and {r["status"] for r in records} == {"error"}
    assert all("GPU" in r["error"] or "gpu" in r["error"] for r in records)
    assert all(_finding(r, "device")["level"] == "error" for r in records)


def test_table_renders_findings_and_non_keras2_stacks(theano_records):
    records = theano_records + diagnose.run([stacks.STACKS["jax"]], runner.Options())
    console = Console(record=True, width=200)
    console.print(diagnose.table(records))
    text = console.export_text()
    assert "bn_path" in text and "predict_runs_training_branch" in text and "unsupported" in text


def test_tf1_channels_last_bn_is_fused_channels_first_is_not():
    records = diagnose.run([_stack("tf1")], runner.Options(), parts=("bn",))
    by = _by_case(records)
    assert by[("channels_last", "batchnorm()")]["facts"]["backward.fused_bn_ops"]
    assert not by[("channels_first", "batchnorm()")]["facts"]["backward.fused_bn_ops"]


@pytest.fixture(scope="module")
def keras1_records():
    return diagnose.run([_stack("keras1-theano")], runner.Options(quick=True),
                        parts=("bn", "model"))


def test_keras1_bn_is_generic_reductions_without_a_bn_op(keras1_records):
    # Theano 0.8.2 has no batch_normalization_train: Keras 1.2.1's BatchNormalization(mode=0)
    # is x.mean/x.var (Sum reductions) and elementwise ops, in both layouts.
    by = _by_case(keras1_records)
    for data_format in ("channels_last", "channels_first"):
        r = by[(data_format, "batchnorm()")]
        assert r["status"] == "ok", r["error"]
        assert r["versions"]["keras"] == "1.2.1" and r["device"] == "cpu"
        facts = r["facts"]
        assert facts["theano_bn_train_op"] is False
        classes = facts["backward.op_classes"]
        assert classes.get("Sum", 0) > 0 and classes.get("Elemwise", 0) > 0
        assert not [c for c in classes if "BatchNorm" in c or "Dnn" in c or "Gpu" in c]
        assert 0 < facts["forward_train.batch_reductions"] < facts["backward.batch_reductions"]
        path = _finding(r, "bn_path")
        assert "no BN op" in path["value"] and "batch_normalization_train" in path["meaning"]
        assert "Sum x" in _finding(r, "bn_op_classes")["value"]
        assert _finding(r, "device")["value"].startswith("cpu")
    assert _finding(by[("channels_last", "batchnorm()")], "bn_path")["level"] == "warn"


def test_keras1_predict_is_diagnosed_like_keras2(keras1_records):
    model = _by_case(keras1_records)[("channels_last", diagnose.MODEL_CASE)]
    assert model["status"] == "ok", model["error"]
    facts = model["facts"]["default"]
    assert facts["bn_layers"] == 4 and facts["predict_s"] > 0
    assert _finding(model, "predict_runs_training_branch")["value"].startswith(
        "yes" if facts["reductions_executed_per_batch"] else "no")


def test_cli_diagnoses_keras1_and_says_keras3_is_unsupported(kmicro, tmp_path):
    _stack("keras1-theano")
    out = tmp_path / "d.json"
    p = kmicro("diagnose", "--stacks", "keras1-theano,jax", "--quick", "--json", str(out))
    assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
    by_stack = {}
    for r in load(out):
        by_stack.setdefault(r["stack"], []).append(r)
    assert {r["status"] for r in by_stack["keras1-theano"]} == {"ok"}
    (jax,) = by_stack["jax"]
    assert jax["status"] == "unsupported" and "keras1-theano" in jax["error"]


@pytest.mark.parametrize("fault, status, text", [("hang", "timeout", "timeout of 5 s"),
                                                 ("die", "error", "exited with code 17")])
def test_hung_or_crashed_inspection_is_a_record(fault, status, text, monkeypatch):
    stack = _stack("theano")
    monkeypatch.setenv("KMICRO_FAULT", f"{fault}:graph")
    records = diagnose.run([stack], runner.Options(timeout_s=5), parts=("bn",))
    assert len(records) == 2 and {r["status"] for r in records} == {status}
    assert all(text in r["error"] and r["kind"] == "diagnose" for r in records)
