"""Dense, with its optional fused activation."""
from kmicro.core.ops import activation
from kmicro.core.ops.base import Op, he_normal_kernel_and_bias

__all__ = ["Dense"]


class Dense(Op):
    name = "dense"
    layer = "Dense"
    family = "core"

    def weight_shapes(self, case) -> list:
        units = case.kwargs["units"]
        return [(case.input_shape[-1], units), (units,)]

    def init_weights(self, rng, shapes) -> list:
        return he_normal_kernel_and_bias(rng, shapes)

    def reference(self, kwargs, xs, weights, training, dy=None, mask=None):
        (kernel, bias), x = weights, xs[0]
        z = x @ kernel + bias
        y, dz = activation.apply(kwargs.get("activation", "linear"), z, dy)
        if dy is None:
            return y, None
        return y, [dz @ kernel.T, x.T @ dz, dz.sum(axis=0)]

    def forward_flops(self, case, out_shape) -> int:
        return 2 * case.input_shape[0] * case.input_shape[-1] * case.kwargs["units"]
