"""Findings: sentences generated from records, each only as strong as the records' noise.

The rules run on hand-made records of known values (the text must follow from them); the
command-line tests run real stacks and read what kmicro prints last."""
import copy

import pytest

from conftest import load, run_kmicro
from kmicro.report import findings


def op(stack, case, pass_name, median, iqr=0.0, **extra):
    name = case.split("(")[0]
    fmt = "channels_first" if case.endswith("/cf") else "channels_last" if "/" in case else None
    record = {"kind": "op", "stack": stack, "case": case, "pass": pass_name, "status": "ok",
              "median_s": median, "iqr_s": iqr, "op": name, "config": {}, "data_format": fmt,
              "input_shape": [32, 8, 8, 4], "error": None}
    record.update(extra)
    return record


def texts(found):
    return [f.text for f in found]


def test_widest_gap_per_layer_with_its_numbers():
    recs = [op("jax", "batchnorm()@32x8x8x4/cl", "forward_train", 280e-6, 10e-6),
            op("theano", "batchnorm()@32x8x8x4/cl", "forward_train", 9.2e-3, 0.3e-3),
            op("jax", "batchnorm()@32x8x8x4/cl", "forward", 100e-6, 5e-6),
            op("theano", "batchnorm()@32x8x8x4/cl", "forward", 200e-6, 5e-6)]
    (text,) = [t for t in texts(findings.op_findings(recs)) if t.startswith("batchnorm:")]
    assert "theano is 32.9x slower than jax at fwd (train) of batchnorm defaults @ 32x8x8x4/cl" in text
    assert "(9.2 ms vs 280 µs)" in text and "within noise" not in text
    assert "theano is the slowest in 2 of 2 batchnorm rows" in text


def test_a_gap_inside_the_spread_says_within_noise():
    recs = [op("jax", "dense(units=8)@32x8", "forward", 100e-6, 40e-6),
            op("torch", "dense(units=8)@32x8", "forward", 120e-6, 40e-6)]
    (text,) = [t for t in texts(findings.op_findings(recs)) if t.startswith("dense:")]
    assert "1.2x slower" in text and "(within noise)" in text


def test_dispatch_floor_is_named_only_for_the_stack_far_above_the_others():
    recs = []
    for case, jax_s, tf_s in (("flatten()@32x4x4x16", 10e-6, 230e-6),
                              ("activation(activation=relu)@32x512", 20e-6, 300e-6),
                              ("dense(units=512)@32x2304", 500e-6, 700e-6)):
        recs += [op("jax", case, "forward", jax_s, 1e-6), op("tensorflow", case, "forward", tf_s,
                                                              5e-6)]
    dispatch = [t for t in texts(findings.op_findings(recs)) if "dispatch" in t]
    assert dispatch == [
        "tensorflow: no forward call takes under 230 µs (flatten defaults @ 32x4x4x16), 23x jax's "
        "fastest (10 µs); 2 of its 3 forward cases lie within 1.5x of that floor: per-call "
        "dispatch, not the layer's work, sets their time."]


def test_backward_that_dominates_is_named_with_its_share():
    recs = [op("theano", "conv2d(filters=8)@32x8x8x4/cl", "backward", 4e-3, 0.1e-3,
               backward_s=3.2e-3),
            op("theano", "dense(units=8)@32x8", "backward", 1e-3, 0.1e-3, backward_s=0.4e-3)]
    (text,) = [t for t in texts(findings.op_findings(recs)) if "backward dominates" in t]
    assert text.startswith("theano: backward dominates 1 of 2 fwd+bwd passes")
    assert "80% of 4 ms is backward, 4x the forward" in text


def test_layout_effect_per_stack_beyond_threshold_and_noise():
    recs = []
    for stack, cl, cf in (("theano", 9.2e-3, 10.2e-3), ("torch", 1e-3, 2e-3)):
        recs += [op(stack, "batchnorm()@32x8x8x4/cl", "forward", cl, cl * 0.02,
                    input_shape=[32, 8, 8, 4]),
                 op(stack, "batchnorm()@32x4x8x8/cf", "forward", cf, cf * 0.02,
                    input_shape=[32, 4, 8, 8])]
    (text,) = [t for t in texts(findings.op_findings(recs)) if "channels_first" in t]
    assert "theano 1.11x, torch 2.00x" in text and "beyond 25% and noise: torch." in text


def test_roofline_needs_peaks_and_names_the_lowest_case():
    recs = [op("jax", "dense(units=8)@32x8", "forward", 1e-3, flops=1e6, bytes=1e6)]
    assert not [t for t in texts(findings.op_findings(recs)) if "roofline" in t]
    found = findings.op_findings(recs, {"matmul_gflops": 100.0, "copy_gbps": 10.0})
    (text,) = [t for t in texts(found) if "roofline" in t]
    # 1 GFLOP/s achieved; attainable min(100, 1 FLOP/byte x 10 GB/s) = 10 GFLOP/s
    assert "a median 10.0% of this machine's roofline" in text and "0 of 1 passes" in text


def test_failures_come_first():
    recs = [op("jax", "dense(units=8)@32x8", "forward", 1e-4),
            dict(op("torch", "dense(units=8)@32x8", "forward", None), status="wrong",
                 error="max rel err 0.5")]
    found = findings.for_records(recs)
    assert found[0].problem and found[0].anchor == "problems"
    assert "1 pass did not produce a valid time: 1 torch wrong" in found[0].text


def model(stack, backend, name, epoch_s, device="cpu"):
    return {"kind": "model", "stack": stack, "backend": backend, "model": name,
            "status": "ok", "epoch_s": epoch_s, "device": device, "case": name, "pass": "train"}


def test_report_001_bn_penalty_reproduces_or_not_with_the_device():
    recs = [model("theano", "theano", "resnet_bn", 300.0), model("theano", "theano",
                                                               "resnet_nobn", 60.0),
            model("jax", "jax", "resnet_bn", 100.0), model("jax", "jax", "resnet_nobn", 50.0)]
    (text,) = [t for t in texts(findings.model_findings(recs)) if t.startswith("Report 001")]
    assert "theano 5.00x, jax 2.00x" in text and "reproduces here: 2.5x" in text
    assert "on the cpu" in text


def test_model_gap_inside_the_step_spread_says_within_noise():
    fast, slow = model("jax", "jax", "resnet_bn", 100.0), model("torch", "torch", "resnet_bn", 110.0)
    fast.update(median_s=0.064, iqr_s=0.01)
    slow.update(median_s=0.070, iqr_s=0.01)
    (text,) = texts(findings.model_findings([fast, slow]))
    assert text == ("resnet_bn: torch (cpu) takes 1.1x jax's epoch (cpu): 110.0 s vs 100.0 s "
                    "(within noise).")


def test_report_000_names_the_device_gap_when_there_is_one():
    same = [model("theano", "theano", "cifar10_cnn", 200.0),
            model("tensorflow", "tensorflow", "cifar10_cnn", 100.0)]
    (text,) = [t for t in texts(findings.model_findings(same)) if t.startswith("Report 000")]
    assert "theano/tensorflow = 2x" in text and "both ran on the cpu" in text
    apart = copy.deepcopy(same)
    apart[1]["device"] = "gpu"
    (text,) = [t for t in texts(findings.model_findings(apart)) if t.startswith("Report 000")]
    assert "the devices differ (theano on cpu, tensorflow on gpu)" in text


def test_ab_findings_count_and_name_the_largest():
    base = {"kind": "ab", "stack_a": "jax", "stack_b": "jax-new", "status": "ok", "mde": 0.02,
            "ci_low": 1.1, "ci_high": 1.3}
    recs = [dict(base, case="dense(units=8)@32x8", pass_="forward", verdict="slower",
                 ratio=1.2),
            dict(base, case="batchnorm()@32x8x8x4/cl", verdict="same", ratio=1.0,
                 ci_low=0.98, ci_high=1.02)]
    for r in recs:
        r["pass"] = r.pop("pass_", "forward")
    (text,) = texts(findings.ab_findings(recs))
    assert text.startswith("jax-new vs jax: 1 slower (most: fwd of dense units=8 @ 32x8, 1.2x")
    assert "1 same, of 2 compared (median detectable effect 2.0%; 2 of 2 resolved 3%)" in text


@pytest.mark.parametrize("stacks", ["numpy,jax"])
def test_ops_prints_findings_last_and_report_puts_them_first(stacks, tmp_path):
    out = tmp_path / "ops.json"
    p = run_kmicro("ops", "--stacks", stacks, "--ops", "dense,flatten", "--passes", "forward",
                   "--shapes", "32,64;32,4,4,16", "--quick", "--json", str(out), timeout=300)
    assert p.returncode == 0, p.stderr
    tail = p.stdout[p.stdout.index("results:"):]
    assert "Findings" in tail and "\n- dense: " in tail and "\n- flatten: " in tail
    assert len(load(out)) == 8  # 2 ops x 2 shapes x 2 stacks
    page = tmp_path / "report.html"
    p = run_kmicro("report", str(out), "-o", str(page))
    text = page.read_text()
    assert p.returncode == 0 and "findings at its top" in p.stdout
    assert "Findings" in run_kmicro("report", str(out)).stdout  # the terminal tables, then them
    assert text.index("id='findings'") < text.index("id='summary'") < text.index("id='ops'")
    assert "href='#op-dense'" in text and "id='op-dense'" in text
    assert 'alt="heatmap of time relative to the fastest stack"' in text
