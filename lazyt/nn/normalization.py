"""`LayerNorm` and `RMSNorm` over the trailing `normalized_shape` dims.

Both compute in float32 when the input is float16 (the variance of half values overflows and
loses precision) and return the input dtype.
"""
from __future__ import annotations

from .. import creation
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from ..dispatch import Dispatch
from ..tensor import Tensor
from .module import Module
from .parameter import Parameter


def _shape(normalized_shape) -> tuple:
    return (int(normalized_shape),) if isinstance(normalized_shape, int) \
        else tuple(int(s) for s in normalized_shape)


def _check(name: str, x: Tensor, shape: tuple) -> tuple:
    if x.shape[len(x.shape) - len(shape):] != shape or x.ndim < len(shape):
        raise ShapeError(f"{name}: input of shape {x.shape} does not end with the normalized "
                         f"shape {shape}")
    return tuple(range(x.ndim - len(shape), x.ndim))


def _compute_dtype(x: Tensor):
    return dt.float32 if x.dtype is dt.float16 else x.dtype


class LayerNorm(Module):
    """`(x - mean) / sqrt(var + eps) * weight + bias` (biased variance, as torch)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        if not self.normalized_shape:
            raise ShapeError("LayerNorm: normalized_shape must have at least one dim (as in "
                             "torch), got ()")
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
            if bias:
                self.bias = Parameter(creation.zeros(self.normalized_shape, dtype=dtype,
                                                     device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        dims = _check("LayerNorm", x, self.normalized_shape)
        if not x.dtype.is_float:
            raise DTypeError(f"LayerNorm: expected a floating-point input, got {x.dtype.name} "
                             f"of shape {x.shape}")
        h = x.to(_compute_dtype(x))
        w = None if self.weight is None else self.weight.to(h.dtype)
        b = None if self.bias is None else self.bias.to(h.dtype)
        y = Dispatch.helper("layer_norm", h, len(dims), float(self.eps), w, b)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(Module):
    """`x / sqrt(mean(x^2) + eps) * weight` (the Llama norm; no centering, no bias)."""

    def __init__(self, normalized_shape, eps: float = 1e-6, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        dims = _check("RMSNorm", x, self.normalized_shape)
        if not x.dtype.is_float:
            raise DTypeError(f"RMSNorm: expected a floating-point input, got {x.dtype.name} "
                             f"of shape {x.shape}")
        h = x.to(_compute_dtype(x))
        y = h * ((h * h).mean(dims, keepdim=True) + self.eps).rsqrt()
        if self.weight is not None:
            y = y * self.weight.to(h.dtype)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"
