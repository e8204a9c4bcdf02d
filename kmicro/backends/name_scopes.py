"""Which part of a Keras 3 train step an op belongs to, read from the name scopes in its name.
Framework-free, so tests read it without one; kmicro/backends/keras3/in_situ_jax.py and
in_situ_tf.py use it.

A part is (layer name, pass) for a layer's forward or backward, or ("(loss)", pass),
("(metrics)", "forward"), ("(optimizer)", "update"), ("(other ops)", pass).
"""
from __future__ import annotations

import re

__all__ = ["jax_part", "tf_part"]

_JAX_SCOPE = re.compile(r"^(transpose\()?jvp\((.+?)\)\)?$")


def jax_part(op_name, layer_names, optimizer) -> tuple:
    """(layer or (part), pass) of one op from its name-scope path."""
    scopes = op_name.split("/")[1:]  # past jit(train_step)
    backward = any(s.startswith("transpose(") for s in scopes)
    for scope in scopes:
        m = _JAX_SCOPE.match(scope)
        inner = m.group(2) if m else scope
        if inner in layer_names:
            return inner, "backward" if backward else "forward"
        if inner == "compile_loss":
            return "(loss)", "backward" if backward else "forward"
        if "metrics" in inner:
            return "(metrics)", "forward"
    if scopes and scopes[0] == optimizer:
        return "(optimizer)", "update"
    return "(other ops)", "backward" if backward else "forward"


def tf_part(op_name, layer_names, optimizer) -> tuple:
    """(layer or (part), pass) of one op from its name scopes."""
    scopes = op_name.split("/")
    backward = scopes[0] == "gradient_tape"
    for scope in scopes[:-1]:
        base = re.sub(r"_\d+$", "", scope)
        for name in (scope, base):
            if name in layer_names:
                return name, "backward" if backward else "forward"
        if scope == "compile_loss":
            return "(loss)", "backward" if backward else "forward"
        if "metrics" in scope:
            return "(metrics)", "forward"
    if scopes[0] == optimizer:
        return "(optimizer)", "update"
    return "(other ops)", "backward" if backward else "forward"
