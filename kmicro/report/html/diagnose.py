"""The diagnose section (key/value findings per record) and records of no known kind."""
from __future__ import annotations

from html import escape

from kmicro.report.html.markup import key_values

__all__ = ["diagnose_section", "other_section"]

# Shown in a finding's heading, in the environment table, or not at all.
NOT_FINDINGS = {"stack", "case", "data_format", "status", "error", "kind", "findings", "schema",
                "versions", "backend", "python", "device_name", "jit", "time", "load_avg_1m",
                "cpu_count"}


def diagnose_section(diag) -> str:
    if not diag:
        return ""
    parts = ["<h2 id='diagnose'>Diagnose findings</h2>"]
    for r in diag:
        title = " · ".join(str(r[k]) for k in ("stack", "case", "data_format", "status")
                           if r.get(k))
        error = f"<p class='bad'>{escape(str(r['error']))}</p>" if r.get("error") else ""
        parts.append(f"<h3>{escape(title)}</h3>{error}"
                     + "".join(key_values(f) for f in _findings(r)))
    return "".join(parts)


def _findings(record) -> list:
    """Key/value mappings to show: each item of `findings` (plus the `facts` dict), else the
    record's own fields (a `finding` dict is flattened into them)."""
    if isinstance(record.get("findings"), list):
        facts = [record["facts"]] if isinstance(record.get("facts"), dict) and record["facts"] \
            else []
        return [f if isinstance(f, dict) else {"finding": f} for f in record["findings"]] + facts
    fields = {k: v for k, v in record.items() if k not in NOT_FINDINGS}
    if isinstance(fields.get("finding"), dict):
        fields.update(fields.pop("finding"))
    return [fields]


def other_section(others) -> str:
    if not others:
        return ""
    return (f"<h2 id='other'>Other records</h2><p class='note'>{len(others)} records of no "
            "known kind (no op, model or finding).</p>" + "".join(key_values(r) for r in others))
