"""Case specs: ids are stable (history depends on them), the catalog is the seed models."""
import pytest

from kmicro.core import cases, ops
from kmicro.core.errors import UsageError


def test_default_catalog_is_the_distinct_seed_layers():
    ids = [c.id for c in cases.default_catalog()]
    assert len(ids) == len(set(ids)) == 26
    # Spelled out: changing how ids are written would orphan every stored result.
    assert ids[0] == "conv2d(filters=32,kernel_size=3,padding=same)@32x32x32x3/cl"
    assert "batchnorm()@32x32x32x16/cl" in ids
    assert "add()@32x32x32x16*2/cl" in ids
    assert "dense(activation=softmax,units=10)@32x256" in ids
    assert {c.op for c in cases.default_catalog()} == {op.name for op in ops.SEED_OPS}


def test_channels_first_transposes_spatial_cases_only():
    first = {c.op + str(c.kwargs): c for c in cases.default_catalog("channels_first")}
    bn = next(c for c in first.values() if c.op == "batchnorm")
    assert bn.input_shape == (32, 16, 32, 32) and bn.id.endswith("/cf")
    assert bn.layer_kwargs() == {"axis": 1}
    dense = next(c for c in first.values() if c.op == "dense")
    assert dense.data_format is None and dense.input_shape == (32, 2304)


def test_select_filters_and_reshapes():
    got = cases.select(["conv2d", "dense"], shapes=[(2, 8, 8, 3), (2, 16)])
    assert {c.op for c in got} == {"conv2d", "dense"}
    assert all(c.input_shape in ((2, 8, 8, 3), (2, 16)) for c in got)
    assert len(got) == len({c.id for c in got})


def test_bad_input_names_the_valid_choices():
    with pytest.raises(UsageError, match="valid ops: conv2d, batchnorm"):
        cases.select(["conv4d"])
    with pytest.raises(UsageError, match="valid passes: forward, forward_train, backward"):
        cases.with_passes(["sideways"])
    for text in ("7", "a,b", "0,4", "1,2,3,4,5,6,7", ""):
        with pytest.raises(UsageError, match="N,H,W,C"):
            cases.parse_shapes(text)


def test_round_trip_through_json_dicts():
    for case in cases.default_catalog("channels_first"):
        assert cases.case_from_dict(cases.case_to_dict(case)) == case


def test_layer_options_override_the_cases_that_have_them():
    got = cases.select(["conv2d", "maxpool"], overrides=cases.parse_overrides("filters=8,pool_size=3"))
    assert {c.kwargs.get("filters") for c in got if c.op == "conv2d"} == {8}
    assert {c.kwargs["pool_size"] for c in got if c.op == "maxpool"} == {3}
    with pytest.raises(UsageError, match="valid: filters, kernel_size, padding"):
        cases.select(["conv2d"], overrides={"units": 3})
    with pytest.raises(UsageError, match="KEY=VALUE"):
        cases.parse_overrides("filters")


def test_an_override_applies_with_the_default_layouts():
    """auto twins only BN in channels_first; an option of another op must still be accepted."""
    selected = cases.select(overrides={"filters": 8})
    assert {c.kwargs["filters"] for c in selected if c.op == "conv2d"} == {8}
    assert any(c.data_format == "channels_first" for c in selected)
