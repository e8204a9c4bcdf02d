"""The Markdown of a validation run: one table per claim in the shape of docs/validation.md
(measurement, value, machine, date), and the reading of such tables back."""

__all__ = ["to_markdown", "parse_markdown"]


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
                      f"(runs: {'; '.join(f'`{cmd}`' for cmd in c['commands'])})", ""]
    return "\n".join(lines)


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
