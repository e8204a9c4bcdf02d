"""The op registry: append-only order, complete op modules, textbook FLOPs and bytes."""
import pytest

from kmicro.core import cases, flops, ops


def test_registry_order_is_append_only():
    # The CLI's and the reports' op order: append new ops, never reorder.
    assert list(ops.OPS)[:9] == ["conv2d", "batchnorm", "maxpool", "avgpool", "dense",
                                 "activation", "add", "dropout", "flatten"]
    assert list(ops.OPS)[9:12] == ["elu", "prelu", "relu"] and len(ops.OPS) == 72
    assert ops.OPS["batchnorm"] == "BatchNormalization" and cases.OPS is ops.OPS


def test_every_registered_op_is_complete():
    for name, layer in ops.OPS.items():
        op = ops.get(name)
        assert isinstance(op, ops.Op) and op.name == name and op.layer == layer
        assert op.family in ops.FAMILIES
    with pytest.raises(ValueError, match="registered: conv2d, batchnorm"):
        ops.get("conv4d")


def test_an_op_without_reference_or_flops_cannot_be_registered():
    class Incomplete(ops.Op):
        name, layer = "incomplete", "Incomplete"

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_flags_derive_the_catalog_constants():
    assert cases.TWINNED_OPS == ("batchnorm",)
    assert cases.SPATIAL_OPS == {"conv2d", "maxpool", "avgpool", "flatten"}


@pytest.mark.parametrize("op, shape, config, forward", [
    ("conv2d", (2, 8, 8, 3), dict(filters=4, kernel_size=3, padding="same"), 2 * 2 * 8 * 8 * 4 * 9 * 3),
    ("dense", (2, 16), dict(units=5), 2 * 2 * 16 * 5),
    ("maxpool", (2, 8, 8, 3), dict(pool_size=2), 2 * 4 * 4 * 3 * 4),
    ("batchnorm", (2, 8, 8, 3), {}, 4 * 2 * 8 * 8 * 3),
    ("flatten", (2, 8, 8, 3), {}, 0),
])
def test_textbook_flops(op, shape, config, forward):
    case = cases.make_case(op, shape, **config)
    assert flops.flops(case, "forward") == forward
    assert flops.flops(case, "backward") == 3 * forward


def test_add_moves_both_inputs_and_its_output():
    case = cases.make_case("add", (2, 4, 4, 3), n_inputs=2)
    size = 2 * 4 * 4 * 3
    assert flops.forward_flops(case) == size
    assert flops.bytes_moved(case, "forward") == 4 * 3 * size
    assert flops.bytes_moved(case, "backward") == 4 * (2 * 3 * size + 3 * size)
