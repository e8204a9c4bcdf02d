"""kmicro.diagnose from real compiled Keras 2 graphs (Theano on the CPU, TF1 when installed)."""
import json

import pytest
from rich.console import Console

from kmicro.analysis import diagnose
from kmicro.harness import runner
from kmicro.core import stacks


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


@pytest.mark.parametrize("fault, status, text", [("hang", "timeout", "timeout of 5 s"),
                                                 ("die", "error", "exited with code 17")])
def test_hung_or_crashed_inspection_is_a_record(fault, status, text, monkeypatch):
    stack = _stack("theano")
    monkeypatch.setenv("KMICRO_FAULT", f"{fault}:graph")
    records = diagnose.run([stack], runner.Options(timeout_s=5), parts=("bn",))
    assert len(records) == 2 and {r["status"] for r in records} == {status}
    assert all(text in r["error"] and r["kind"] == "diagnose" for r in records)
