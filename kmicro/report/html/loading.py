"""Records of result files for the report, grouped by their kind (records.kind_of)."""
from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

from kmicro.core import records
from kmicro.core.errors import UsageError

__all__ = ["SECTION_KINDS", "group", "kind", "load"]

kind = records.kind_of
# Kinds with a section of their own, in page order; records of any other kind go to "other".
SECTION_KINDS = ("op", "model", "attribution", "diagnose", "ab", "other")


def load(paths) -> list:
    """Records of every file. Files records.load rejects are accepted when they are JSON
    lists of dicts with a `stack` (diagnose records need not carry case/pass)."""
    loaded = []
    for path in paths:
        try:
            loaded += records.load(path)
        except UsageError:
            loaded += _lenient(path)
    return loaded


def _lenient(path) -> list:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        data = None
    if not isinstance(data, list) or not all(isinstance(r, dict) and "stack" in r for r in data):
        return records.load(path)  # raises the one-line UsageError
    return data


def group(recs) -> dict:
    """{kind: records} for every kind in SECTION_KINDS, in the records' order."""
    groups = OrderedDict((k, []) for k in SECTION_KINDS)
    for r in recs:
        groups.get(kind(r), groups["other"]).append(r)
    return groups
