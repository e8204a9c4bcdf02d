"""The profiler traces JAX and TensorFlow write (XSpace protobufs, `*.xplane.pb`), read without
either framework's protobuf classes, and op time shared out over a step's wall time.

Only the fields kmicro needs are decoded, by their numbers in tsl/profiler/protobuf/xplane.proto
and xla/service/hlo.proto (both stable for years). `shares` turns overlapping op intervals
into parts of each step window that add up to the window: each instant goes to the ops
running then, split evenly when several run at once, and to nobody (framework time) when none
does.
"""
import glob
import os
from dataclasses import dataclass, field

__all__ = ["Event", "Space", "read", "trace_file", "Instruction", "hlo_graph", "shares",
           "step_parts", "FRAMEWORK"]

FRAMEWORK = ("(framework)", "overhead")  # a step's time in which none of its ops ran


@dataclass
class Event:
    name: str
    line: str  # the thread (or stream) it ran on
    start_ps: int
    duration_ps: int
    stats: dict = field(default_factory=dict)  # stat name -> value

    @property
    def end_ps(self) -> int:
        return self.start_ps + self.duration_ps


@dataclass
class Space:
    events: list  # every plane's events
    programs: dict  # compiled program (event metadata name) -> serialized HloProto


def trace_file(log_dir) -> str:
    found = sorted(glob.glob(os.path.join(log_dir, "**", "*.xplane.pb"), recursive=True))
    if not found:
        raise RuntimeError("the profiler wrote no *.xplane.pb under {}".format(log_dir))
    return found[-1]


def read(path) -> Space:
    with open(path, "rb") as f:
        data = f.read()
    events, programs = [], {}
    for number, value in _fields(data):
        if number == 1:  # XSpace.planes
            _plane(value, events, programs)
    return Space(events, programs)


def _plane(data, events, programs):
    lines, event_names, stat_names, metadata = [], {}, {}, []
    for number, value in _fields(data):
        if number == 3:
            lines.append(value)
        elif number == 4:  # map<int64, XEventMetadata>
            entry = _message(value)
            meta = _message(entry.get(2, b""), repeated=(5,))
            event_names[entry.get(1, 0)] = _text(meta.get(2, b""))
            metadata.append(meta)
        elif number == 5:  # map<int64, XStatMetadata>
            entry = _message(value)
            stat_names[entry.get(1, 0)] = _text(_message(entry.get(2, b"")).get(2, b""))
    for meta in metadata:  # compiled programs carry their HloProto as a stat
        for stat in meta.get(5, []):
            s = _message(stat)
            if stat_names.get(s.get(1)) == "Hlo Proto" and 6 in s:
                programs[_text(meta.get(2, b""))] = s[6]
    for line in lines:
        fields = _message(line, repeated=(4,))
        name, base_ps = _text(fields.get(2, b"")), fields.get(3, 0) * 1000
        for raw in fields.get(4, []):
            e = _message(raw, repeated=(4,))
            stats = {}
            for stat in e.get(4, []):
                s = _message(stat)
                value = s.get(5, s.get(7, s.get(4, s.get(3))))
                if 5 in s:
                    value = _text(value)
                elif 7 in s:  # a reference: the string is a stat metadata's name
                    value = stat_names.get(value)
                stats[stat_names.get(s.get(1), "")] = value
            events.append(Event(event_names.get(e.get(1), ""), name, base_ps + e.get(2, 0),
                                e.get(3, 0), stats))


@dataclass
class Instruction:
    op_name: str  # its metadata's op_name: JAX's name-scope path ("" when XLA dropped it)
    operands: list  # instruction names
    users: list = field(default_factory=list)
    fused: list = field(default_factory=list)  # op_names inside the computations it calls


def hlo_graph(hlo_proto: bytes) -> dict:
    """{instruction name: Instruction} of a program's instructions (every computation)."""
    module = _message(hlo_proto).get(1, b"")  # HloProto.hlo_module
    raw, inside = {}, {}
    for number, computation in _fields(module):
        if number != 3:  # HloModuleProto.computations
            continue
        comp = _message(computation, repeated=(2,))
        names = []
        for data in comp.get(2, []):  # HloInstructionProto
            ins = _message(data, repeated=(36, 38))
            op_name = _text(_message(ins.get(7, b"")).get(2, b""))
            raw[ins.get(35)] = (_text(ins.get(1, b"")), op_name, ins[36], ins[38])
            names.append(op_name)
        inside[comp.get(5)] = [n for n in names if n]
    graph = {}
    for name, op_name, operands, called in raw.values():
        graph[name] = Instruction(op_name, [raw[i][0] for v in operands for i in _packed(v)
                                            if i in raw],
                                  fused=[n for v in called for c in _packed(v)
                                         for n in inside.get(c, [])])
    for name, ins in graph.items():
        for operand in ins.operands:
            graph[operand].users.append(name)
    return graph


def shares(intervals, windows) -> list:
    """Per window (start_ps, end_ps): ({key: ps}, covered ps). `intervals` are (start_ps,
    end_ps, key); an instant run by k intervals gives 1/k of itself to each."""
    points = sorted([(s, 1, k) for s, e, k in intervals] + [(e, -1, k) for s, e, k in intervals],
                    key=lambda p: (p[0], p[1]))
    out = []
    for w0, w1 in windows:
        parts, running, covered, last = {}, {}, 0.0, w0
        for t, kind, key in points:
            t = min(max(t, w0), w1)
            if running and t > last:
                k = sum(running.values())
                for name, n in running.items():
                    parts[name] = parts.get(name, 0.0) + (t - last) * n / k
                covered += t - last
            last = max(last, t)
            running[key] = running.get(key, 0) + kind
            if not running[key]:
                del running[key]
        out.append((parts, covered))
    return out


def step_parts(windows, intervals) -> list:
    """[{"layer", "part", "times_s": [per window]}] of `shares`, keys being (layer, part),
    with the windows' uncovered time as FRAMEWORK."""
    if not windows:
        raise RuntimeError("the profile holds no step ranges (kmicro.step trace annotations)")
    per_window = shares(intervals, windows)
    keys = list(dict.fromkeys(k for parts, _ in per_window for k in parts))
    out = [{"layer": k[0], "part": k[1], "times_s": [parts.get(k, 0.0) * 1e-12
                                                    for parts, _ in per_window]} for k in keys]
    framework = [((w1 - w0) - covered) * 1e-12
                 for (w0, w1), (_, covered) in zip(windows, per_window)]
    return out + [{"layer": FRAMEWORK[0], "part": FRAMEWORK[1], "times_s": framework}]


# ---- protobuf wire format ----------------------------------------------------------------

def _varint(data, i):
    shift = result = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _fields(data):
    """(field number, value) of a message: ints for varints, bytes otherwise."""
    i, n = 0, len(data)
    while i < n:
        key, i = _varint(data, i)
        kind = key & 7
        if kind == 0:
            value, i = _varint(data, i)
        elif kind == 1:
            value, i = int.from_bytes(data[i:i + 8], "little"), i + 8
        elif kind == 2:
            size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
        elif kind == 5:
            value, i = int.from_bytes(data[i:i + 4], "little"), i + 4
        else:
            raise ValueError("unsupported protobuf wire type {}".format(kind))
        yield key >> 3, value


def _message(data, repeated=()) -> dict:
    out = {number: [] for number in repeated}
    for number, value in _fields(data):
        if number in repeated:
            out[number].append(value)
        else:
            out[number] = value
    return out


def _packed(value) -> list:
    """A repeated int64 field: packed bytes, or one varint."""
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
