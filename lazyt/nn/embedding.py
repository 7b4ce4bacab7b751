"""`Embedding`: a lookup table of row vectors indexed by integer ids."""
from __future__ import annotations

from .. import creation
from ..errors import DTypeError, IndexOutOfRangeError, ShapeError
from ..functional import check_known_index, where
from ..tensor import Tensor
from .module import Module
from .parameter import Parameter


def padding_index(fn: str, padding_idx, n: int) -> int | None:
    """`padding_idx` of a table of `n` rows as a row number (negative counts from the end)."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int) or \
            not -n <= padding_idx < n:
        raise IndexOutOfRangeError(f"{fn}: padding_idx {padding_idx!r} is out of bounds for "
                                   f"{n} embeddings")
    return padding_idx + n if padding_idx < 0 else padding_idx


def lookup(fn: str, ids, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """`weight[ids]` with shape `ids.shape + (embedding_dim,)`; the row `padding_idx` gets no
    gradient (as torch: the lookups of it still read its values)."""
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ShapeError(f"{fn}: weight must be a 2-D tensor [num_embeddings, embedding_dim], "
                         f"got {getattr(weight, 'shape', type(weight).__name__)}")
    if not isinstance(ids, Tensor):
        ids = creation.tensor(ids, device=weight.device)
    if ids.dtype.is_float or ids.dtype.name == "bool":
        raise DTypeError(f"{fn}: ids must be an integer tensor, got {ids.dtype.name} "
                         f"of shape {ids.shape}")
    check_known_index(fn, ids, weight.shape[0], 0)
    flat = ids.reshape(-1)
    rows = weight.index_select(0, flat)
    if padding_idx is not None and rows.requires_grad:
        # the same values; the padding row's lookups pass no gradient back to the table
        keep = (flat != padding_idx).unsqueeze(1)
        rows = where(keep, rows, rows.detach())
    return rows.reshape(*ids.shape, weight.shape[1])


class Embedding(Module):
    """`weight` [num_embeddings, embedding_dim] initialized N(0, 1); `forward(ids)` returns
    `weight[ids]` with shape `ids.shape + (embedding_dim,)`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_index("Embedding", padding_idx, num_embeddings)
        w = creation.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
        if self.padding_idx is not None:
            keep = creation.arange(num_embeddings, device=w.device) != self.padding_idx
            w = w * keep.unsqueeze(1).to(w.dtype)
        self.weight = Parameter(w)

    def forward(self, ids: Tensor) -> Tensor:
        return lookup("Embedding", ids, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
