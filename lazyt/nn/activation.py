"""Activation modules: thin wrappers of the Tensor methods, so they can sit in a Sequential
and be found (and swapped for kernels) by class name."""
from __future__ import annotations

from ..errors import LazytError
from ..tensor import Tensor
from .module import Module


class GELU(Module):
    """Exact GELU, or its tanh approximation with `approximate="tanh"`."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise LazytError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return x.gelu(self.approximate)

    def extra_repr(self) -> str:
        return "" if self.approximate == "none" else f"approximate={self.approximate!r}"


class SiLU(Module):
    """`x * sigmoid(x)` (swish)."""

    def forward(self, x: Tensor) -> Tensor:
        return x.silu()


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.relu()


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()
