"""`CosineSimilarity` and `PairwiseDistance`: the modules of `F.cosine_similarity` and
`F.pairwise_distance`."""
from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module


class CosineSimilarity(Module):
    """The cosine of the angle between x1 and x2 along `dim` (each norm at least `eps`)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """The p-norm of `x1 - x2 + eps` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"
