"""scripts/validate as a user runs it: a quick claim measured for real, its Markdown read back
into the rows its JSON holds (the shape of docs/validation.md), and one-line bad input."""
import subprocess
import sys

import pytest
from conftest import ROOT, load

sys.path.insert(0, str(ROOT / "scripts" / "validate"))
from validation_table import parse_markdown, shown_commands  # noqa: E402

VALIDATE = [sys.executable, str(ROOT / "scripts" / "validate")]


@pytest.mark.slow
def test_quick_memory_claim_writes_tables_it_can_read_back(tmp_path):
    done = subprocess.run([*VALIDATE, "--quick", "--only", "memory", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = load(tmp_path / "validation.json")
    (claim,) = doc["claims"]
    assert claim["status"] == "ok" and claim["commands"][0].startswith("kmicro ops --case")
    tables = parse_markdown((tmp_path / "validation.md").read_text())
    assert tables == {claim["title"]: [(r["measurement"], r["value"]) for r in claim["rows"]]}
    held, _, measured = tables[claim["title"]][0][1].split()[:3]  # "N of M (stacks)"
    assert int(measured) > 0 and held == measured


def test_the_docs_have_a_table_for_every_claim_validate_measures():
    import claims

    tables = parse_markdown((ROOT / "docs" / "validation.md").read_text())
    assert [c.title for c in claims.CLAIMS] == list(tables)
    assert all(rows for rows in tables.values())


def test_commands_that_differ_only_in_a_counting_number_are_shown_once_with_n():
    seeds = [f"kmicro ab jax plant --seed {n} --json OUT/planted-{n}.json" for n in range(1, 21)]
    commands = ["kmicro stack add plant --python 3.11", *seeds, "kmicro ab jax plant --seed 7",
                "kmicro ops --json OUT/a-1.json", "kmicro ops --json OUT/a-2.json"]
    assert shown_commands(commands) == [
        "`kmicro stack add plant --python 3.11`",
        "`kmicro ab jax plant --seed N --json OUT/planted-N.json` for N = 1..20",
        "`kmicro ab jax plant --seed 7`",  # a run of one, then a run of two: each as it is
        "`kmicro ops --json OUT/a-1.json`", "`kmicro ops --json OUT/a-2.json`"]
    # numbers that change together but not from the same value are not one counter
    mixed = [f"kmicro ab --seed {n} --rounds {n + 4}" for n in range(1, 5)]
    assert shown_commands(mixed) == [f"`{c}`" for c in mixed]


def test_an_unknown_claim_is_one_line_exit_2():
    done = subprocess.run([*VALIDATE, "--only", "nosuch"], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 2 and not done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("validate: error: unknown claim 'nosuch'; valid claims: overhead,")
