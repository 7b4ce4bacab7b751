"""`Embedding`: a lookup table of row vectors indexed by integer ids."""
from __future__ import annotations

from .. import creation
from ..errors import DTypeError
from ..tensor import Tensor
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    """`weight` [num_embeddings, embedding_dim] initialized N(0, 1); `forward(ids)` returns
    `weight[ids]` with shape `ids.shape + (embedding_dim,)`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        w = creation.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
        if padding_idx is not None:
            keep = creation.arange(num_embeddings, device=w.device) != padding_idx
            w = w * keep.unsqueeze(1).to(w.dtype)
        self.weight = Parameter(w)

    def forward(self, ids: Tensor) -> Tensor:
        if not isinstance(ids, Tensor):
            ids = creation.tensor(ids, device=self.weight.device)
        if ids.dtype.is_float:
            raise DTypeError(f"Embedding: ids must be an integer tensor, got {ids.dtype.name} "
                             f"of shape {ids.shape}")
        rows = self.weight.index_select(0, ids.reshape(-1))
        return rows.reshape(*ids.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
