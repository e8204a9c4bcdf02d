"""Framework-free model descriptions: one definition per model, built by every Keras.

A model is a small graph of layer nodes in topological order. Each node names a Keras
layer class that exists under the same name and with the same keyword arguments in
Keras 2.2.4, 2.3.1 and 3, so both backend builders can hand the same description to
`build`. The only value that is not plain data, a weight regularizer, is a tagged tuple
("l2", factor) that `build` turns into the Keras object.

Must import on Python 3.6 (the Keras 1 and 2 stacks run it inside their workers).
"""
from dataclasses import dataclass
from typing import Optional

INPUT = "input"


@dataclass(frozen=True)
class Node:
    name: str
    layer: str  # Keras layer class name, e.g. "Conv2D"
    inputs: tuple  # names of the nodes it reads (INPUT = the model input)
    kwargs: tuple = ()  # sorted (key, value) pairs, so the spec stays frozen and hashable

    def config(self) -> dict:
        return dict(self.kwargs)


@dataclass(frozen=True)
class Optimizer:
    name: str  # "sgd" | "adam"
    learning_rate: float
    momentum: float = 0.0
    nesterov: bool = False
    decay: float = 0.0  # Keras 1/2 `decay`: lr / (1 + decay * iterations)

    def describe(self) -> str:
        if self.name == "adam":
            return "Adam(lr={:g})".format(self.learning_rate)
        return "SGD(lr={:g}, decay={:g}, momentum={:g}, nesterov={})".format(
            self.learning_rate, self.decay, self.momentum, self.nesterov)


@dataclass(frozen=True)
class Augment:
    """ImageDataGenerator's options as the reports' scripts set them."""

    width_shift: float = 0.1
    height_shift: float = 0.1
    horizontal_flip: bool = True
    fill_mode: str = "nearest"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    nodes: tuple
    optimizer: Optimizer
    augment: Optional[Augment] = None  # on by default when the report's script augmented
    batch_size: int = 32
    input_shape: tuple = (32, 32, 3)  # channels_last, without the batch
    num_classes: int = 10
    loss: str = "categorical_crossentropy"
    source: str = ""  # where the architecture comes from

    @property
    def output(self) -> str:
        return self.nodes[-1].name


class Graph:
    """Collects nodes; `add` returns the new node's name to wire later nodes to it."""

    def __init__(self):
        self.nodes = []

    def add(self, layer, inputs, **kwargs) -> str:
        name = "{}_{}".format(layer.lower(), len(self.nodes))
        inputs = (inputs,) if isinstance(inputs, str) else tuple(inputs)
        self.nodes.append(Node(name, layer, inputs, tuple(sorted(kwargs.items()))))
        return name

    def chain(self, x, *layers) -> str:
        """Apply (layer, kwargs) pairs one after another from x."""
        for layer, kwargs in layers:
            x = self.add(layer, x, **kwargs)
        return x


def build(spec: ModelSpec, keras):
    """The functional model of `spec`, using the `keras` module given (Keras 2 or 3)."""
    tensors = {INPUT: keras.layers.Input(shape=spec.input_shape)}
    for node in spec.nodes:
        layer = getattr(keras.layers, node.layer)(**_kwargs(node, keras))
        args = [tensors[name] for name in node.inputs]
        tensors[node.name] = layer(args if len(args) > 1 else args[0])
    return keras.models.Model(inputs=tensors[INPUT], outputs=tensors[spec.output], name=spec.name)


def _kwargs(node, keras) -> dict:
    config = node.config()
    for key, value in config.items():
        if isinstance(value, tuple) and value and value[0] == "l2":
            config[key] = keras.regularizers.l2(value[1])
    return config


def count_layers(spec: ModelSpec, layer: str) -> int:
    return sum(1 for n in spec.nodes if n.layer == layer)
