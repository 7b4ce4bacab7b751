"""`Dropout`: zeroes elements with probability `p` in training mode (scaling the rest by
1 / (1 - p)); the identity in eval mode. The mask is drawn from lazyt's generator, so
`lazyt.manual_seed` makes it reproducible."""
from __future__ import annotations

from .. import creation
from ..errors import LazytError
from ..functional import where
from ..tensor import Tensor
from .module import Module


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise LazytError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return x * 0
        keep = creation.rand(x.shape, device=x.device) >= self.p
        return where(keep, x * (1.0 / (1.0 - self.p)), 0.0)

    def extra_repr(self) -> str:
        return f"p={self.p}"
