"""The float64 reference itself is checked against finite differences on tiny shapes."""
import numpy as np
import pytest

from kmicro.core import cases, ops, reference

TINY = [
    cases.make_case("conv2d", (2, 5, 5, 3), filters=4, kernel_size=3, padding="same"),
    cases.make_case("conv2d", (2, 5, 5, 3), "channels_first", filters=2, kernel_size=3,
                    padding="valid"),
    cases.make_case("dense", (3, 4), units=5, activation="softmax"),
    cases.make_case("batchnorm", (4, 3, 3, 2)),
    cases.make_case("batchnorm", (4, 3, 3, 2), "channels_first"),
    cases.make_case("maxpool", (2, 4, 4, 3), pool_size=2),
    cases.make_case("avgpool", (2, 4, 4, 3), "channels_first", pool_size=2),
    cases.make_case("activation", (2, 3, 3, 2), activation="relu"),
    cases.make_case("activation", (3, 6), activation="softmax"),
    cases.make_case("add", (2, 3, 3, 2), n_inputs=2),
    cases.make_case("flatten", (2, 3, 3, 2), "channels_first"),
    cases.make_case("dropout", (2, 3, 3, 2), "channels_first", rate=0.5),
]
# Trainable weights come first in Keras order; the rest (BN's moving statistics) get no gradient.
TRAINABLE = {"conv2d": 2, "dense": 2, "batchnorm": 2}


def test_every_registered_op_has_a_tiny_case():
    # A new op module is not done until its reference passes the finite-difference check.
    assert {c.op for c in TINY} == {op.name for op in ops.SEED_OPS}


def _keep_mask(case):
    if not ops.get(case.op).mask_from_backend:
        return None
    return np.random.RandomState(1).uniform(size=case.input_shape) > 0.5


def _loss(case, xs, ws, dy, mask):
    y, _ = reference.compute(case, xs, ws, training=True, dropout_mask=mask)
    return float((y * dy).sum())


@pytest.mark.parametrize("case", TINY, ids=lambda c: c.id)
def test_gradients_match_finite_differences(case):
    xs = [x.astype(np.float64) for x in reference.make_inputs(case)]
    ws = [w.astype(np.float64) for w in reference.make_weights(case)]
    dy = reference.make_dy(case, reference.output_shape(case)).astype(np.float64)
    mask = _keep_mask(case)
    _, grads = reference.compute(case, xs, ws, training=True, dy=dy, dropout_mask=mask)
    params = xs + ws[:TRAINABLE.get(case.op, 0)]
    assert len(grads) == len(params)
    rng = np.random.RandomState(0)
    for param, grad in zip(params, grads):
        for idx in [tuple(rng.randint(s) for s in param.shape) for _ in range(5)]:
            old, eps = param[idx], 1e-6
            param[idx] = old + eps
            up = _loss(case, xs, ws, dy, mask)
            param[idx] = old - eps
            down = _loss(case, xs, ws, dy, mask)
            param[idx] = old
            assert grad[idx] == pytest.approx((up - down) / (2 * eps), rel=1e-4, abs=1e-6)


def test_channels_first_is_the_transpose_of_channels_last():
    last = cases.make_case("conv2d", (2, 5, 5, 3), filters=4, kernel_size=3, padding="same")
    first = cases.make_case("conv2d", (2, 5, 5, 3), "channels_first", filters=4, kernel_size=3,
                            padding="same")
    x = reference.make_inputs(last)[0]
    w = reference.make_weights(last)
    y_last, _ = reference.compute(last, [x], w, training=False)
    y_first, _ = reference.compute(first, [x.transpose(0, 3, 1, 2)], w, training=False)
    np.testing.assert_allclose(y_first, y_last.transpose(0, 3, 1, 2))


def test_batchnorm_inference_uses_moving_statistics():
    case = cases.make_case("batchnorm", (8, 2, 2, 3))
    x = reference.make_inputs(case)[0]
    w = reference.make_weights(case)
    y_train, _ = reference.compute(case, [x], w, training=True)
    y_infer, _ = reference.compute(case, [x], w, training=False)
    assert np.abs(y_train.mean(axis=(0, 1, 2)) - w[1]).max() < 1e-6  # batch-normalised -> beta
    assert not np.allclose(y_train, y_infer)


def test_inputs_and_weights_are_seeded_and_case_specific():
    a = cases.make_case("dense", (4, 8), units=3)
    b = cases.make_case("dense", (4, 8), units=2)
    np.testing.assert_array_equal(reference.make_inputs(a)[0], reference.make_inputs(a)[0])
    assert not np.array_equal(reference.make_inputs(a)[0], reference.make_inputs(b)[0])
    assert not np.array_equal(reference.make_inputs(a, seed=1)[0], reference.make_inputs(a)[0])


def test_max_rel_err_scales_by_reference_magnitude():
    want = [np.array([100.0, -200.0])]
    assert reference.max_rel_err([np.array([100.0, -198.0])], want) == pytest.approx(0.01)
    assert reference.max_rel_err([np.zeros(3)], want) == float("inf")
