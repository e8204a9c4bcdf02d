"""`kmicro sweep`: package versions (or commits) x base stacks, each cell one `kmicro ab` of
the variant against its base, run by an executor (kmicro.harness.executors): on this machine
one cell after another, or on a Ray cluster one cell per node at a time.

A ratio to a reference measured in interleaved rounds on one machine does not carry that
machine's absolute speed, so cells measured on identical nodes make one series. Overlap cells,
measured again on a second node, check that claim on the cluster at hand: nodes whose ratios
disagree beyond their intervals are named, and their cells flagged.
"""
from __future__ import annotations

import platform
import socket
import subprocess
import time
from dataclasses import dataclass

import kmicro
from kmicro.analysis import ab, machine
from kmicro.core import envs, records, stacks, variant_cache
from kmicro.core.errors import UsageError
from kmicro.harness import placement

__all__ = ["Variant", "Cell", "versions", "revisions", "plan", "measure", "node_info",
           "failed_cell", "overlap_cells", "agreement"]


@dataclass(frozen=True)
class Variant:
    label: str  # keras==3.14.0, or keras@<commit> (first 10 hex digits)
    spec: str  # what `kmicro env --set` takes
    repo: str = ""  # the checkout a revision comes from


@dataclass(frozen=True)
class Cell:
    number: int
    base: str  # the stack the variant is compared with
    variant: Variant
    role: str = "cell"  # "overlap": a cell measured again, on another node
    avoid_node: str = ""  # overlap: the node that measured it first

    @property
    def label(self) -> str:
        return f"{self.base} + {self.variant.label}"


def versions(text: str) -> list:
    """`keras==3.13.0,3.14.0` -> one Variant per version of that package."""
    package, sep, listed = text.partition("==")
    chosen = [v.strip() for v in listed.split(",") if v.strip()]
    if not sep or not chosen:
        raise UsageError(f"malformed --set {text!r}; expected NAME==VERSION[,VERSION...], "
                         "e.g. keras==3.13.0,3.14.0,3.15.1")
    envs.parse_set(f"{package}=={chosen[0]}")  # the package name's form
    return [Variant(f"{package}=={v}", f"{package}=={v}") for v in chosen]


def revisions(repo, package: str, revs: str, every: int = 1) -> list:
    """`A..B` of a checkout: every `every`-th commit after A on B's first-parent line, B
    always included; one Variant per commit."""
    first, sep, last = revs.partition("..")
    if not sep or not first or not last:
        raise UsageError(f"malformed --revs {revs!r}; expected A..B (two revisions of --repo)")
    if every < 1:
        raise UsageError("expected --every N >= 1")
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--first-parent",
                          revs], capture_output=True, text=True)
    if out.returncode != 0:
        raise UsageError(f"--revs {revs}: not a range of {repo} "
                         f"({(out.stderr.strip().splitlines() or ['git failed'])[-1]})")
    shas = out.stdout.split()
    if not shas:
        raise UsageError(f"--revs {revs}: no commits after {first} up to {last} in {repo}")
    chosen = shas[every - 1::every]
    if chosen[-1] != shas[-1]:
        chosen.append(shas[-1])
    return [Variant(f"{package}@{sha[:10]}", f"{package}@{sha}", str(repo)) for sha in chosen]


def plan(bases: list, variants: list) -> list:
    """Every base x every variant, numbered; variants of one base together."""
    return [Cell(n, base, v) for n, (base, v) in
            enumerate(((b, v) for b in bases for v in variants), start=1)]


def overlap_cells(done: list, n: int, nodes: list) -> list:
    """Up to `n` of the finished cells `done` [(Cell, node id)], spread over the nodes that
    ran them, to measure again on another node."""
    if n <= 0 or len(nodes) < 2:
        return []
    by_node = {}
    for cell, node in done:
        by_node.setdefault(node, []).append(cell)
    picked, rank = [], 0
    while len(picked) < n and any(len(c) > rank for c in by_node.values()):
        for node, cells in sorted(by_node.items()):
            if rank < len(cells) and len(picked) < n:
                cell = cells[rank]
                picked.append(Cell(cell.number, cell.base, cell.variant, "overlap", node))
        rank += 1
    return picked


def node_info(node_id: str) -> dict:
    """What measured a cell: the executor's node id, the host, its CPU, kmicro's version."""
    models = machine.cpuinfo("model name")
    return {"id": node_id, "host": socket.gethostname(),
            "cpu": models[0] if models else platform.machine(),
            "cpus": len(placement.available()), "kmicro": kmicro.__version__,
            "python": platform.python_version()}


def measure(cell: Cell, case_list: list, passes: list, options, settings, node_id: str) -> list:
    """One cell on this node: its variant built (or found in the cache), then `kmicro ab`
    base vs variant. Returns its records, each naming the cell and the node; a variant that
    cannot be built, or a base this node lacks, gives error records."""
    started, node = time.time(), node_info(node_id)
    got = []
    try:
        (base,) = stacks.resolve([cell.base])
        if not base.installed:
            raise UsageError(f"stack {base.name} is not installed on {node['host']}")
        variant = variant_cache.variant(cell.base, envs.parse_set(cell.variant.spec,
                                                                  cell.variant.repo or None))
        built = time.time()
        ab.run(base, variant, case_list, passes, options, settings, got.append)
    except UsageError as exc:
        built = time.time()
        got = failed_cell(cell, [c.id for c in case_list], passes,
                          f"{cell.variant.label}: {exc}", node)
    ended = time.time()
    for record in got:
        record.update(node=node, cell_start=started, cell_end=ended, build_s=built - started)
        _name_cell(record, cell)
    return got


def failed_cell(cell: Cell, case_ids: list, passes: list, error: str, node=None) -> list:
    """Error records for every case and pass of a cell that could not be measured."""
    info = {"stack": f"{cell.base} vs {cell.label}"}
    found = [records.new("ab", info, case_id, pass_name, stack_a=cell.base,
                         stack_b=cell.label, status="error", verdict="error", error=error,
                         rounds=0, node=node or {"id": "?", "host": "?"}, cell_start=None,
                         cell_end=None, build_s=None)
             for case_id in case_ids for pass_name in passes]
    for record in found:
        _name_cell(record, cell)
    return found


def _name_cell(record, cell):
    record.update(cell=cell.number, base=cell.base, variant=cell.variant.label, role=cell.role)


def agreement(found: list) -> dict:
    """Overlap cells against the first measurement of the same cell, case and pass: they
    agree when their 95 % intervals overlap. Returns {"pairs": [(first, again, agree)],
    "named": [node ids that disagreed in more than half of their comparisons]}."""
    first = {(r["cell"], r["case"], r["pass"]): r for r in found
             if r.get("role") == "cell" and r["status"] == "ok"}
    pairs, tally = [], {}
    for again in (r for r in found if r.get("role") == "overlap" and r["status"] == "ok"):
        before = first.get((again["cell"], again["case"], again["pass"]))
        if before is None:
            continue
        agree = before["ci_low"] <= again["ci_high"] and again["ci_low"] <= before["ci_high"]
        pairs.append((before, again, agree))
        for r in (before, again):
            seen, off = tally.get(r["node"]["id"], (0, 0))
            tally[r["node"]["id"]] = (seen + 1, off + (not agree))
    named = sorted(node for node, (seen, off) in tally.items() if off * 2 > seen)
    return {"pairs": pairs, "named": named}
