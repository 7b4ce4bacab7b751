"""`Linear` (y = x W^T + b, weight stored [out, in] as in torch) and `Identity`."""
from __future__ import annotations

from .. import dtype as dt
from ..dispatch import Dispatch
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .init import fan_in_uniform
from .module import Module
from .parameter import Parameter
from ..amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast


def affine(fn: str, x, w: Tensor, b) -> Tensor:
    """`x @ w^T + b` for `Linear` and `F.linear` (`fn` names the caller in errors): x must
    end with w's in_features and have its dtype, as in torch."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, affine, fn, x, w, b)
    if not isinstance(x, Tensor):
        raise DTypeError(f"{fn}: expected a tensor input, got {type(x).__name__}")
    if not isinstance(w, Tensor) or w.ndim != 2:
        raise ShapeError(f"{fn}: weight must be a 2-D tensor [out_features, in_features], got "
                         f"{getattr(w, 'shape', type(w).__name__)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise ShapeError(f"{fn}: input of shape {x.shape} does not end with "
                         f"in_features={w.shape[1]}")
    if x.dtype is not w.dtype:  # as torch: no silent promotion to a wider result
        raise DTypeError(f"{fn}: input dtype {x.dtype.name} does not match the weight's "
                         f"{w.dtype.name} (input shape {x.shape}); "
                         + _convert_hint(x.dtype, w.dtype))
    if x.dtype is dt.bool_:
        raise DTypeError(f"{fn}: not supported for bool input (shape {x.shape})")
    if b is None:
        return Dispatch.helper("linear", x, w)
    if not isinstance(b, Tensor):
        raise DTypeError(f"{fn}: bias must be a tensor or None, got {type(b).__name__}")
    if b.dtype is not w.dtype:
        raise DTypeError(f"{fn}: bias dtype {b.dtype.name} does not match the weight's "
                         f"{w.dtype.name}; give both parameters one dtype")
    if b.shape != w.shape[:1]:  # broadcast as + does
        return Dispatch.helper("linear", x, w) + b
    return Dispatch.helper("linear", x, w, b)


class Linear(Module):
    """An affine map over the last dim: `weight` [out_features, in_features], `bias` [out].
    The input must have the weight's dtype (as in torch): a mismatch raises `DTypeError`."""

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
        return affine("Linear", x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


_CONVERT = {dt.float32: "x.float()", dt.float64: "x.double()", dt.float16: "x.half()"}


def _convert_hint(got: dt.DType, weight: dt.DType) -> str:
    """How to make an input of dtype `got` fit a layer whose weight has dtype `weight`."""
    convert = _CONVERT.get(weight, f"x.to(lazyt.{weight.name})")
    if not got.is_float:
        return f"convert with {convert}"
    return f"convert with {convert} or build the layer with dtype=lazyt.{got.name}"


class Identity(Module):
    """Returns its (first) input unchanged; stands in for a module fused into a sibling."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x, *args, **kwargs):
        return x


class Flatten(Module):
    """`x.flatten(start_dim, end_dim)` (torch's defaults keep the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """`x.unflatten(dim, unflattened_size)`: dim `dim` split into the sizes given."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
