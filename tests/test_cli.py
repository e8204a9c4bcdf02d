"""The CLI as a user runs it: a subprocess, real stacks, real files."""
import json
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import KMICRO, ROOT, load

CONTRACT = ("stack", "backend", "versions", "device", "case", "op", "pass", "input_shape",
            "data_format", "status", "median_s", "iqr_s", "compile_s", "max_rel_err", "error")


@pytest.mark.parametrize("args, valid", [
    (["ops", "--ops", "conv4d"], "valid ops: conv2d, batchnorm"),
    (["ops", "--stacks", "tf"], "valid stacks: tensorflow, jax, torch, numpy"),
    (["ops", "--passes", "sideways"], "valid passes: forward, forward_train, backward"),
    (["ops", "--shapes", "32,x,3"], "positive integers (N,F ... N,H,W,C ...)"),
    (["ops", "--data-format", "nhwc"], "channels_last"),
    (["ops", "--device", "tpu"], "'auto', 'cpu', 'gpu'"),
    (["stacks", "--stacks", "tf"], "valid stacks: tensorflow, jax, torch, numpy"),
    (["frobnicate"], "stacks"),
])
def test_bad_input_is_one_line_and_exit_2(kmicro, args, valid):
    p = kmicro(*args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert valid in p.stderr


def test_help_lists_the_command_modules_in_their_one_order(kmicro):
    from kmicro.cli import COMMANDS

    names = [module.__name__.rsplit(".", 1)[1] for module in COMMANDS]
    p = kmicro("--help", env={"COLUMNS": "200"})
    assert p.returncode == 0 and "{" + ",".join(names) + "}" in p.stdout
    listed = [line.split()[0] for line in p.stdout.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == names


def test_reference_names_every_command_and_flag():
    """docs/reference.md is the reference: a flag added to a command must be documented."""
    from kmicro.cli import build_parser

    text = (ROOT / "docs" / "reference.md").read_text()
    sections = {part.split("\n", 1)[0].strip(): part for part in text.split("\n### kmicro ")[1:]}
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sections) == list(sub.choices)
    missing = [f"{name} {flag}" for name, parser in sub.choices.items()
               for action in parser._actions for flag in action.option_strings
               if flag.startswith("--") and flag != "--help"
               and not re.search(rf"(?<![\w-]){flag}(?![\w-])", sections[name])]
    assert not missing


def test_parser_imports_neither_rich_nor_the_harness():
    """`kmicro --help` stays fast: commands import their heavy modules when they run."""
    code = ("import sys; from kmicro import cli; cli.build_parser(); "
            "print(' '.join(sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    heavy = ("rich", "matplotlib", "kmicro.harness", "kmicro.analysis", "kmicro.report")
    assert not [m for m in loaded if m.split(".")[0] in heavy or m.startswith(heavy)]


def test_malformed_results_file_is_exit_2(kmicro, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    p = kmicro("report", str(bad))
    assert p.returncode == 2 and "not a kmicro results file" in p.stderr
    assert p.stderr.count("\n") == 1


def test_gpu_where_none_is_exit_2_with_records_kept(kmicro, tmp_path):
    out = tmp_path / "gpu.json"
    p = kmicro("ops", "--stacks", "numpy", "--ops", "dense", "--shapes", "2,8",
               "--device", "gpu", "--json", str(out))
    assert p.returncode == 2 and "none of the stacks sees a GPU" in p.stderr
    assert all(r["status"] == "error" for r in load(out))


def test_ops_prints_tables_and_writes_contract_json(kmicro, tmp_path):
    out = tmp_path / "r.json"
    p = kmicro("ops", "--stacks", "numpy,tensorflow", "--ops", "dense,batchnorm", "--quick",
               "--shapes", "2,4,4,3;2,8", "--json", str(out))
    assert p.returncode == 0, p.stderr
    records = load(out)
    assert {r["stack"] for r in records} == {"numpy", "tensorflow"}
    for r in records:
        assert all(k in r for k in CONTRACT)
    assert "batchnorm" in p.stdout and "fwd+bwd" in p.stdout and "bwd (diff)" in p.stdout
    assert "numpy: unsupported" in p.stdout  # failures are listed, never hidden
    again = kmicro("report", str(out), "--metric", "gflops")
    assert again.returncode == 0 and "GFLOP/s" in again.stdout


def test_resume_skips_finished_cases(kmicro, tmp_path):
    out = tmp_path / "r.json"
    args = ["ops", "--stacks", "numpy", "--ops", "dense", "--quick", "--shapes", "2,8",
            "--passes", "forward", "--json", str(out)]
    assert kmicro(*args).returncode == 0
    first = load(out)
    assert kmicro(*args, "--resume").returncode == 0
    assert load(out) == first  # nothing re-measured: same records, same timestamps


def _sigint_as_in_a_terminal():
    # A background job (e.g. CI started with `&`) inherits SIGINT ignored, and Python then
    # never raises KeyboardInterrupt: give kmicro the disposition a terminal user's has.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_finished_records(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.Popen([*KMICRO, "ops", "--stacks", "numpy", "--ops", "conv2d,dense",
                             "--json", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_as_in_a_terminal)
    deadline = time.time() + 120
    while time.time() < deadline and not (out.exists() and len(json.loads(out.read_text())) >= 3):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "finished records are kept" in err
    records = load(out)
    assert len(records) >= 3
    assert all(r["status"] in ("ok", "unsupported") for r in records)  # numpy has no backward


def test_stacks_lists_every_declared_stack_with_versions_and_device(kmicro):
    p = kmicro("stacks", "--no-peaks", env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    for name in ("tensorflow", "jax", "torch", "numpy", "theano", "tf1"):
        assert name in p.stdout
    assert "keras 3.15.1" in p.stdout and "cpu" in p.stdout


def test_gpu_check_script_refuses_clearly_without_a_gpu(tmp_path):
    usage = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, capture_output=True,
                           text=True)
    assert usage.returncode == 2 and "usage: scripts/gpu_check.sh OUTDIR" in usage.stderr
    p = subprocess.run(["bash", "scripts/gpu_check.sh", str(tmp_path / "out")], cwd=ROOT,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and "no NVIDIA GPU visible" in p.stderr
    assert not (tmp_path / "out").exists()


def test_compare_reports_agreement_between_two_runs(kmicro, tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    records = [{"stack": "s", "case": f"c{i}", "pass": "forward", "status": "ok",
                "median_s": 1e-3} for i in range(4)]
    old.write_text(json.dumps(records))
    records[0] = dict(records[0], median_s=2e-3)  # one case got 2x slower
    new.write_text(json.dumps(records))
    p = kmicro("compare", str(old), str(new))
    assert p.returncode == 0, p.stderr
    assert "75% of 4 pairs" in p.stdout and "2.000" in p.stdout


def test_report_of_the_committed_gpu_run(kmicro):
    """docs/results holds a real H200 run: GPU devices named, launch-bound bwd shown as noise."""
    run = ROOT / "docs" / "results" / "gpu-h200-2026-11-29"
    records = load(run / "gpu.json")
    assert {r["device"] for r in records} == {"gpu"}
    assert {r["device_name"] for r in records} == {"NVIDIA H200"}
    p = kmicro("report", str(run / "gpu.json"), str(run / "models.json"))
    assert p.returncode == 0, p.stderr
    assert "(gpu)" in p.stdout and "(cpu)" not in p.stdout
    assert "< noise" in p.stdout and "e+03 ns" not in p.stdout  # no negative differences
    assert "resnet_bn" in p.stdout and "BN/no-BN" in p.stdout


def test_html_report_shows_noise_as_a_fact_not_a_failure(kmicro, tmp_path):
    gpu = ROOT / "docs" / "results" / "gpu-h200-2026-11-29" / "gpu.json"
    p = kmicro("report", str(gpu), "-o", str(tmp_path / "gpu.html"))
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "gpu.html").read_text()
    assert "&lt; noise" in page and "num bad" not in page
