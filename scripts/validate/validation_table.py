"""The Markdown of a validation run: one table per claim in the shape of docs/validation.md
(measurement, value, machine, date), and the reading of such tables back."""

import re

__all__ = ["to_markdown", "parse_markdown", "shown_commands"]


def to_markdown(doc) -> str:
    """One section per claim: its rows as docs/validation.md shows them, then the command."""
    lines = [f"# Validation on {doc['machine']}, {doc['date']} (kmicro {doc['commit'][:10]}"
             f"{', quick' if doc['quick'] else ''})", ""]
    for c in doc["claims"]:
        lines += [f"## {c['title']}", "", "| measurement | value | machine | date |",
                  "|---|---|---|---|"]
        rows = c["rows"] or [{"measurement": c["status"], "value": c["why"]}]
        lines += [f"| {r['measurement']} | {r['value']} | {doc['machine']} | {doc['date']} |"
                  for r in rows]
        quick = " --quick" if doc["quick"] else ""
        lines += ["", f"Re-measure: `.venv/bin/python scripts/validate --only {c['id']}{quick}` "
                      f"(runs: {'; '.join(shown_commands(c['commands']))})", ""]
    return "\n".join(lines)


def shown_commands(commands) -> list:
    """Each command in backticks, where three or more in a row differ only in one counting
    number (`--seed 1 --json OUT/planted-1.json`, then 2, 3, ...) shown once, with N."""
    shown, i = [], 0
    while i < len(commands):
        count, varying = _counted_run(commands, i)
        if count < 3:
            shown.append(f"`{commands[i]}`")
            i += 1
            continue
        parts = _numbered(commands[i])
        first = int(parts[varying[0]])
        for at in varying:
            parts[at] = "N"
        shown.append(f"`{''.join(parts)}` for N = {first}..{first + count - 1}")
        i += count
    return shown


def _numbered(command) -> list:
    """The command split so that every odd item is a run of digits."""
    return re.split(r"(\d+)", command)


def _counted_run(commands, start) -> tuple:
    """How many commands from `start` differ from it only where its numbers, all equal, count
    up by one per command; and those positions in `_numbered`."""
    base, varying, count = _numbered(commands[start]), None, 1
    for command in commands[start + 1:]:
        parts = _numbered(command)
        if len(parts) != len(base) or parts[0::2] != base[0::2]:
            break
        differ = [at for at, (a, b) in enumerate(zip(base, parts)) if a != b]
        varying = differ if varying is None else varying
        if (not differ or differ != varying or len({base[at] for at in differ}) > 1
                or any(int(parts[at]) != int(base[at]) + count for at in differ)):
            break
        count += 1
    return count, varying


def parse_markdown(text) -> dict:
    """{claim title: [(measurement, value)]} of a table written by to_markdown (or read from
    docs/validation.md, whose tables have the same shape)."""
    found, title = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            found[title] = []
        elif title and line.startswith("| ") and not line.startswith(("| measurement", "|---")):
            cells = [c.strip() for c in line.strip("|").split("|")]
            found[title].append((cells[0], cells[1]))
    return found
