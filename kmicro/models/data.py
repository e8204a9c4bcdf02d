"""CIFAR-10 data: the real set when it is on disk, seeded synthetic data otherwise.

Never downloads. Real data is read from CIFAR-10's "python version" pickle batches
(data_batch_1..5, test_batch: dicts with b'data' uint8 (N, 3072) and b'labels'), in
the Keras dataset cache or at --data PATH. Synthetic data has the same shape, dtype and
label range, so the work per step is the same. Must import on Python 3.7.
"""
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kmicro.core.errors import UsageError

TRAIN_SAMPLES, TEST_SAMPLES = 50000, 10000
TRAIN_FILES = tuple("data_batch_{}".format(i) for i in range(1, 6))
TEST_FILE = "test_batch"
KERAS_CACHE = Path("~/.keras/datasets/cifar-10-batches-py")
SYNTHETIC = "synthetic"


@dataclass
class Dataset:
    x_train: np.ndarray  # uint8 (N, 32, 32, 3), channels_last like Keras' cifar10.load_data
    y_train: np.ndarray  # int labels 0..9
    x_test: np.ndarray
    y_test: np.ndarray
    source: str  # SYNTHETIC or the directory read


def locate(path=None):
    """The CIFAR-10 directory to read, or None for synthetic data.

    An explicit path must hold the batches (a typo must not silently become synthetic data);
    the Keras cache is used only when complete.
    """
    if path:
        missing = _missing(Path(path).expanduser())
        if missing:
            raise UsageError("--data {}: no CIFAR-10 python batches there (missing {}); expected "
                             "data_batch_1..5 and test_batch".format(path, ", ".join(missing)))
        return str(Path(path).expanduser().resolve())
    cache = KERAS_CACHE.expanduser()
    return str(cache) if not _missing(cache) else None


def _missing(directory: Path) -> list:
    return [f for f in TRAIN_FILES + (TEST_FILE,) if not (directory / f).is_file()]


def read_batch(path):
    """(x uint8 (N, 32, 32, 3), y int64) of one pickle batch."""
    with open(str(path), "rb") as f:
        batch = pickle.load(f, encoding="bytes")  # the official files were pickled by Python 2
    x = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(x), np.asarray(batch[b"labels"], dtype=np.int64)


def load_cifar(directory) -> Dataset:
    directory = Path(directory)
    parts = [read_batch(directory / f) for f in TRAIN_FILES]
    x_test, y_test = read_batch(directory / TEST_FILE)
    return Dataset(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                   x_test, y_test, str(directory))


def synthetic(n_train, n_test, seed=0) -> Dataset:
    """Seeded uint8 images and labels; RandomState's stream is stable across NumPy versions."""
    rng = np.random.RandomState(seed)

    def images(n):
        return rng.randint(0, 256, size=(n, 32, 32, 3)).astype(np.uint8)

    x_train, x_test = images(n_train), images(n_test)
    return Dataset(x_train, rng.randint(0, 10, n_train), x_test, rng.randint(0, 10, n_test),
                   SYNTHETIC)


def load(path, n_train, n_test, seed=0) -> Dataset:
    """Real data from `path`, else only as many synthetic samples as the run will use."""
    return load_cifar(path) if path else synthetic(n_train, n_test, seed)


def scale(x):
    """What the reports' scripts did once up front: float32 in [0, 1]."""
    return x.astype(np.float32) / np.float32(255)


def one_hot(y, num_classes=10):
    out = np.zeros((len(y), num_classes), dtype=np.float32)
    out[np.arange(len(y)), y] = 1
    return out
