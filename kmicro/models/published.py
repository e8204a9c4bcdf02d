"""The epoch times the two reports published, on their hardware (REFERENCE.md).

Shown beside kmicro's own numbers, never mixed with them: other machines, other versions.
Report 001's "ms/step" are what Keras 2's progress bar printed for `fit` on arrays, which
is time per *sample* (82 s / 50,000 = 1.6 ms): cells keep the report's wording.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    report: str
    stack: str
    hardware: str
    cells: tuple  # (column, text) pairs; columns are model names and "bn_ratio", "eval"


ROWS = (
    Row("000", "Keras 1.2.1 + TensorFlow 0.12.1", "Quadro M5000M (GPU)",
        (("cifar10_cnn", "15-16 s"),)),
    Row("000", "Keras 1.2.1 + Theano 0.8.2", "CPU (device=cpu by mistake)",
        (("cifar10_cnn", "285-292 s"),)),
    Row("000", "Keras 1.2.1 + Theano 0.8.2", "Quadro M5000M (GPU)",
        (("cifar10_cnn", "38 s"),)),
    Row("001", "Keras 2.2.4 + Theano 1.0.3, cuDNN 7104", "GTX 1080 Max-Q (GPU)",
        (("resnet_bn", "82 s (2 ms/step*)"), ("resnet_nobn", "7 s (132 µs/step*)"),
         ("bn_ratio", "11.7x"), ("eval", "bn 4 s, nobn 0 s"))),
    Row("001", "Keras 2.2.4 + TensorFlow", "GTX 1080 Max-Q (GPU)",
        (("resnet_bn", "10 s (204 µs/step*)"), ("resnet_nobn", "10 s (194 µs/step*)"),
         ("bn_ratio", "1.0x"))),
)

FOOTNOTE = ("* Keras 2's progress bar printed seconds per sample as '/step'. Report 000: "
            "batch 32 with augmentation; report 001: batch 32, no augmentation; both 50,000 "
            "training samples per epoch, evaluation on 10,000.")
