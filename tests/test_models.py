"""`kmicro models`: specs, data, augmentation and epoch arithmetic, then real stacks, tiny runs."""
import pickle

import numpy as np
import pytest

from conftest import load, run_kmicro
from kmicro import cli
from kmicro.core import stacks
from kmicro.core.errors import UsageError
from kmicro.models import augment, data, epoch, graph, job, zoo
from kmicro.cli import models as command

CONTRACT = ("stack", "backend", "versions", "device", "case", "model", "pass", "input_shape",
            "data_format", "status", "median_s", "iqr_s", "compile_s", "max_rel_err", "error",
            "epoch_s", "step_s", "eval_s", "steps", "samples", "augment", "data", "optimizer")
def kmicro_models(*args, timeout=600):
    return run_kmicro("models", *args, timeout=timeout)


# --- specs ------------------------------------------------------------------------------

def test_specs_follow_the_reports():
    bn, nobn, cnn, r20 = (zoo.get(n) for n in ("resnet_bn", "resnet_nobn", "cifar10_cnn",
                                               "resnet20"))
    assert graph.count_layers(bn, "BatchNormalization") == 4
    assert graph.count_layers(nobn, "BatchNormalization") == 0
    assert graph.count_layers(nobn, "Add") == 3 and graph.count_layers(nobn, "Conv2D") == 4
    assert graph.count_layers(cnn, "Conv2D") == 4 and graph.count_layers(cnn, "Dropout") == 3
    # ResNet20 v1: 19 3x3 convs + 2 projection shortcuts, BN after each 3x3 conv.
    assert graph.count_layers(r20, "Conv2D") == 21
    assert graph.count_layers(r20, "BatchNormalization") == 19
    assert cnn.optimizer.describe() == "SGD(lr=0.01, decay=1e-06, momentum=0.9, nesterov=True)"
    assert cnn.augment is not None and bn.augment is None and bn.optimizer.name == "adam"
    assert all(s.batch_size == 32 for s in (bn, nobn, cnn, r20))


def test_bad_model_name_is_a_usage_error_naming_valid_models():
    with pytest.raises(UsageError, match="valid models: cifar10_cnn, resnet_bn, resnet_nobn"):
        zoo.select("resnet_bn,resnet50")
    p = kmicro_models("--models", "resnet50", "--stacks", "numpy")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and "valid models: cifar10_cnn" in p.stderr


# --- arithmetic and the timing loop --------------------------------------------------------

def test_epoch_arithmetic():
    assert epoch.steps_per_epoch(50000, 32) == 1563  # last batch has 16 samples
    assert epoch.extrapolate(0.010, 50000, 32) == pytest.approx(15.625)
    assert epoch.extrapolate(0.002, 10000, 32) == pytest.approx(0.625)
    assert epoch.samples_needed(20, 32) == (1 + epoch.WARMUP + 20) * 32


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def fake_trainer(clock, step_s=0.01, compile_s=5.0):
    calls = []

    def step(x, y):
        clock.t += compile_s if not calls else step_s * len(x) / 32  # partial batches cost less
        calls.append(x.shape)

    return epoch.Trainer(train=step, test=step, device=lambda x: "cpu", optimizer="fake"), calls


def test_steps_run_excludes_compile_and_extrapolates_the_median():
    clock = FakeClock()
    trainer, calls = fake_trainer(clock)
    spec = zoo.get("resnet_nobn")
    settings = job.Settings("resnet_nobn", steps=4)
    n = epoch.samples_needed(4, 32)
    got = epoch.run(trainer, data.synthetic(n, n), spec, settings, clock=clock)
    assert got["compile_s"] == 5.0 and got["step_s"] == pytest.approx(0.01)
    assert got["epoch_s"] == pytest.approx(0.01 * 50000 / 32)
    assert got["eval_s"] == pytest.approx(0.01 * 10000 / 32) and got["n_samples"] == 4


def test_full_epoch_is_the_wall_time_of_every_batch():
    clock = FakeClock()
    trainer, calls = fake_trainer(clock)
    settings = job.Settings("resnet_nobn", full_epoch=True, train_samples=100, eval_samples=40)
    got = epoch.run(trainer, data.synthetic(100, 40), zoo.get("resnet_nobn"), settings,
                    clock=clock)
    assert got["steps"] == 4 and got["eval_steps"] == 2  # 32+32+32+4 and 32+8
    assert got["epoch_s"] == pytest.approx(0.01 * 100 / 32)  # the partial batch counted once
    assert (4, 32, 32, 3) in calls


# --- data and augmentation ------------------------------------------------------------

def test_augmentation_changes_inputs_and_keeps_shape_and_dtype():
    x = data.scale(data.synthetic(64, 1).x_train)
    rng = np.random.RandomState(0)
    out = augment.shift_flip(x, graph.Augment(), rng)
    assert out.shape == x.shape and out.dtype == x.dtype == np.float32
    changed = [not np.array_equal(a, b) for a, b in zip(out, x)]
    assert sum(changed) > 48  # a few may draw no shift and no flip
    assert not np.array_equal(out, augment.shift_flip(x, graph.Augment(), rng))  # fresh draws
    # Only whole-pixel moves and mirror images: every output pixel exists in its source image.
    assert set(np.unique(out[0])) <= set(np.unique(x[0]))


def test_batches_augment_only_when_asked():
    d = data.synthetic(64, 1)
    plain = epoch.Batches(d.x_train, d.y_train, 32)[1]
    aug = epoch.Batches(d.x_train, d.y_train, 32, graph.Augment())[1]
    assert np.array_equal(plain[0], data.scale(d.x_train[32:64]))
    assert not np.array_equal(aug[0], plain[0]) and np.array_equal(aug[1], plain[1])
    assert plain[1].shape == (32, 10) and plain[1].sum() == 32


def write_cifar_batch(path, n, seed):
    rng = np.random.RandomState(seed)
    rows = rng.randint(0, 256, size=(n, 3072)).astype(np.uint8)
    labels = list(rng.randint(0, 10, n))
    with open(path, "wb") as f:
        pickle.dump({b"batch_label": b"test", b"labels": labels, b"data": rows}, f, protocol=2)
    return rows, labels


def test_real_data_loader_reads_cifar_pickle_batches(tmp_path):
    first = write_cifar_batch(tmp_path / "data_batch_1", 3, 1)
    for i in range(2, 6):
        write_cifar_batch(tmp_path / "data_batch_{}".format(i), 3, i)
    write_cifar_batch(tmp_path / "test_batch", 2, 9)
    found = data.locate(str(tmp_path))
    d = data.load(found, 0, 0)
    assert d.source == str(tmp_path.resolve())
    assert d.x_train.shape == (15, 32, 32, 3) and d.x_train.dtype == np.uint8
    assert d.x_test.shape == (2, 32, 32, 3) and list(d.y_train[:3]) == first[1]
    rows = first[0]  # CIFAR rows are 1024 red, then green, then blue values, row-major
    assert d.x_train[0, 0, 1, 0] == rows[0, 1] and d.x_train[0, 1, 0, 2] == rows[0, 2048 + 32]


def test_missing_data_path_is_a_usage_error_not_silent_synthetic(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(b"")
    with pytest.raises(UsageError, match="missing data_batch_2"):
        data.locate(str(tmp_path))


# --- real stacks, tiny step counts --------------------------------------------------------

def installed(name):
    if not stacks.STACKS[name].installed:
        pytest.skip("stack {} is not installed".format(name))


def test_keras3_stack_trains_both_reports_models_and_prints_the_tables(tmp_path):
    installed("tensorflow")
    out = tmp_path / "m.json"
    p = kmicro_models("--stacks", "tensorflow,numpy", "--models", "cifar10_cnn,resnet_nobn",
                      "--steps", "2", "--json", str(out))
    assert p.returncode == 0, p.stderr
    records = {(r["stack"], r["model"]): r for r in load(out)}
    for r in records.values():
        assert all(k in r for k in CONTRACT)
    cnn, nobn = records["tensorflow", "cifar10_cnn"], records["tensorflow", "resnet_nobn"]
    assert cnn["status"] == nobn["status"] == "ok" and cnn["device"] == "cpu"
    assert cnn["case"] == "cifar10_cnn@b32+aug" and cnn["augment"] and not nobn["augment"]
    assert "InverseTimeDecay(0.01, decay_steps=1, decay_rate=1e-06)" in cnn["optimizer"]
    assert nobn["params"] == 9978 and nobn["data"] == "synthetic" and nobn["steps"] == 2
    assert nobn["epoch_s"] == pytest.approx(nobn["step_s"] * 50000 / 32)
    assert records["numpy", "resnet_nobn"]["status"] == "unsupported"  # a record, not a crash
    assert "published by the reports" in p.stdout and "GTX 1080 Max-Q" in p.stdout
    assert "synthetic CIFAR-shaped data" in p.stdout and "numpy resnet_nobn@b32" in p.stdout


def test_theano_stack_trains_resnet(tmp_path):
    installed("theano")
    out = tmp_path / "m.json"
    assert cli.main(["models", "--stacks", "theano", "--models", "resnet_bn", "--steps", "1",
                     "--json", str(out)]) == 0
    (r,) = load(out)
    assert r["status"] == "ok", r["error"]
    assert r["versions"]["keras"] == "2.3.1" and r["device"] == "cpu" and r["params"] == 10234
    assert r["compile_s"] > 0 and r["step_s"] > 0 and r["eval_s"] > 0


def test_gpu_where_none_is_exit_2_with_error_records(tmp_path):
    installed("numpy")
    out = tmp_path / "g.json"
    p = kmicro_models("--stacks", "numpy", "--models", "resnet_nobn", "--device", "gpu",
                      "--json", str(out))
    assert p.returncode == 2 and "none of the stacks sees a GPU" in p.stderr
    (r,) = load(out)
    assert r["status"] == "error" and "would run on the CPU" in r["error"]
