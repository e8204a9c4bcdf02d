"""kmicro.harness.placement on real processes: every thread of a process goes where it is put,
and `kmicro ab --same-cpu` runs its rounds that way and says so in its records."""
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load

from kmicro.harness import placement

THREADS = """
import threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


def allowed(pid) -> dict:
    """{thread id: its Cpus_allowed_list} of process `pid`."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out[task.name] = line.split(":", 1)[1].strip()
    return out


@pytest.mark.skipif(len(placement.available()) < 2, reason="needs two CPUs")
def test_pin_moves_every_thread_of_a_process():
    child = subprocess.Popen([sys.executable, "-c", THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        first, *rest = placement.available()
        placement.pin(child.pid, {first})
        threads = allowed(child.pid)
        assert len(threads) == 4 and set(threads.values()) == {str(first)}
        placement.pin(child.pid, set(rest))
        assert str(first) not in "".join(allowed(child.pid).values()).split(",")
    finally:
        child.kill()
        child.wait()
    placement.pin(child.pid, {first})  # gone: nothing to do, no error


def test_a_round_is_timed_on_one_half_of_the_cpus():
    cpus = placement.available()
    halves = placement.halves(True)
    if len(cpus) < 2:
        assert halves == []
    else:  # two vCPUs: one each; sixteen: eight each, so kernels keep their threads
        assert len(halves) == 2 and len(halves[0]) == len(halves[1]) == len(cpus) // 2
        assert not halves[0] & halves[1] and halves[0] | halves[1] <= set(cpus)
    assert placement.halves(False) == []
    assert placement.apart([{0, 1}, {2, 3}], 3, first=1) == [{2, 3}, {0, 1}, {2, 3}]
    assert placement.apart([], 2) == [None, None]


def test_same_cpu_is_the_default_of_ab_and_bisect():
    from kmicro.cli import common
    from kmicro.cli import build_parser

    parser = build_parser()
    ab_args = parser.parse_args(["ab", "numpy", "numpy"])
    assert common.judging_settings(ab_args).same_cpu is True
    off = parser.parse_args(["ab", "numpy", "numpy", "--no-same-cpu"])
    assert common.judging_settings(off).same_cpu is False
    bisect_args = parser.parse_args(["bisect", "--repo", ".", "--good", "a", "--bad", "b",
                                     "--from", "jax", "--package", "keras", "--case", "x"])
    assert common.judging_settings(bisect_args).same_cpu is True


@pytest.mark.skipif(len(placement.available()) < 2, reason="needs two CPUs")
def test_same_cpu_rounds_are_recorded(kmicro, tmp_path):
    out = tmp_path / "ab.json"
    done = kmicro("ab", "numpy", "numpy", "--ops", "dense", "--passes", "forward", "--shapes",
                  "8,16", "--set", "units=10", "--rounds", "4", "--min-rounds", "2",
                  "--processes", "2", "--min-effect", "0.5", "--json", str(out))  # by default
    assert done.returncode == 0, done.stderr
    records = load(out)
    assert records and all(r["status"] == "ok" and r["same_cpu"] is True for r in records)
    assert all(len(r["times_a_s"]) == r["rounds"] >= 2 for r in records)
    # the workers started on one half of the CPUs, so their frameworks sized their pools for it
    half = len(placement.available()) // 2
    assert all(len(r["cpus"]) == half and len(r["cpu_sets"]) == 2 for r in records)
    assert all(r["rounds_needed"] >= r["rounds"] for r in records)
    assert "power: " in done.stdout and "passes resolved the minimum effect of 50%" in done.stdout
