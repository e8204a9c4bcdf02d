"""`kmicro attribute`: analysis on hand-made records, then the CLI on real stacks, small models.

User models come from tests/user_models.py as user_models:FUNCTION (tests/ is put on the
PYTHONPATH of the CLI and its workers, as a user's own directory would be).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, load
from kmicro.harness.jobs import attribution as attribution_job, built_models
from kmicro.analysis import attribution, contention, in_situ
from kmicro.core import other_load, stacks
from kmicro.core.errors import UsageError
from kmicro.models import graph, zoo

TESTS = Path(__file__).resolve().parent
CONTRACT = ("stack", "backend", "versions", "device", "case", "status", "median_s", "iqr_s",
            "compile_s", "max_rel_err", "error", "kind", "model", "layer", "layer_type", "pass",
            "input_shape", "share")


def kmicro_attribute(*args, timeout=600):
    """The real CLI, with tests/ importable so `user_models:...` resolves."""
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "kmicro.cli", "attribute", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


def needs(*names):
    missing = [n for n in names if not stacks.STACKS[n].installed]
    return pytest.mark.skipif(bool(missing), reason=f"stacks not installed: {missing}")


# --- framework-free parts ------------------------------------------------------------------

def rec(stack, pass_name, seconds, layer_type=None, key=None, status="ok", ablate=None):
    return {"stack": stack, "pass": pass_name, "median_s": seconds, "status": status,
            "layer_type": layer_type, "layer_key": key, "layer": key, "model": "m",
            "ablate": ablate, "case": f"m/{key}", "noisy": False,
            "share": seconds / (0.1 if stack == "theano" else 0.05) if seconds else None}


def two_stacks():
    bn, conv = ("BatchNormalization", "BN#0"), ("Conv2D", "Conv2D#0")
    return [rec("theano", "step", 0.100), rec("theano", "backward", 0.050, *bn),
            rec("theano", "backward", 0.030, *conv),
            rec("theano", "ablated_step", 0.060, ablate="BatchNormalization"),
            rec("tensorflow", "step", 0.050), rec("tensorflow", "backward", 0.024, *bn),
            rec("tensorflow", "backward", 0.030, *conv),
            rec("tensorflow", "backward", None, "Dense", "Dense#0", status="error")]


def test_shares_remainder_ranking_and_ablation_deltas():
    records = two_stacks()
    th, tf = attribution.summary(records, "theano"), attribution.summary(records, "tensorflow")
    assert th["layers_s"] == pytest.approx(0.080) and th["remainder_s"] == pytest.approx(0.020)
    assert tf["remainder_s"] == pytest.approx(-0.004) and tf["layers_missing"] == 1
    assert attribution.dominant_lines(records)[0] == (
        "BatchNormalization: 50% of the step on theano, 48% on tensorflow; "
        "2.1x slower on theano than tensorflow")
    assert [t for t, _ in attribution.ratio_ranking(records)] == ["BatchNormalization", "Conv2D"]
    shares = attribution.shares_by_stack(records)
    assert shares["theano"]["(remainder)"] == pytest.approx(0.020)
    assert "(remainder)" not in shares["tensorflow"]  # a negative remainder cannot be a bar
    cut = attribution.ablation(records, "theano")
    assert cut["delta_s"] == pytest.approx(-0.040) and cut["delta_pct"] == pytest.approx(-0.4)
    assert attribution.ablation(records, "tensorflow") is None
    assert attribution.ranked_layers(records, "theano")[0]["layer_type"] == "BatchNormalization"


def layer(kind, ins, out):
    return {"type": kind, "input_shapes": ins, "output_shapes": out}


def test_only_shape_keeping_single_input_types_are_removable():
    a, b = [32, 8, 8, 16], [32, 8, 8, 4]
    layers = [layer("Conv2D", [a], [a]), layer("Conv2D", [a], [b]), layer("Activation", [a], [a]),
              layer("Add", [a, a], [a]), layer("BatchNormalization", [a], [a])]
    assert attribution.removable_types(layers) == ["Activation", "BatchNormalization"]
    attribution.check_ablate("BatchNormalization", layers, "m")
    with pytest.raises(UsageError, match="Conv2D: changes the shape.*present: Activation, "
                                         "BatchNormalization$"):
        attribution.check_ablate("Conv2D", layers, "m")
    with pytest.raises(UsageError, match="LSTM: is not in the model"):
        attribution.check_ablate("LSTM", layers, "m")


def test_ablated_builtin_spec_is_the_model_without_that_layer():
    cut = built_models.without(zoo.get("resnet_bn"), "BatchNormalization")
    nobn = zoo.get("resnet_nobn")
    assert [(n.layer, n.kwargs) for n in cut.nodes] == [(n.layer, n.kwargs) for n in nobn.nodes]
    names = {n.name for n in cut.nodes} | {graph.INPUT}
    assert all(i in names for n in cut.nodes for i in n.inputs)


def test_user_functions_are_checked_without_importing_them():
    attribution.check_source("user_models:bn_heavy", "--model")
    for source, message in (("no_such_module_xyz:f", "no module named 'no_such_module_xyz'"),
                            ("user_models:missing", "defines no 'missing'"),
                            ("resnet50", "expected a built-in model (cifar10_cnn, resnet_bn")):
        with pytest.raises(UsageError, match=message.replace("(", r"\(")):
            attribution.check_source(source, "--model")


# --- real stacks -----------------------------------------------------------------------------

@needs("jax")
def test_user_model_every_layer_timed_and_ranked(tmp_path):
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:one_expensive", "--stacks", "jax,theano",
                         "--steps", "3", "--quick", "--json", str(out))
    assert p.returncode == 0, p.stderr
    records = load(out)
    assert all(all(f in r for f in CONTRACT) for r in records)
    assert {r["kind"] for r in records} == {"attribution"}
    jax = [r for r in records if r["stack"] == "jax"]
    layers = [r for r in jax if r["pass"] in ("forward", "backward")]
    assert len(layers) == 2 * 5 and all(r["status"] == "ok" for r in jax)  # InputLayer skipped
    # Which layer ranks first is a measured comparison (the timing test below); here the
    # ranking holds every fwd+bwd layer, most expensive first, and says how busy the CPU was.
    ranked = attribution.ranked_layers(records, "jax")
    assert [r["layer"] for r in ranked] == [r["layer"] for r in sorted(
        (r for r in layers if r["pass"] == "backward"), key=lambda r: -r["median_s"])]
    assert all(r["other_load"] >= 0 for r in layers)  # other processes, from /proc/stat
    step = next(r for r in jax if r["pass"] == "step")
    assert step["share"] == 1.0 and step["input_shape"] == [32, 16, 16, 8]
    explained = sum(r["share"] for r in layers if r["pass"] == "backward")
    assert explained + step["remainder_share"] == pytest.approx(1.0)
    theano = [r for r in records if r["stack"] == "theano"]
    assert [(r["pass"], r["status"]) for r in theano] == [("step", "unsupported")]
    assert "--model-keras2" in theano[0]["error"]
    assert "Conv2D" in p.stdout and "remainder" in p.stdout


@pytest.mark.timing
@needs("jax")
def test_removing_batchnorm_makes_the_step_faster(tmp_path):
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:bn_heavy", "--stacks", "jax", "--steps", "5",
                         "--quick", "--ablate", "BatchNormalization", "--json", str(out))
    assert p.returncode == 0, p.stderr
    cut = next(r for r in load(out) if r["pass"] == "ablated_step")
    assert cut["status"] == "ok" and cut["ablate"] == "BatchNormalization"
    assert cut["delta_s"] < 0 and cut["case"] == "user_models:bn_heavy@b32-BatchNormalization"
    assert cut["baseline_s"] > cut["median_s"]  # the full step, timed in turns with it
    assert "ablation: step without BatchNormalization" in p.stdout


def one_line_exit_2(p, text):
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert text in p.stderr


@needs("jax")
@pytest.mark.parametrize("model, text", [
    ("user_models:not_a_model", "user_models:not_a_model returned list, not a Keras 3 model"),
    ("no_such_module_xyz:f", "no module named 'no_such_module_xyz'"),
    ("user_models:missing", "module user_models defines no 'missing'"),
])
def test_bad_user_function_is_exit_2_one_line(model, text, tmp_path):
    p = kmicro_attribute("--model", model, "--stacks", "jax", "--json", str(tmp_path / "a.json"))
    one_line_exit_2(p, text)


@needs("jax")
def test_bad_ablate_is_exit_2_naming_the_removable_types(tmp_path):
    # A type the model lacks takes the same path (unit-tested above); one worker start here.
    p = kmicro_attribute("--model", "resnet_bn", "--stacks", "jax", "--ablate", "Conv2D",
                         "--json", str(tmp_path / "a.json"))
    one_line_exit_2(p, "Conv2D: changes the shape or takes several inputs (resnet_bn); "
                       "removable layer types present: Activation, BatchNormalization")


@needs("theano")
def test_keras2_function_on_theano(tmp_path):
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:small_cnn", "--model-keras2",
                         "user_models:small_cnn", "--stacks", "theano", "--steps", "3", "--quick",
                         "--json", str(out))
    assert p.returncode == 0, p.stderr
    records = load(out)
    assert all(r["status"] == "ok" and r["device"] == "cpu" for r in records), records
    assert {r["layer_type"] for r in records if r["pass"] == "backward"} == {
        "Conv2D", "BatchNormalization", "MaxPooling2D", "Dropout", "Flatten", "Dense"}
    assert next(r for r in records if r["pass"] == "step")["versions"]["keras"] == "2.3.1"


# --- in situ: the real step under each backend's profiler --------------------------------

def test_overlapping_ops_share_the_step_and_the_rest_is_framework_time():
    from kmicro.backends import xplane

    # a alone 0-5, a and b together 5-10 (half each), b alone 10-15, nothing 15-20
    (parts, covered), = xplane.shares([(0, 10, "a"), (5, 15, "b")], [(0, 20)])
    assert parts == {"a": 7.5, "b": 7.5} and covered == 15
    a, b = ("conv", "forward"), ("conv", "backward")
    steps = xplane.step_parts([(0, 20), (20, 30)], [(0, 10, a), (5, 15, b), (22, 24, a)])
    by = {(p["layer"], p["part"]): p["times_s"] for p in steps}
    assert by[xplane.FRAMEWORK] == pytest.approx([5e-12, 8e-12])
    assert by[a] == pytest.approx([7.5e-12, 2e-12])
    for i, window in enumerate((20, 10)):
        assert sum(t[i] for t in by.values()) == pytest.approx(window * 1e-12)


def test_a_part_is_its_median_step_so_one_descheduled_step_cannot_lift_it():
    ms = 1e-3
    parts = [{"layer": "conv", "part": "forward", "times_s": [2 * ms, 2 * ms, 2 * ms]},
             {"layer": "conv", "part": "backward", "times_s": [3 * ms, 4 * ms, 3 * ms]},
             {"layer": "dense", "part": "forward", "times_s": [0.5 * ms, 9 * ms, 0.5 * ms]}]
    got = attribution_job._part_medians(parts)
    assert got["conv"]["time_s"] == pytest.approx(5 * ms)  # medians of the sums per step
    assert got["conv"]["backward_s"] == pytest.approx(3 * ms)
    assert got["dense"]["time_s"] == pytest.approx(0.5 * ms)  # the mean would be 3.3 ms
    assert got["dense"]["mean_s"] == pytest.approx(10 * ms / 3)
    assert sum(f["share"] for f in got.values()) == pytest.approx(1.0)


def test_a_busy_machine_is_named_with_what_it_does_to_the_ranking():
    def rec(stack, load, status="ok"):
        return {"stack": stack, "status": status, "other_load": load}

    quiet = [rec("jax", 0.02), rec("jax", 0.17), rec("jax", 0.01)]  # one tick-noisy record
    busy = [rec("torch", 0.45), rec("torch", 0.5), rec("torch", 0.0, "error")]
    unread = [rec("theano", None)]
    assert contention.caveat_lines(quiet + unread) == []
    (line,) = contention.caveat_lines(quiet + busy + unread)
    assert line.startswith("torch: other processes took 48% of the CPUs") and "1.9x too long" in line


def test_other_processes_share_is_read_around_a_block():
    watch = other_load.Watch()
    for _ in range(2):
        with other_load.watching(watch):
            sum(range(200_000))
    assert watch.wall_s > 0 and watch.cpus == os.cpu_count()
    assert 0 <= watch.share <= 1  # Linux: /proc/stat is readable


@pytest.mark.parametrize("part, op_name, expected", [
    ("jax_part", "jit(train_step)/jvp(conv2d)/conv_general_dilated", ("conv2d", "forward")),
    ("jax_part", "jit(train_step)/transpose(jvp(bn))/jit(_var)/reduce_sum", ("bn", "backward")),
    ("jax_part", "jit(train_step)/jvp(compile_loss)/categorical_crossentropy/div",
     ("(loss)", "forward")),
    ("jax_part", "jit(train_step)/adam/add", ("(optimizer)", "update")),
    ("tf_part", "gradient_tape/functional_1/conv2d_1/convolution/Conv2DBackpropFilter",
     ("conv2d", "backward")),
    ("tf_part", "functional_1/dense_1/BiasAdd", ("dense", "forward")),
    ("tf_part", "adam/Sqrt_5", ("(optimizer)", "update")),
    ("tf_part", "compile_loss/categorical_crossentropy/Sum", ("(loss)", "forward")),
])
def test_name_scopes_say_which_layer_and_pass_an_op_is(part, op_name, expected):
    from kmicro.backends import name_scopes

    assert getattr(name_scopes, part)(op_name, {"conv2d", "bn", "dense"}, "adam") == expected


def test_profiled_steps_are_split_over_sessions_and_merged_in_order():
    assert attribution_job._split(10, 3) == [4, 3, 3] and attribution_job._split(2, 3) == [1, 1]
    assert attribution_job._split(5, 1) == [5]
    first = {"steps_s": [1.0, 2.0], "parts": [{"layer": "a", "part": "forward",
                                              "times_s": [0.5, 0.6]}]}
    second = {"steps_s": [3.0], "parts": [{"layer": "b", "part": "backward", "times_s": [0.7]},
                                          {"layer": "a", "part": "forward", "times_s": [0.8]}]}
    merged = attribution_job._merged([first, second])
    assert merged["steps_s"] == [1.0, 2.0, 3.0]
    assert merged["parts"] == [{"layer": "a", "part": "forward", "times_s": [0.5, 0.6, 0.8]},
                               {"layer": "b", "part": "backward", "times_s": [0.0, 0.0, 0.7]}]


@needs("tensorflow", "jax", "torch")
@pytest.mark.timing
def test_in_situ_parts_add_up_and_the_expensive_layer_ranks_first(tmp_path):
    """The conv has 5-19x the time of the next layer on a quiet machine (docs/guide-model-step.md)."""
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:one_expensive", "--stacks",
                         "tensorflow,jax,torch", "--in-situ", "--steps", "3", "--quick",
                         "--json", str(out), timeout=600)
    assert p.returncode == 0, p.stderr
    records = load(out)
    for stack in ("tensorflow", "jax", "torch"):
        step = in_situ.profiled_step(records, stack)
        assert step and step["method"] == "in_situ" and step["unprofiled_s"] > 0, stack
        assert step["profile_sessions"] == 3, stack  # 3 steps: one per session, plain between
        assert 0 <= step["other_load"] <= 1, stack  # other processes, from /proc/stat
        parts = [r for r in records if r["stack"] == stack and r["pass"] == "in_situ"]
        assert all(r["status"] == "ok" and r["method"] == "in_situ" for r in parts)
        assert sum(r["share"] for r in parts) == pytest.approx(1.0), stack
        assert {r["layer"] for r in parts} >= {"expensive", "(framework)", "(optimizer)"}
        layers = [r for r in parts if in_situ.is_layer(r["layer_type"])]
        assert max(layers, key=lambda r: r["time_s"])["layer"] == "expensive", stack
        assert in_situ.dominant_type(records, stack)[0] == "Conv2D"
        isolated = [r for r in records if r["stack"] == stack and r["pass"] == "backward"]
        assert isolated and all(r["method"] == "isolated" for r in isolated)
        evaluation = [r for r in records if r["stack"] == stack and r["pass"] == "in_situ_eval"]
        assert in_situ.profiled_step(records, stack, "test")["status"] == "ok", stack
        assert sum(r["share"] for r in evaluation) == pytest.approx(1.0), stack
        assert "(optimizer)" not in {r["layer"] for r in evaluation}  # no update in a test step
    assert "in situ" in p.stdout and "profiler overhead" in p.stdout
    assert "of the profiled evaluation step" in p.stdout


@needs("theano")
def test_in_situ_on_theano_places_profiled_nodes_by_the_weights_they_read(tmp_path):
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:one_expensive", "--model-keras2",
                         "user_models:one_expensive", "--stacks", "theano", "--in-situ",
                         "--steps", "3", "--quick", "--json", str(out), timeout=600)
    assert p.returncode == 0, p.stderr
    records = load(out)
    parts = [r for r in records if r["pass"] == "in_situ"]
    assert sum(r["share"] for r in parts) == pytest.approx(1.0)
    placed = {r["layer"]: r for r in parts}
    assert placed["expensive"]["time_s"] > 0 and placed["cheap"]["time_s"] > 0
    assert "Conv2D" in in_situ.by_type(records, "theano")
    assert in_situ.profiled_step(records, "theano")["versions"]["theano"] == "1.0.5"
    assert in_situ.profiled_step(records, "theano")["profile_sessions"] == 1  # compiles each


@needs("tf1")
def test_in_situ_on_a_stack_without_a_profiler_is_a_record_saying_so(tmp_path):
    out = tmp_path / "a.json"
    p = kmicro_attribute("--model", "user_models:one_expensive", "--model-keras2",
                         "user_models:one_expensive", "--stacks", "tf1", "--in-situ",
                         "--steps", "2", "--quick", "--json", str(out))
    assert p.returncode == 0, p.stderr
    (profiled,) = [r for r in load(out) if r["pass"] == "profiled_step"]
    assert profiled["status"] == "unsupported" and "in-situ" in profiled["error"]
