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


@pytest.mark.skipif(len(placement.available()) < 2, reason="needs two CPUs")
def test_same_cpu_rounds_are_recorded(kmicro, tmp_path):
    out = tmp_path / "ab.json"
    done = kmicro("ab", "numpy", "numpy", "--ops", "dense", "--passes", "forward", "--shapes",
                  "8,16", "--set", "units=10", "--rounds", "4", "--min-rounds", "2",
                  "--processes", "2", "--same-cpu", "--min-effect", "0.5", "--json", str(out))
    assert done.returncode == 0, done.stderr
    records = load(out)
    assert records and all(r["status"] == "ok" and r["same_cpu"] is True for r in records)
    assert all(len(r["times_a_s"]) == r["rounds"] >= 2 for r in records)
    # the workers started on one CPU, so their frameworks sized their pools for one
    assert all(len(r["cpus"]) == 1 for r in records)
