"""The environment variables that change which kernels a framework runs, or how many threads
it runs them on: OpenBLAS's core type and cache sizes pick its GEMM kernels (numpy, Theano),
OMP/MKL/oneDNN settings size thread pools, XLA and TF flags change compiled code. Two runs
that differ in them are not comparable, so every record keeps them, as pyperf keeps its
environment. Runs on every stack's Python (3.6 to 3.11).
"""
import os

__all__ = ["PREFIXES", "NAMES", "read"]

# TensorFlow's by name: TF_ alone also matches other tools' variables (TF_CLI_CONFIG_FILE).
PREFIXES = ("OPENBLAS_", "GOTO", "BLIS_", "OMP_", "KMP_", "MKL_", "ONEDNN_", "DNNL_", "XLA_",
            "JAX_", "TORCH_", "PYTORCH_", "NUMEXPR_", "VECLIB_", "TF_ENABLE_", "TF_NUM_",
            "TF_XLA_", "TF_CPP_", "TF_GPU_", "TF_FORCE_", "TF_CUDNN_", "TF_DETERMINISTIC_",
            "TF_INTRA_OP_", "TF_INTER_OP_")
NAMES = ("THEANO_FLAGS", "GLIBC_TUNABLES", "CUDA_VISIBLE_DEVICES", "KERAS_BACKEND",
         "LD_PRELOAD")


def read(environ=None) -> dict:
    """{name: value} of the kernel-selecting variables set in `environ` (default: this
    process's), sorted by name."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in sorted(environ)
            if k in NAMES or k.startswith(PREFIXES)}
