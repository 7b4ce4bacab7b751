"""`Dropout`: zeroes elements with probability `p` in training mode (scaling the rest by
1 / (1 - p)); the identity in eval mode. The mask is drawn from lazyt's generator, so
`lazyt.manual_seed` makes it reproducible."""
from __future__ import annotations

from .. import creation
from ..errors import InvalidArgumentError
from ..functional import where
from ..inplace import stored
from ..tensor import Tensor
from .module import Module


def _probability(fn: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{fn}: p must be a probability in [0, 1], got {p!r}")
    return float(p)


def drop(x: Tensor, p: float) -> Tensor:
    """`x` with each element zeroed with probability `p`, the rest scaled by 1 / (1 - p)."""
    if p == 0.0:
        return x
    if p == 1.0:
        return x * 0
    keep = creation.rand(x.shape, device=x.device) >= p
    return where(keep, x * (1.0 / (1.0 - p)), 0.0)


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = _probability("Dropout", p)
        self.inplace = bool(inplace)

    def forward(self, x: Tensor) -> Tensor:
        return stored("dropout", x, drop(x, self.p), self.inplace) if self.training else x

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
