"""In-situ attribution on JAX: the model's real train step under jax.profiler, the compiled
program's op time given to Keras layers through the name scopes XLA keeps in each op's
metadata.

Keras 3 calls every layer under `jax.named_scope(layer.name)`, and JAX names the
differentiation it did, so an op of the compiled `train_step` is named e.g.
`jit(train_step)/jvp(conv2d)/conv_general_dilated` (the layer's forward),
`jit(train_step)/transpose(jvp(conv2d))/...` (its backward), `.../jvp(compile_loss)/...` (the
loss) or `jit(train_step)/adam/...` (the optimizer update). The profiler's trace holds the
compiled program (its HloProto, with that metadata) and one event per executed op (thunk),
on whichever thread ran it; kmicro/backends/xplane.py shares each step's wall time among
them. Time no op of the step ran in is framework time (Keras' Python, dispatch, copies).
"""
from __future__ import annotations

import re
import tempfile
import time

import jax

from kmicro.backends import xplane
from kmicro.backends.name_scopes import jax_part

__all__ = ["profile_steps"]

STEP = "kmicro.step"
# ops of compiled programs other than the step's own (Keras jits some metric updates and
# conversions apart): they ran inside the step, so they are op time, not framework time
OTHER_PROGRAMS = ("(other programs)", "forward")


def profile_steps(model, layers, train, steps, phase="train") -> dict:
    """As in_situ_torch.profile_steps: {"steps_s", "parts": [{"layer", "part", "times_s"}]};
    `phase` names the compiled program (jit_train_step, jit_test_step)."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # a trace of every Python call would be most of the step
    walls = []
    with tempfile.TemporaryDirectory(prefix="kmicro-jax-trace-") as log_dir:
        train()  # the step once more outside the profile, as the first profiled one
        with jax.profiler.trace(log_dir, profiler_options=options):
            for _ in range(steps):
                t0 = time.perf_counter()
                with jax.profiler.TraceAnnotation(STEP):
                    train()
                walls.append(time.perf_counter() - t0)
        space = xplane.read(xplane.trace_file(log_dir))
    return {"steps_s": walls, "parts": _parts(space, _Scopes(model, layers), phase)}


def _parts(space, scopes, phase) -> list:
    windows = sorted((e.start_ps, e.end_ps) for e in space.events if e.name == STEP)
    program = _program(space, "jit_{}_step".format(phase))
    graph = xplane.hlo_graph(space.programs[program])
    module = program.split("(")[0]
    intervals = [(e.start_ps, e.end_ps, scopes.part(graph, e.name) if e.name in graph
                  else OTHER_PROGRAMS) for e in space.events
                 if e.stats.get("hlo_module") == module and e.name in graph
                 or e.stats.get("hlo_module") not in (None, module)]
    return xplane.step_parts(windows, intervals)


def _program(space, prefix) -> str:
    """The compiled program of Keras' train or test step (e.g. "jit_train_step(24)")."""
    found = [name for name in space.programs if name.startswith(prefix)]
    if not found:
        raise RuntimeError("no {} program in the profile (programs: {})".format(
            prefix, ", ".join(sorted(space.programs)) or "none"))
    return found[-1]


class _Scopes:
    """What an op of the train step belongs to: a layer's forward or backward, the loss, the
    optimizer update, or other ops.

    An op keeps the name scope of what it computes, except where XLA dropped its metadata
    (YNNPACK's custom fusions of convolutions and dots on the CPU). Those are placed through
    the train step's arguments, `state[i][j]` being Keras' (trainable, non-trainable,
    optimizer, metrics) variables: an op reading a layer's weight (through copies) is that
    layer's; one whose result only the optimizer consumes is the weight gradient of the
    variable the optimizer updates with it. A fusion across layers is named after its root
    op; when that op's layer has no weights and the fusion reads another layer's, it is the
    other layer's (a convolution with the pooling after it folded in).
    """

    def __init__(self, model, layers):
        self.layers = {layer.name for layer in layers}
        self.optimizer = model.optimizer.name
        owner = {id(v): layer.name for layer in layers for v in layer.trainable_variables}
        self.trainable = [owner.get(id(v)) for v in model.trainable_variables]
        # Keras names an optimizer slot after its variable's path: "conv2d_kernel_momentum".
        by_length = sorted(self.layers, key=len, reverse=True)
        self.slots = [next((n for n in by_length if v.name.startswith(n + "_")), None)
                      for v in model.optimizer.variables]

    def part(self, graph, name) -> tuple:
        ins = graph[name]
        weight = self._weight_read(graph, ins)
        named = ins.op_name if not ins.op_name.startswith("state[") else ""
        if ins.fused and not named:
            named = max(set(ins.fused), key=ins.fused.count)
        if named:
            layer, pass_name = jax_part(named, self.layers, self.optimizer)
            if weight and layer in self.layers and layer not in self.trainable:
                return weight, pass_name  # e.g. a conv with the pooling after it fused in
            return layer, pass_name
        if weight:
            backward = any(graph[o].op_name.split("/")[1:2] and "transpose(" in graph[o].op_name
                           for o in ins.operands)
            return weight, "backward" if backward else "forward"
        updated = self._updated(graph, ins)
        if updated:
            return updated, "backward"
        return "(other ops)", "forward"

    def _weight_read(self, graph, ins, depth=3):
        """The layer of a trainable weight `ins` reads directly or through unnamed copies."""
        for operand in ins.operands:
            op = graph[operand]
            index = _state(op.op_name, 0)
            if index is not None and index < len(self.trainable):
                return self.trainable[index]
            if not op.op_name and depth and len(op.operands) == 1:
                found = self._weight_read(graph, op, depth - 1)
                if found:
                    return found
        return None

    def _updated(self, graph, ins):
        """The layer whose optimizer slots the users of `ins` update, if only the optimizer
        (or unnamed ops in front of it) uses its result."""
        found = set()
        for user in ins.users:
            op = graph[user]
            if op.op_name.split("/")[1:2] == [self.optimizer]:
                found.update(self.slots[i] for i in (_state(graph[o].op_name, 2)
                                                     for o in op.operands) if i is not None
                             and i < len(self.slots) and self.slots[i])
            elif op.op_name:
                return None
        return found.pop() if len(found) == 1 else None


def _state(op_name, group):
    """j of a parameter named "state[group][j]", else None."""
    m = re.match(r"^state\[(\d+)\]\[(\d+)\]$", op_name)
    return int(m.group(2)) if m and int(m.group(1)) == group else None
