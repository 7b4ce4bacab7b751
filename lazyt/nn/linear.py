"""`Linear` (y = x W^T + b, weight stored [out, in] as in torch) and `Identity`."""
from __future__ import annotations

from ..tensor import Tensor
from .init import fan_in_uniform
from .module import Module
from .parameter import Parameter


class Linear(Module):
    """An affine map over the last dim: `weight` [out_features, in_features], `bias` [out]."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(fan_in_uniform((out_features, in_features), in_features,
                                               dtype, device))
        if bias:
            self.bias = Parameter(fan_in_uniform((out_features,), in_features, dtype, device))
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        y = x.matmul(self.weight.mT)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Identity(Module):
    """Returns its (first) input unchanged; stands in for a module fused into a sibling."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x, *args, **kwargs):
        return x
