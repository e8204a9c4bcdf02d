"""Epoch times the two user reports published, and the project's earlier CPU measurements.

Shown beside kmicro's own numbers, never mixed with them: other machines, other versions.
Report 001's "ms/step" are what Keras 2's progress bar printed for `fit` on arrays, which
is time per *sample* (82 s / 50,000 = 1.6 ms): cells keep the report's wording.
"""
from dataclasses import dataclass

__all__ = ["CPU_MEASURED", "CPU_MEASURED_REPORT_000", "FOOTNOTE", "ROWS", "Row"]


@dataclass(frozen=True)
class Row:
    report: str
    stack: str
    hardware: str
    cells: tuple  # (column, text) pairs; columns are model names and "bn_ratio", "eval"

    def cell(self, column) -> str:
        """The text of one column, "" when the report gave none."""
        return dict(self.cells).get(column, "")


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

# Measured by this project, before kmicro, on a 2-core CPU VM without GPU: the cut-down ResNet
# of report 001, batch 32, ms per training step (noisy).
# Rows: (stack, without BN, with BN, BN/no-BN ratio).
CPU_MEASURED = (("Keras 3.15 + TensorFlow 2.21 (CPU)", "27.5", "59.5", "2.2x"),
                ("Keras 3.15 + JAX 0.10 (CPU)", "49.4", "102.2", "2.1x"),
                ("Keras 3.15 + torch 2.13 (CPU)", "305", "586", "1.9x"),
                ("Keras 2.3.1 + Theano 1.0.5 (CPU, py3.11 + shims)", "75.7", "154.6", "2.0x"),
                ("Keras 2.3.1 + Theano 1.0.5 (CPU, Python 3.9, numpy 1.21.6)", "—", "167", "—"),
                ("Keras 2.2.4 + TensorFlow 1.15.5 (CPU, Python 3.7, fused BN)", "53.6", "71.6",
                 "1.3x"))
# Report 000's own stack on the same VM, cifar10_cnn without augmentation.
CPU_MEASURED_REPORT_000 = ("Report 000's own Theano stack (Keras 1.2.1 + Theano 0.8.2) ran "
                           "cifar10_cnn without augmentation at 79 ms/step (124 s per "
                           "50,000-sample epoch) on that machine.")
