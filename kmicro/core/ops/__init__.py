"""The op registry: one module per Keras layer type, found by its CLI name.

A new op is one module here (a subclass of base.Op) plus one line in REGISTERED.
"""
from kmicro.core.ops import activation, add, batchnorm, conv2d, dense, dropout, flatten, pooling
from kmicro.core.ops.base import Op

__all__ = ["OPS", "Op", "REGISTERED", "get"]

# Append-only: the order is the CLI's and the reports' op order.
REGISTERED = (
    conv2d.Conv2D,
    batchnorm.BatchNormalization,
    pooling.MaxPooling2D,
    pooling.AveragePooling2D,
    dense.Dense,
    activation.Activation,
    add.Add,
    dropout.Dropout,
    flatten.Flatten,
)

_BY_NAME = {op.name: op() for op in REGISTERED}
# op name (CLI) -> Keras layer class name.
OPS = {name: op.layer for name, op in _BY_NAME.items()}


def get(name) -> Op:
    """The registered op called `name` (ValueError names the registered ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"no op {name!r}; registered: {', '.join(_BY_NAME)}") from None
