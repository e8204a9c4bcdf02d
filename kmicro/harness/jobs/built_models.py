"""The models an attribution worker builds: a zoo model or the user's module:function, whole
or without one layer type, each built and compiled once per worker."""
import importlib
import sys
from dataclasses import replace

from kmicro.harness.protocol import message
from kmicro.models import zoo

__all__ = ["Session", "UserModelError", "without"]


class UserModelError(Exception):
    """The user's module:function does not import, raises, or returns no model: bad usage."""


class Session:
    """The adapter plus the models built so far in this worker."""

    def __init__(self, adapter):
        self.adapter = adapter
        self._built = {}

    def built(self, payload, ablate=None):
        """(model, models.epoch.Trainer) compiled for training, built once per worker."""
        key = (payload["source"], payload["seed"], ablate)
        if key not in self._built:
            self._built[key] = self._build(payload, ablate)
        return self._built[key]

    def _build(self, payload, ablate):
        if payload["builtin"]:
            spec = zoo.get(payload["source"])
            return self.adapter.builtin(without(spec, ablate) if ablate else spec,
                                        payload["seed"])
        model = self._user_model(payload)
        if ablate:
            model = self.adapter.without(model, ablate)
        return model, self.adapter.compile_user(model)

    def _user_model(self, payload):
        a, source = self.adapter, payload["source"]
        flag = "--model-keras2" if a.family == "keras2" else "--model"
        module_name, _, name = source.partition(":")
        if payload.get("cwd") and payload["cwd"] not in sys.path:
            sys.path.insert(0, payload["cwd"])  # where the user ran kmicro, as `python -m` does
        try:
            function = getattr(importlib.import_module(module_name), name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is the user's input
            raise UserModelError("{} {}: cannot import it ({})".format(flag, source, message(exc)))
        a.seed(payload["seed"])
        try:
            model = function()
        except Exception as exc:  # noqa: BLE001
            raise UserModelError("{} {}: calling it raised {}".format(flag, source, message(exc)))
        if not a.is_model(model):
            raise UserModelError("{} {} returned {}, not {}".format(
                flag, source, type(model).__name__, a.model_kind))
        return model


def without(spec, layer_type):
    """A built-in spec with every `layer_type` node removed; its readers read its input."""
    skip = {n.name: n.inputs[0] for n in spec.nodes if n.layer == layer_type}

    def source(name):
        while name in skip:
            name = skip[name]
        return name

    nodes = tuple(replace(n, inputs=tuple(source(i) for i in n.inputs))
                  for n in spec.nodes if n.name not in skip)
    return replace(spec, nodes=nodes)
