"""One record builder for every kind; result files of the previous schema still load."""
import json

from kmicro.core import records

CONTRACT = ("stack", "backend", "versions", "device", "case", "pass", "status", "median_s",
            "iqr_s", "compile_s", "max_rel_err", "error")


def test_every_kind_gets_the_contract_fields_its_kind_and_the_schema():
    info = {"stack": "jax", "backend": "jax", "versions": {"keras": "3"}, "device": "cpu"}
    for kind in ("op", "model", "attribution", "diagnose"):
        r = records.new(kind, info, "dense(units=3)@2x8", "forward", op="dense")
        assert all(k in r for k in CONTRACT) and r["status"] is None
        assert r["kind"] == records.kind_of(r) == kind and r["schema"] == records.SCHEMA
        assert r["op"] == "dense" and r["versions"] == {"keras": "3"}


def test_schema_1_files_load_and_their_kind_is_read_from_the_fields(tmp_path):
    old = [{"schema": 1, "stack": "jax", "case": "c", "pass": "forward", "status": "ok",
            "op": "dense"},
           {"schema": 1, "stack": "jax", "case": "m@b32", "pass": "train", "status": "ok",
            "model": "resnet_bn"}]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert [records.kind_of(r) for r in records.load(path)] == ["op", "model"]
