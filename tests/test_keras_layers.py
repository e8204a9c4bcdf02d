"""Every layer of Keras' layer benchmark, and a user's own, through the real worker on every
backend, each pass checked against its reference before it is timed; case ids parse back."""
import numpy as np
import pytest

from conftest import load
from kmicro.core import cases, ops, random_checks, stacks
from kmicro.core.errors import UsageError
from kmicro.harness import runner

KERAS3 = [s.name for s in stacks.STACKS.values() if s.family == "keras3"]
# Noise statistics need about 10^4 draws to be checked (random_checks.SAMPLING).
RANDOM = {op.name for op in ops.KERAS_LAYERS if op.random}


def tiny(case):
    """The catalog case at batch 2, every other axis at most 5 (channels at most 4): each
    layer still sees its kind of input (a sequence, an image, a volume)."""
    if case.op in RANDOM:
        shape = (4,) + tuple(min(d, 64) for d in case.input_shape[1:])
    else:
        *middle, last = case.input_shape[1:]
        shape = (2,) + tuple(min(d, 5) for d in middle) + (min(last, 4),)
    return cases.make_case(case.op, shape, None, case.n_inputs, **case.kwargs)


NEW = [tiny(c) for c in cases.catalog("keras") if ops.get(c.op).reference_kind == ops.FLOAT64_TWIN]


def _run(stack_names, case_list, passes=cases.PASSES):
    records = []
    runner.run(stacks.resolve(stack_names), case_list, passes,
               runner.Options(quick=True, timeout_s=600.0), records.append)
    return records


def test_the_keras_catalog_has_one_case_per_layer_class_of_keras_benchmark():
    keras = cases.catalog("keras")
    assert len({c.op for c in keras}) == 71 == len({c.layer for c in keras if
                                                   c.data_format != "channels_first"})
    assert {ops.get(c.op).family for c in keras} == set(ops.FAMILIES)
    seed = cases.catalog("seed")
    assert cases.select() == cases.select(catalog_name="seed")  # still the default
    assert [c for c in cases.catalog("all") if c in seed] == seed
    assert cases.select(["lstm"])[0].id == "lstm(units=32)@32x32x16"  # --ops reaches any layer


# What a Keras 3 backend cannot run or check here: TensorFlow's MaxPool3D takes no float64, so
# MaxPooling3D has no float64 twin there.
LACKING = {"tensorflow": {"max_pooling3d"}}


@pytest.mark.parametrize("stack", KERAS3)
def test_every_new_layer_matches_its_float64_twin_on_every_keras3_backend(stack):
    # fwd (train) and fwd+bwd check the output and every gradient; numpy has only the forward
    # passes, so its run checks fwd (inference) for every layer.
    passes = ("forward", "backward") if stack == "numpy" else ("backward",)
    records = _run([stack], NEW, passes)
    assert len(records) == len(NEW) * (3 if stack == "numpy" else 2)
    for r in records:
        if stack == "numpy" and r["pass"] == "backward":
            assert r["status"] == "unsupported", r
            continue
        if r["status"] == "unsupported":  # a layer, gradient or float64 kernel it lacks: named
            assert r["error"] and r["op"] in LACKING.get(stack, ()), (r["case"], r["error"])
            continue
        if (stack, r["op"], r["pass"]) == ("tensorflow", "random_rotation", "backward") \
                and r["status"] == "wrong":  # its gradient is the inverse warp, not the adjoint
            assert "the adjoint" in r["error"], r["error"]
            continue
        assert r["status"] == "ok", (r["case"], r["pass"], r["error"])
        assert r["max_rel_err"] <= r["tolerance"], r
        assert r["reference"], r
        assert r["median_s"] > 0 and r["family"] in ops.FAMILIES
        random = ops.get(r["op"]).random and r["pass"] != "forward"
        assert r["reference"].startswith("properties") == bool(random), r
        assert (r["reference_probe"] is None) == bool(random), r
    flopped = {r["op"] for r in records if r.get("flops")}
    assert {"conv1d", "conv3d_transpose", "lstm", "multi_head_attention", "einsum_dense"} <= flopped


def test_float64_twins_agree_across_backends():
    """The cross-backend half of the reference: every pair of backends' float64 twins computes
    the same outputs and gradients (findings name a layer where they do not)."""
    from kmicro.report import findings

    chosen = [c for c in NEW if c.op in ("gru", "group_normalization", "multi_head_attention")]
    records = _run(["jax", "torch", "tensorflow"], chosen, ("backward",))
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    assert not findings._disagreements(records)
    bent = [dict(r, reference_probe=[[d * 1.01, n] for d, n in r["reference_probe"]])
            if r["stack"] == "torch" else r for r in records]
    assert len(findings._disagreements(bent)) == len({(r["case"], r["pass"]) for r in records})


def test_a_users_own_layer_on_every_keras3_stack(kmicro, tmp_path):
    out = tmp_path / "user.json"
    p = kmicro("ops", "--layer", "user_layers:Scale(factor=2.0)", "--shapes", "4,8;2,3,5",
               "--stacks", "jax,torch", "--quick", "--json", str(out),
               env={"PYTHONPATH": "tests"})
    assert p.returncode == 0, p.stderr[-2000:]
    records = load(out)
    assert {r["case"] for r in records} == {"user(factor=2.0,layer=user_layers:Scale)@4x8",
                                            "user(factor=2.0,layer=user_layers:Scale)@2x3x5"}
    assert all(r["status"] == "ok" and r["layer"] == "Scale" for r in records), records
    assert all(r["reference"] == "float64 twin of the layer" for r in records)


def test_bad_layers_and_ids_are_one_line_errors_or_error_records(kmicro, tmp_path):
    for args, words in [
        (("--ops", "lstmm"), "unknown op 'lstmm'; valid ops: conv2d"),
        (("--catalog", "everything"), "invalid choice: 'everything'"),
        (("--case", "lstm(units=32"), "malformed case id"),
        (("--case", "nosuch()@2x3"), "unknown op 'nosuch' in case id"),
        (("--case", "conv2d(kernel_size=3,filters=8,padding=same)@2x5x5x3/cl"), "is spelt"),
        (("--layer", "no module here", "--shapes", "4,8"), "malformed --layer"),
        (("--layer", "user_layers:Scale"), "--layer needs --shapes"),
        (("--case", "lstm(units=32)@32x32x16", "--ops", "gru"), "drop --ops"),
        (("--shapes", "2,3,4,5,6,7,8"), "malformed shape"),
    ]:
        p = kmicro("ops", *args, "--stacks", "jax", "--json", str(tmp_path / "x.json"))
        assert p.returncode == 2 and words in p.stderr, (args, p.stderr[-600:])
        assert "Traceback" not in p.stderr
    # Options the layer rejects, a module that is not there, a shape of the wrong rank: the
    # layer's own error in the record, and the other cases run.
    out = tmp_path / "bad.json"
    p = kmicro("ops", "--layer", "user_layers:Scale(nosuch=1)", "--shapes", "4,8",
               "--case", "lstm(units=4)@2x5x3", "--case", "lstm(units=4)@2x5",
               "--stacks", "jax", "--quick", "--passes", "forward", "--json", str(out),
               env={"PYTHONPATH": "tests"})
    assert p.returncode == 0, p.stderr[-1500:]
    by_case = {r["case"]: r for r in load(out)}
    assert by_case["lstm(units=4)@2x5x3"]["status"] == "ok"
    assert by_case["lstm(units=4)@2x5"]["status"] == "error"
    user = by_case["user(layer=user_layers:Scale,nosuch=1)@4x8"]
    assert user["status"] == "error" and "nosuch" in user["error"], user


def test_every_catalog_id_parses_back_to_its_case():
    every = cases.catalog("all") + cases.catalog("all", "channels_first")
    assert all(cases.parse_id(c.id) == c for c in every)
    case = cases.parse_id("conv2d(filters=8,kernel_size=1,padding=same)@32x16x16x8/cl")
    assert case.kwargs == {"filters": 8, "kernel_size": 1, "padding": "same"}
    assert cases.parse_id("permute(dims=2x1)@4x3x2").kwargs == {"dims": (2, 1)}
    user = cases.user_layer_case("my.pkg:Layer(units=4,use_bias=False)", (2, 3))
    assert cases.parse_id(user.id) == user and user.layer == "Layer"
    assert user.layer_kwargs() == {"units": 4, "use_bias": False}
    with pytest.raises(UsageError, match="is spelt"):
        cases.parse_id("batchnorm()@32x32x32x16")  # the layout suffix is part of the id


def test_random_layers_properties_catch_a_wrong_draw():
    rng = np.random.RandomState(0)
    x = rng.normal(0, 1, (64, 256))
    dy = rng.normal(0, 1, x.shape)
    noise = rng.normal(0, 0.5, x.shape)
    good = random_checks.check("gaussian_noise", {"stddev": 0.5}, x, x + noise, dy, dy)
    assert good[0] <= good[1]
    twice = random_checks.check("gaussian_noise", {"stddev": 0.5}, x, x + 2 * noise, dy, dy)
    assert twice[0] > twice[1]
    keep = rng.uniform(size=x.shape) > 0.5
    dropped = random_checks.check("mask", {"rate": 0.5}, x, x * keep * 2, dy, dy * keep * 2)
    assert dropped[0] <= dropped[1]
    unscaled = random_checks.check("mask", {"rate": 0.5}, x, x * keep, dy, dy * keep)
    assert unscaled[0] > unscaled[1]


def test_theano_runs_the_layers_keras2_has_and_names_the_rest():
    chosen = [c for c in NEW if c.op in ("lstm", "conv1d", "separable_conv2d", "zero_padding3d",
                                         "group_normalization", "spatial_dropout2d")]
    records = _run(["theano"], chosen)
    missing = {r["op"] for r in records if r["status"] == "unsupported"}
    assert missing == {"group_normalization"}, [(r["case"], r["error"]) for r in records]
    assert all("Keras 2.3.1 has no GroupNormalization" in r["error"]
               for r in records if r["status"] == "unsupported")
    ok = [r for r in records if r["status"] != "unsupported"]
    assert all(r["status"] == "ok" and r["versions"]["keras"] == "2.3.1" for r in ok), \
        [(r["case"], r["pass"], r["error"]) for r in ok if r["status"] != "ok"]
