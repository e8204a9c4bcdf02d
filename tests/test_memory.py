"""Peak bytes per pass, on the real Keras 3 backends: a figure is at least what the pass must
hold by construction (its output, and for fwd+bwd its gradients too) and within a stated factor
of it; a stack that cannot tell says why; tables and the HTML report show the figures."""
import numpy as np
import pytest
from conftest import ROOT, load
from known_memory import CONV, DENSE, FLOAT32, FLOORS, within

from kmicro.core import records, stacks
from kmicro.harness import runner
from kmicro.report import findings, html, tables


def run(stack_names, case_list, passes):
    done = []
    runner.run(stacks.resolve(stack_names), case_list, passes, runner.Options(quick=True),
               done.append)
    return done


@pytest.mark.parametrize("stack", ["jax", "torch", "numpy"])
def test_peak_bytes_hold_at_least_what_the_pass_must(stack):
    passes = ("forward",) if stack == "numpy" else ("forward", "backward")
    for r in run([stack], [DENSE, CONV], passes):
        assert r["status"] == "ok", r["error"]
        assert within(r["peak_bytes"], FLOORS[r["case"]][r["pass"]]), (r["case"], r["pass"], r)
        assert r["memory_method"] and not r["memory_method"].startswith("not measured")


def test_a_stack_that_cannot_tell_says_why():
    (r,) = run(["tensorflow"], [DENSE], ("forward",))
    assert r["status"] == "ok" and r["median_s"] > 0
    assert r["peak_bytes"] is None
    assert r["memory_method"].startswith("not measured: TensorFlow keeps allocator statistics")


def _record(stack, pass_name, peak, method="counted"):
    return records.new("op", {"stack": stack, "device": "cpu"}, DENSE.id, pass_name, op="dense",
                       layer="Dense", family="core", input_shape=[8, 32], data_format=None,
                       status="ok", median_s=1e-4, iqr_s=1e-6, peak_bytes=peak,
                       memory_method=method)


def test_memory_tables_findings_and_report_render():
    made = [_record("jax", "backward", 16384), _record("torch", "backward", 49152),
            _record("tensorflow", "backward", None, "not measured: no statistics")]
    (table,) = tables.ops_tables(made, "memory")
    cells = [str(c) for col in table.columns for c in col._cells]
    assert "16 KiB (1x)" in cells and "48 KiB (3x)" in cells and "not measured" in cells
    (finding,) = [f.text for f in findings.op_findings(made) if "holds" in f.text]
    assert finding.startswith("dense: torch's fwd+bwd of dense units=64 @ 8x32 holds 3x jax's")
    page = html.render(made)
    assert "Peak bytes one call holds" in page and "48 KiB (3x)" in page
    assert np.isclose(tables.metric_value(made[1], "memory"), 49152)


def test_memory_of_records_from_before_is_a_one_line_error(kmicro, tmp_path):
    old = ROOT / "docs" / "results" / "gpu-h200-2026-11-29" / "gpu.json"
    done = kmicro("report", str(old), "--metric", "memory")
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.strip().splitlines() == [
        "kmicro: error: --metric memory: these records have no memory figure (written before kmicro "
        "measured memory); run kmicro ops again for it"]


def test_a_train_step_holds_at_least_its_gradients(kmicro, tmp_path):
    out = tmp_path / "m.json"
    done = kmicro("models", "--stacks", "torch,jax", "--models", "resnet_nobn", "--steps", "2",
                  "--json", str(out))
    assert done.returncode == 0, done.stderr
    got = {r["stack"]: r for r in load(out)}
    torch = got["torch"]
    assert torch["status"] == "ok" and torch["params"] > 0
    assert torch["peak_bytes"] >= torch["params"] * FLOAT32, torch  # a gradient per weight
    assert "step holds" in done.stdout
    jax = got["jax"]
    assert jax["status"] == "ok" and jax["peak_bytes"] >= jax["params"] * FLOAT32, jax
    assert jax["memory_method"].startswith("XLA's memory analysis of the model's train step")


def test_a_theano_train_step_is_read_from_its_memory_profile(kmicro, tmp_path):
    out = tmp_path / "m.json"
    done = kmicro("models", "--stacks", "theano", "--models", "resnet_nobn", "--steps", "2",
                  "--json", str(out))
    assert done.returncode == 0, done.stderr
    (theano,) = load(out)
    assert theano["status"] == "ok", theano["error"]
    # Theano's KB are whole: up to 1 KiB under a gradient per weight
    assert theano["peak_bytes"] + 1023 >= theano["params"] * FLOAT32, theano
    assert theano["memory_method"].startswith("Theano's memory profile of one call")


def test_theano_reads_its_memory_profile_per_call():
    """Theano prints whole KB, rounded down: its figure may sit up to 1 KiB under the floor."""
    for r in run(["theano"], [DENSE, CONV], ("forward", "backward")):
        assert r["status"] == "ok", r["error"]
        floor = FLOORS[r["case"]][r["pass"]]
        assert r["peak_bytes"] % 1024 == 0 and within(r["peak_bytes"] + 1023, floor), r
        assert r["memory_method"].startswith("Theano's memory profile of one call")
