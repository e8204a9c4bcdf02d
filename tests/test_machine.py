"""`kmicro machine`: it runs as a user runs it and prints every field, says which figures it
cannot read here and carries on, and keeps the kernel-selecting variables in its records.
No timing assertions: the A/A's numbers are whatever this machine gives."""
import subprocess

import pytest
from conftest import KMICRO, ROOT, load, run_kmicro

# One xdist worker runs these: the A/A times on both CPUs.
pytestmark = pytest.mark.xdist_group("machine")

FACTS = ("CPU model", "CPUs kmicro may use", "load average (1, 5, 15 min)", "frequency governor",
         "turbo",
         "isolated CPUs", "time stolen by other guests")


def test_machine_prints_its_fields_and_a_short_aa(tmp_path):
    out = tmp_path / "machine.json"
    done = run_kmicro("machine", "--seconds", "10", "--json", str(out),
                      env={"OMP_NUM_THREADS": "2", "TF_CLI_CONFIG_FILE": "/dev/null"})
    assert done.returncode == 0, done.stderr
    for field in FACTS + ("vCPU speed", "correlation", "OMP_NUM_THREADS", "A/A", "MDE now"):
        assert field in done.stdout, field
    assert "TF_CLI_CONFIG_FILE" not in done.stdout  # not a kernel-selecting variable
    assert "is the smallest `kmicro ab` can tell apart here now" in done.stdout
    doc = load(out)
    assert {f["name"] for f in doc["facts"]} >= set(FACTS)
    assert 0 < doc["smallest_effect"] < 1
    ok = [r for r in doc["aa"] if r["status"] == "ok"]
    assert len(ok) == 4 and all(r["rounds"] >= 2 for r in ok)
    # every record keeps the variables its worker ran with
    assert all(r["kernel_env"].get("OMP_NUM_THREADS") == "2" for r in ok)


def test_one_cpu_is_said_in_its_row_and_the_rest_goes_on():
    done = subprocess.run(["taskset", "-c", "0", *KMICRO, "machine", "--seconds", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "one CPU: no second CPU to drift against" in done.stdout
    assert "CPUs kmicro may use" in done.stdout and "A/A" not in done.stdout


@pytest.mark.parametrize("args, text", [
    (["--seconds", "5"], "expected --seconds 0 (no A/A) or at least 10"),
    (["--stack", "nosuch"], "unknown stack 'nosuch'; valid stacks:"),
])
def test_bad_input_is_one_line_exit_2(args, text):
    done = run_kmicro("machine", *args)
    assert done.returncode == 2 and not done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert text in line


def test_ab_and_bisect_hint_at_kmicro_machine_only_when_the_mde_is_above_the_min_effect():
    from kmicro.report import ab_tables

    def record(mde):
        return {"status": "ok", "mde": mde, "min_effect": 0.03}

    line = ab_tables.noise_hint([record(0.02), record(0.05), record(0.06)])
    assert line.startswith("hint: the median MDE (5.0%) is above --min-effect (3%)")
    assert "`kmicro machine`" in line
    assert ab_tables.noise_hint([record(0.02), record(0.025), record(0.06)]) is None
    assert ab_tables.noise_hint([{"status": "error", "mde": None}]) is None


def test_a_pass_timed_once_gives_no_mde():
    from kmicro.analysis import machine

    once = {"status": "ok", "rounds": 1, "mde": 0.0}  # one round: the interval is a point
    twice = {"status": "ok", "rounds": 25, "mde": 0.05}
    assert machine.expected_mde(once) is None
    assert 0 < machine.expected_mde(twice) < 0.05  # projected to ab's 80 rounds
    assert machine.smallest_effect([once, twice]) == machine.expected_mde(twice)
