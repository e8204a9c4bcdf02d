"""The models kmicro times per epoch, each written once (see graph.py) for every Keras.

Sources: the two user reports (report 000's cifar10_cnn, report 001's cut-down ResNet) and
Keras' examples/cifar10_resnet.py (ResNet20 v1). Names are result ids: append-only.
"""
from kmicro.core.errors import UsageError
from kmicro.models.graph import INPUT, Augment, Graph, ModelSpec, Optimizer

L2 = ("l2", 1e-4)
RELU = ("Activation", {"activation": "relu"})
# Report 000's script: SGD(lr=0.01, decay=1e-6, momentum=0.9, nesterov=True), batch 32.
REPORT_000_SGD = Optimizer("sgd", 0.01, momentum=0.9, nesterov=True, decay=1e-6)
ADAM = Optimizer("adam", 1e-3)
DEFAULT = ("cifar10_cnn", "resnet_bn", "resnet_nobn")


def cifar10_cnn() -> ModelSpec:
    """Keras 1.2.1 examples/cifar10_cnn.py (conv and relu are separate layers there too)."""
    g = Graph()
    x = INPUT
    for filters in (32, 64):
        x = g.chain(x, ("Conv2D", dict(filters=filters, kernel_size=3, padding="same")), RELU,
                    ("Conv2D", dict(filters=filters, kernel_size=3, padding="valid")), RELU,
                    ("MaxPooling2D", dict(pool_size=2)), ("Dropout", dict(rate=0.25)))
    g.chain(x, ("Flatten", {}), ("Dense", dict(units=512)), RELU, ("Dropout", dict(rate=0.5)),
            ("Dense", dict(units=10)), ("Activation", dict(activation="softmax")))
    return ModelSpec("cifar10_cnn", tuple(g.nodes), REPORT_000_SGD, augment=Augment(),
                     source="report 000: Keras 1.2.1 examples/cifar10_cnn.py")


def _resnet_layer(g, x, bn, filters=16, kernel_size=3, strides=1, activation="relu"):
    """cifar10_resnet.py's resnet_layer (conv_first=True)."""
    x = g.add("Conv2D", x, filters=filters, kernel_size=kernel_size, strides=strides,
              padding="same", kernel_initializer="he_normal", kernel_regularizer=L2)
    if bn:
        x = g.add("BatchNormalization", x)
    if activation:
        x = g.add("Activation", x, activation=activation)
    return x


def _head(g, x):
    g.chain(x, ("AveragePooling2D", dict(pool_size=8)), ("Flatten", {}),
            ("Dense", dict(units=10, activation="softmax", kernel_initializer="he_normal")))


def resnet_cut(bn: bool) -> ModelSpec:
    """Report 001: one resnet_layer, then 3 x (y = resnet_layer(x); x = relu(x + y))."""
    g = Graph()
    x = _resnet_layer(g, INPUT, bn)
    for _ in range(3):
        y = _resnet_layer(g, x, bn)
        x = g.add("Activation", g.add("Add", (x, y)), activation="relu")
    _head(g, x)
    name = "resnet_bn" if bn else "resnet_nobn"
    return ModelSpec(name, tuple(g.nodes), ADAM,
                     source="report 001: cut-down cifar10_resnet.py, BN {}".format(
                         "on" if bn else "off"))


def resnet20() -> ModelSpec:
    """Keras examples/cifar10_resnet.py, resnet_v1 with depth 20 (3 stages x 3 blocks).

    Upstream trains it with Adam(1e-3), batch 32 and the same augmentation as report 000.
    """
    g = Graph()
    x = _resnet_layer(g, INPUT, True)
    filters = 16
    for stage in range(3):
        for block in range(3):
            strides = 2 if stage > 0 and block == 0 else 1
            y = _resnet_layer(g, x, True, filters, strides=strides)
            y = _resnet_layer(g, y, True, filters, activation=None)
            if strides == 2:  # projection shortcut to the new shape
                x = _resnet_layer(g, x, False, filters, kernel_size=1, strides=2, activation=None)
            x = g.add("Activation", g.add("Add", (x, y)), activation="relu")
        filters *= 2
    _head(g, x)
    return ModelSpec("resnet20", tuple(g.nodes), ADAM, augment=Augment(),
                     source="Keras examples/cifar10_resnet.py: ResNet20 v1")


MODELS = {
    "cifar10_cnn": cifar10_cnn,
    "resnet_bn": lambda: resnet_cut(True),
    "resnet_nobn": lambda: resnet_cut(False),
    "resnet20": resnet20,
}


def get(name: str) -> ModelSpec:
    if name not in MODELS:
        raise UsageError("unknown model {!r}; valid models: {}".format(name, ", ".join(MODELS)))
    return MODELS[name]()


def select(names) -> list:
    """Specs by name (comma string or list); default: the reports' three models."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    return [get(n) for n in (names or DEFAULT)]
