"""Frozen layer-case specs and the default catalog.

A case is one Keras layer with one config at one input shape. Its id is a stable
string: result history (kmicro JSON, asv) is keyed by it, so never change how an
existing case spells its id; add new cases instead.
"""
import re
from dataclasses import dataclass
from typing import Optional

from kmicro.core import keras_catalog, ops
from kmicro.core.errors import UsageError

__all__ = ["CATALOGS", "Case", "DATA_FORMATS", "DTYPES", "LAYOUTS", "OPS", "PASSES",
           "SPATIAL_OPS", "TWINNED_OPS", "case_from_dict", "case_to_dict", "catalog",
           "default_catalog", "make_case", "parse_id", "parse_layer", "parse_overrides",
           "parse_shapes", "select", "user_layer_case", "with_passes"]

# op name (CLI) -> Keras layer class name, in registry order. Append-only.
OPS = ops.OPS
PASSES = ("forward", "forward_train", "backward")
DATA_FORMATS = ("channels_last", "channels_first")
# --data-format choices. "auto" = channels_last, plus the channels_first twins of the
# TWINNED_OPS (BN: report 001's workaround is always shown next to the default).
LAYOUTS = ("auto", "channels_last", "channels_first", "both")
TWINNED_OPS = tuple(name for name in OPS if ops.get(name).twinned)
DTYPES = ("float32",)
# Layers whose config takes a data_format argument (the rest are layout-agnostic).
SPATIAL_OPS = frozenset(name for name in OPS if ops.get(name).spatial)
# Rank-2 cases (Dense, and anything after Flatten) have data_format None.
# seed: every distinct layer of the two seed models (the default); keras: one case per class
# of Keras' own layer benchmark; all: both.
CATALOGS = ("seed", "keras", "all")
RANKS = (2, 3, 4, 5, 6)  # input ranks a --shapes entry may have, batch included


@dataclass(frozen=True)
class Case:
    """One layer, one config, one input shape (batch included), one layout."""

    op: str
    config: tuple  # sorted (key, value) pairs of layer kwargs
    input_shape: tuple
    data_format: Optional[str] = "channels_last"
    dtype: str = "float32"
    n_inputs: int = 1  # Add takes several tensors of input_shape

    @property
    def layer(self) -> str:
        if self.op == ops.USER.name:  # the class name of the user's "module:Class"
            return self.kwargs["layer"].rpartition(":")[2]
        return OPS[self.op]

    @property
    def kwargs(self) -> dict:
        return dict(self.config)

    @property
    def id(self) -> str:
        cfg = ",".join(f"{k}={_fmt(v)}" for k, v in self.config)
        shape = "x".join(str(d) for d in self.input_shape)
        fmt = {"channels_last": "/cl", "channels_first": "/cf", None: ""}[self.data_format]
        many = f"*{self.n_inputs}" if self.n_inputs > 1 else ""
        return f"{self.op}({cfg})@{shape}{many}{fmt}"

    def layer_kwargs(self) -> dict:
        """Keyword arguments for the Keras layer constructor, layout included."""
        kwargs = self.kwargs
        kwargs.pop("layer", None) if self.op == ops.USER.name else None
        kwargs.update(ops.get(self.op).layout_kwargs(self.data_format))
        return kwargs


def _fmt(value) -> str:
    if isinstance(value, tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def make_case(op: str, input_shape, data_format="channels_last", n_inputs=1, **config) -> Case:
    """Build a case from a channels_last input shape; transposes for channels_first."""
    shape = tuple(int(d) for d in input_shape)
    if len(shape) != 4 or ops.get(op).layout_free:
        data_format = None
    elif data_format == "channels_first":
        shape = (shape[0], shape[3], shape[1], shape[2])
    return Case(op, tuple(sorted(config.items())), shape, data_format, n_inputs=n_inputs)


def _seed_layers():
    """(op, channels_last input shape, config) of every layer in the two seed models, batch 32."""
    b = 32
    cifar10_cnn = [
        ("conv2d", (b, 32, 32, 3), dict(filters=32, kernel_size=3, padding="same")),
        ("activation", (b, 32, 32, 32), dict(activation="relu")),
        ("conv2d", (b, 32, 32, 32), dict(filters=32, kernel_size=3, padding="valid")),
        ("activation", (b, 30, 30, 32), dict(activation="relu")),
        ("maxpool", (b, 30, 30, 32), dict(pool_size=2)),
        ("dropout", (b, 15, 15, 32), dict(rate=0.25)),
        ("conv2d", (b, 15, 15, 32), dict(filters=64, kernel_size=3, padding="same")),
        ("activation", (b, 15, 15, 64), dict(activation="relu")),
        ("conv2d", (b, 15, 15, 64), dict(filters=64, kernel_size=3, padding="valid")),
        ("activation", (b, 13, 13, 64), dict(activation="relu")),
        ("maxpool", (b, 13, 13, 64), dict(pool_size=2)),
        ("dropout", (b, 6, 6, 64), dict(rate=0.25)),
        ("flatten", (b, 6, 6, 64), {}),
        ("dense", (b, 2304), dict(units=512)),
        ("activation", (b, 512), dict(activation="relu")),
        ("dropout", (b, 512), dict(rate=0.5)),
        ("dense", (b, 512), dict(units=10)),
        ("activation", (b, 10), dict(activation="softmax")),
    ]
    resnet_bn = [
        ("conv2d", (b, 32, 32, 3), dict(filters=16, kernel_size=3, padding="same")),
        ("batchnorm", (b, 32, 32, 16), {}),
        ("activation", (b, 32, 32, 16), dict(activation="relu")),
        ("conv2d", (b, 32, 32, 16), dict(filters=16, kernel_size=3, padding="same")),
        ("add", (b, 32, 32, 16), {}),
        ("avgpool", (b, 32, 32, 16), dict(pool_size=8)),
        ("flatten", (b, 4, 4, 16), {}),
        ("dense", (b, 256), dict(units=10, activation="softmax")),
    ]
    return cifar10_cnn + resnet_bn


def default_catalog(data_format="channels_last") -> list:
    """Every distinct layer case of the seed models, in first-seen order."""
    cases = []
    for op, shape, config in _seed_layers():
        case = make_case(op, shape, data_format, n_inputs=ops.get(op).n_inputs, **config)
        if case not in cases:
            cases.append(case)
    return cases


def catalog(name="seed", data_format="channels_last") -> list:
    """The cases of catalog `name` (one of CATALOGS) in one layout."""
    if name not in CATALOGS:
        raise UsageError(f"unknown catalog {name!r}; valid: {', '.join(CATALOGS)}")
    found = []
    if name in ("seed", "all"):
        found += default_catalog(data_format)
    if name in ("keras", "all"):
        found += [make_case(op, shape, data_format, n_inputs=ops.get(op).n_inputs, **config)
                  for op, shape, config in keras_catalog.LAYERS]
    return list(dict.fromkeys(found))


def select(ops=None, data_format="auto", shapes=None, overrides=None,
           catalog_name="seed") -> list:
    """Catalog `catalog_name` narrowed to `ops` in the layouts `data_format` (one of LAYOUTS)
    names; an op named that has no case there comes from the `all` catalog. `shapes`
    replaces each case's input shape and `overrides` ({key: value}) the layer options of the
    cases that have that option."""
    chosen = list(ops or dict.fromkeys(c.op for c in catalog(catalog_name)))
    unknown = [o for o in chosen if o not in OPS]
    if unknown:
        raise UsageError(f"unknown op {unknown[0]!r}; valid ops: {', '.join(OPS)}")
    if data_format not in LAYOUTS:
        raise UsageError(f"unknown data format {data_format!r}; valid: {', '.join(LAYOUTS)}")
    if overrides:  # checked against every selected op, not per layout (auto twins BN only)
        _check_overrides([c for c in catalog("all") if c.op in chosen], overrides)
    source = catalog_name if not ops else _catalog_of(chosen, catalog_name)
    selected = []
    for fmt in DATA_FORMATS:
        if data_format in (fmt, "both"):
            selected += _select_one(chosen, fmt, shapes, overrides, source)
        elif data_format == "auto":
            twins = [o for o in chosen if o in TWINNED_OPS or fmt == "channels_last"]
            selected += _select_one(twins, fmt, shapes, overrides, source) if twins else []
    return list(dict.fromkeys(selected))


def _catalog_of(chosen, name) -> str:
    """`name`, or `all` when one of the ops chosen has no case in catalog `name`."""
    present = {c.op for c in catalog(name)}
    return name if all(o in present for o in chosen) else "all"


def _select_one(ops, data_format, shapes, overrides, source="seed") -> list:
    cases = [c for c in catalog(source, data_format) if c.op in ops]
    if overrides:
        cases = _override(cases, overrides)
    if shapes:
        cases = _reshape(cases, shapes, data_format)
    return cases


def _check_overrides(cases, overrides):
    known = sorted({k for c in cases for k in c.kwargs})
    unknown = [k for k in overrides if k not in known]
    if unknown:
        raise UsageError(f"unknown layer option {unknown[0]!r} for these ops; valid: "
                         f"{', '.join(known) or 'none'}")


def _override(cases, overrides) -> list:
    out = []
    for case in cases:
        kwargs = dict(case.kwargs, **{k: v for k, v in overrides.items() if k in case.kwargs})
        new = Case(case.op, tuple(sorted(kwargs.items())), case.input_shape, case.data_format,
                   case.dtype, case.n_inputs)
        if new not in out:
            out.append(new)
    return out


def parse_overrides(text: str) -> dict:
    """'filters=64,kernel_size=5' -> {'filters': 64, 'kernel_size': 5}."""
    overrides = {}
    for part in filter(None, (p.strip() for p in re.split(r",(?=\s*\w+=)", text))):
        key, sep, value = part.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"malformed option {part!r}; expected KEY=VALUE[,KEY=VALUE]")
        overrides[key.strip()] = _value(value.strip())
    return overrides


def _value(text):
    """An option's value as a case id spells it: 3, 0.5, True, None, 2x1 (a tuple), text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if re.fullmatch(r"\d+(x\d+)+", text):
        return tuple(int(d) for d in text.split("x"))
    return {"True": True, "False": False, "None": None}.get(text, text)


_ID = re.compile(r"(?P<op>\w+)\((?P<config>.*)\)@(?P<shape>\d+(?:x\d+)*)(?:\*(?P<n>\d+))?"
                 r"(?P<fmt>/cl|/cf)?")


def parse_id(text: str) -> Case:
    """The case a case id names, catalog or not: 'conv2d(filters=8,kernel_size=1,padding=same)
    @32x16x16x8/cl'. UsageError for an unknown op or a malformed id."""
    found = _ID.fullmatch(text.strip())
    if not found:
        raise UsageError(f"malformed case id {text!r}; expected OP(KEY=VALUE,...)@NxHxWxC[*n]"
                         "[/cl|/cf], e.g. conv2d(filters=8,kernel_size=1,padding=same)"
                         "@32x16x16x8/cl (`kmicro ops --list` prints every catalog id)")
    op = found["op"]
    if op not in OPS and op != ops.USER.name:
        raise UsageError(f"unknown op {op!r} in case id; valid ops: {', '.join(OPS)}")
    shape = tuple(int(d) for d in found["shape"].split("x"))
    fmt = {"/cl": "channels_last", "/cf": "channels_first", None: None}[found["fmt"]]
    if fmt == "channels_first" and len(shape) == 4:
        shape = (shape[0], shape[2], shape[3], shape[1])  # make_case takes channels_last
    config = parse_overrides(found["config"]) if found["config"] else {}
    case = make_case(op, shape, fmt or "channels_last", int(found["n"] or ops.get(op).n_inputs),
                     **config)
    if case.id != text.strip():
        raise UsageError(f"case id {text!r} is spelt {case.id!r}; use that spelling "
                         "(history is keyed by it)")
    return case


def parse_layer(spec: str) -> tuple:
    """'mypkg.layers:MyLayer(units=64)' -> ('mypkg.layers:MyLayer', {'units': 64})."""
    found = re.fullmatch(r"\s*([\w.]+):(\w+)(?:\((.*)\))?\s*", spec)
    if not found:
        raise UsageError(f"malformed --layer {spec!r}; expected MODULE:CLASS or "
                         "MODULE:CLASS(KEY=VALUE,...), e.g. mypkg.layers:MyLayer(units=64)")
    kwargs = parse_overrides(found[3]) if found[3] else {}
    return f"{found[1]}:{found[2]}", kwargs


def user_layer_case(spec: str, shape) -> Case:
    """The case of a user's own layer class (`--layer`) at one input shape."""
    path, kwargs = parse_layer(spec)
    if "layer" in kwargs:
        raise UsageError("--layer: `layer` is kmicro's own key; rename that argument")
    return make_case(ops.USER.name, shape, None, layer=path, **kwargs)


def _reshape(cases, shapes, data_format) -> list:
    out = []
    for case in cases:
        rank = len(case.input_shape)
        for shape in shapes:
            if len(shape) == rank:
                new = make_case(case.op, shape, data_format, case.n_inputs, **case.kwargs)
                if new not in out:
                    out.append(new)
    return out


def parse_shapes(text: str) -> list:
    """'32,32,32,3;32,512' -> [(32,32,32,3), (32,512)]: N,F to N,D,H,W,C (channels last),
    each applied to the cases of its rank."""
    shapes = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        try:
            shape = tuple(int(d) for d in part.split(","))
        except ValueError:
            shape = ()
        if len(shape) not in RANKS or min(shape) < 1:
            raise UsageError(
                f"malformed shape {part!r}; expected 2 to 6 positive integers (N,F ... "
                "N,H,W,C ...) separated by ';'")
        shapes.append(shape)
    if not shapes:
        raise UsageError("empty --shapes; expected N,H,W,C or N,F separated by ';'")
    return shapes


def with_passes(passes) -> tuple:
    passes = tuple(passes)
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass {unknown[0]!r}; valid passes: {', '.join(PASSES)}")
    return passes


def case_from_dict(d: dict) -> Case:
    return Case(d["op"], tuple((k, _untuple(v)) for k, v in d["config"]), tuple(d["input_shape"]),
                d["data_format"], d.get("dtype", "float32"), d.get("n_inputs", 1))


def case_to_dict(case: Case) -> dict:
    return {"op": case.op, "config": [list(kv) for kv in case.config],
            "input_shape": list(case.input_shape), "data_format": case.data_format,
            "dtype": case.dtype, "n_inputs": case.n_inputs}


def _untuple(v):
    return tuple(v) if isinstance(v, list) else v

