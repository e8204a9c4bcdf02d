"""A case that raises, hangs or kills its worker becomes a record; the run goes on."""
from kmicro.core import cases, stacks
from kmicro.harness import runner

NUMPY = [stacks.STACKS["numpy"]]


def run(case_list, env=None, monkeypatch=None, **options):
    if env:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
    records = []
    runner.run(NUMPY, case_list, ("forward",), runner.Options(quick=True, **options),
               records.append)
    return {r["case"]: r for r in records}


def test_case_that_raises_is_an_error_record():
    # A 3x3 'valid' convolution cannot run on a 2x2 image: Keras itself raises.
    bad = cases.make_case("conv2d", (1, 2, 2, 3), filters=2, kernel_size=3, padding="valid")
    good = cases.make_case("dense", (2, 8), units=3)
    got = run([bad, good])
    assert got[bad.id]["status"] == "error" and "exited" not in got[bad.id]["error"]
    assert got[good.id]["status"] == "ok"


def test_hanging_case_times_out_and_the_worker_is_replaced(monkeypatch):
    hang = cases.make_case("flatten", (2, 3, 3, 2))
    good = cases.make_case("dense", (2, 8), units=3)
    got = run([hang, good], {"KMICRO_FAULT": "hang:flatten"}, monkeypatch, timeout_s=5)
    assert got[hang.id]["status"] == "timeout"
    assert "timeout of 5 s" in got[hang.id]["error"]
    assert got[good.id]["status"] == "ok"


def test_dying_worker_is_an_error_record_and_the_run_goes_on(monkeypatch):
    die = cases.make_case("flatten", (2, 3, 3, 2))
    good = cases.make_case("dense", (2, 8), units=3)
    got = run([die, good, die], {"KMICRO_FAULT": "die:flatten"}, monkeypatch)
    assert got[die.id]["status"] == "error"
    assert "exited with code 17" in got[die.id]["error"]
    assert got[good.id]["status"] == "ok"


def test_wrong_numbers_are_reported_wrong_and_never_timed(monkeypatch):
    """A real backend fed weights that differ from the reference's must be caught."""
    from kmicro.harness.jobs import op
    from kmicro.backends import keras3

    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    adapter = keras3.Adapter()
    build = adapter.build
    adapter.build = lambda case, weights: build(case, [w * 1.01 for w in weights])
    case = cases.make_case("dense", (2, 8), units=3)
    info = dict(adapter.info(), stack="numpy", python="3", requested_device="auto")
    (record,) = op.run(adapter, info, {"kind": "op", "case": cases.case_to_dict(case),
                                       "passes": ["forward"], "quick": True})
    assert record["status"] == "wrong"
    assert record["median_s"] is None and record["max_rel_err"] > 1e-3


def test_uninstalled_stack_is_reported_not_skipped_silently(tmp_path):
    ghost = stacks.Stack("ghost", "numpy", "keras3", str(tmp_path / "none"), "3.11", "x.txt")
    records = []
    runner.run([ghost], [cases.make_case("dense", (2, 8), units=3)], ("forward",),
               runner.Options(quick=True), records.append)
    assert records[0]["status"] == "skipped" and "not installed" in records[0]["error"]
