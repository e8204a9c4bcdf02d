"""Which part of a Keras 3 train step an op belongs to, read from the name scopes in its name.
Framework-free, so tests read it without one; kmicro/backends/keras3/in_situ_jax.py and
in_situ_tf.py use it.

A part is (layer name, pass) for a layer's forward or backward, or ("(loss)", pass),
("(metrics)", "forward"), ("(optimizer)", "update"), ("(other ops)", pass).
"""
import re

__all__ = ["jax_part", "tf_part"]

_JAX_SCOPE = re.compile(r"^(transpose\()?jvp\((.+?)\)\)?$")


def jax_part(op_name, layer_names, optimizer) -> tuple:
    """(layer or (part), pass) of an op of a jitted step: `jit(train_step)/jvp(conv2d)/...`
    forward, `.../transpose(jvp(conv2d))/...` backward, `jit(train_step)/adam/...`."""
    scopes = op_name.split("/")[1:]  # past jit(train_step)
    inner = [m.group(2) if m else s for s, m in ((s, _JAX_SCOPE.match(s)) for s in scopes)]
    backward = any(s.startswith("transpose(") for s in scopes)
    return _part(inner, backward, layer_names, optimizer)


def tf_part(op_name, layer_names, optimizer) -> tuple:
    """(layer or (part), pass) of a TensorFlow op: `functional_1/conv2d_1/...` forward
    (Keras makes scope names unique with a suffix), `gradient_tape/...` backward, `adam/...`."""
    scopes = op_name.split("/")[:-1]  # the last part is the op's own name
    names = [s if s in layer_names else re.sub(r"_\d+$", "", s) for s in scopes]
    return _part(names, scopes[:1] == ["gradient_tape"], layer_names, optimizer)


def _part(scopes, backward, layer_names, optimizer) -> tuple:
    pass_name = "backward" if backward else "forward"
    for scope in scopes:
        if scope in layer_names:
            return scope, pass_name
        if scope == "compile_loss":
            return "(loss)", pass_name
        if "metrics" in scope:
            return "(metrics)", "forward"
    if scopes[:1] == [optimizer]:
        return "(optimizer)", "update"
    return "(other ops)", pass_name
