"""`Embedding`: a lookup table of row vectors indexed by integer ids; `EmbeddingBag` and
`embedding_bag`: the sums, means or maxima of bags of such rows."""
from __future__ import annotations

from .. import creation
from ..autodiff import no_grad
from ..errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
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


def _ids(fn: str, ids, weight: Tensor) -> Tensor:
    """`ids` as an integer tensor on weight's device, its range checked when it is known."""
    if not isinstance(ids, Tensor):
        ids = creation.tensor(ids, device=weight.device)
    if ids.dtype.is_float or ids.dtype.name == "bool":
        raise DTypeError(f"{fn}: ids must be an integer tensor, got {ids.dtype.name} "
                         f"of shape {ids.shape}")
    check_known_index(fn, ids, weight.shape[0], 0)
    return ids


def lookup(fn: str, ids, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """`weight[ids]` with shape `ids.shape + (embedding_dim,)`; the row `padding_idx` gets no
    gradient (as torch: the lookups of it still read its values)."""
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ShapeError(f"{fn}: weight must be a 2-D tensor [num_embeddings, embedding_dim], "
                         f"got {getattr(weight, 'shape', type(weight).__name__)}")
    ids = _ids(fn, ids, weight)
    flat = ids.reshape(-1)
    rows = weight.index_select(0, flat)
    if padding_idx is not None and rows.requires_grad:
        # the same values; the padding row's lookups pass no gradient back to the table
        keep = (flat != padding_idx).unsqueeze(1)
        rows = where(keep, rows, rows.detach())
    return rows.reshape(*ids.shape, weight.shape[1])


def renorm_rows_(fn: str, weight: Tensor, ids, max_norm: float, norm_type: float = 2.0):
    """torch's `max_norm`: scale, in place in `weight` and outside autodiff, each row that
    `ids` looks up whose `norm_type`-norm exceeds `max_norm` to norm `max_norm` (times
    `max_norm / (norm + 1e-7)`, as torch). Returns `ids` as a tensor."""
    ids = _ids(fn, ids, weight)
    flat = ids.reshape(-1)
    if flat.numel() == 0:
        return ids
    with no_grad():
        rows = weight.detach().index_select(0, flat)
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(rows.dtype)
        weight.index_copy_(0, flat, rows * scale)  # a repeated id writes the same row
    return ids


class Embedding(Module):
    """`weight` [num_embeddings, embedding_dim] initialized N(0, 1); `forward(ids)` returns
    `weight[ids]` with shape `ids.shape + (embedding_dim,)`. With `max_norm`, each looked-up
    row is first renormalized in place to at most that `norm_type`-norm (as torch)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        _no_options("Embedding", dict(scale_grad_by_freq=scale_grad_by_freq, sparse=sparse))
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_index("Embedding", padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is not None:
            if not isinstance(_weight, Tensor) or _weight.shape != (num_embeddings,
                                                                   embedding_dim):
                raise ShapeError(f"Embedding: _weight must be a tensor of shape "
                                 f"{(num_embeddings, embedding_dim)}, got "
                                 f"{getattr(_weight, 'shape', type(_weight).__name__)}")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
            return
        w = creation.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
        if self.padding_idx is not None:
            keep = creation.arange(num_embeddings, device=w.device) != self.padding_idx
            w = w * keep.unsqueeze(1).to(w.dtype)
        self.weight = Parameter(w, requires_grad=not _freeze)

    def forward(self, ids: Tensor) -> Tensor:
        if self.max_norm is not None:
            ids = renorm_rows_("Embedding", self.weight, ids, self.max_norm, self.norm_type)
        return lookup("Embedding", ids, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, **unsupported) -> "Embedding":
        """An Embedding holding `embeddings` [num_embeddings, embedding_dim] (a copy); its
        weight is trained unless `freeze`."""
        _no_options("Embedding.from_pretrained", unsupported)
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise ShapeError(f"Embedding.from_pretrained: embeddings must be a 2-D tensor, "
                             f"got {getattr(embeddings, 'shape', type(embeddings).__name__)}")
        n, d = embeddings.shape
        m = cls(n, d, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                device=embeddings.device, dtype=embeddings.dtype)
        m.weight = Parameter(embeddings.detach().clone(), requires_grad=not freeze)
        return m


def _no_options(fn: str, options: dict) -> None:
    bad = {k: v for k, v in options.items()
           if v not in (None, False) and not (k == "norm_type" and v == 2.0)}
    if bad:
        raise InvalidArgumentError(f"{fn}: {', '.join(sorted(bad))} not supported (sparse "
                                   f"gradients and scale_grad_by_freq have no lazyt form; "
                                   f"only Embedding takes max_norm)")


_BAG_MODES = ("sum", "mean", "max")


def bag_of(fn: str, ids: Tensor, offsets, include_last_offset: bool) -> tuple:
    """(flat ids, bag of each id, number of bags) for torch's two layouts: 2-D ids (a bag
    per row) or 1-D ids with `offsets` (bag b starts at offsets[b]; with
    `include_last_offset` the last offset ends the last bag). Bag ids come from comparisons
    with the offsets, so nothing is read now."""
    if ids.ndim == 2:
        if offsets is not None:
            raise InvalidArgumentError(f"{fn}: offsets must be None for 2-D input (each row "
                                       f"is a bag), got a tensor")
        b, n = ids.shape
        bag = creation.arange(b, device=ids.device).unsqueeze(1).expand(b, n).reshape(-1)
        return ids.reshape(-1), bag, b
    if ids.ndim != 1:
        raise ShapeError(f"{fn}: input must be 1-D (with offsets) or 2-D, got {ids.shape}")
    if offsets is None:
        raise InvalidArgumentError(f"{fn}: 1-D input needs offsets (the start of each bag)")
    if not isinstance(offsets, Tensor):
        offsets = creation.tensor(offsets, device=ids.device)
    if offsets.ndim != 1 or offsets.dtype.is_float or offsets.dtype.name == "bool":
        raise ShapeError(f"{fn}: offsets must be a 1-D integer tensor, got "
                         f"{offsets.dtype.name} of shape {offsets.shape}")
    n_bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if n_bags < 0 or (include_last_offset and offsets.shape[0] == 0):
        raise ShapeError(f"{fn}: include_last_offset needs at least one offset")
    starts = offsets[:n_bags] if include_last_offset else offsets
    pos = creation.arange(ids.shape[0], device=ids.device)
    bag = (starts.unsqueeze(0) <= pos.unsqueeze(1)).to(dtype=ids.dtype).sum(1) - 1
    if include_last_offset:   # ids at or past the last offset belong to no bag
        bag = where(pos >= offsets[n_bags], -1, bag)
    return ids, bag, n_bags


def embedding_bag(input, weight: Tensor, offsets=None, mode: str = "mean",  # noqa: A002
                  per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx: int | None = None, **unsupported) -> Tensor:
    """Reduce bags of rows of `weight` to one row each: "sum", "mean" or "max" (torch's
    `embedding_bag`, input 2-D or 1-D with offsets). `per_sample_weights` (input's shape)
    scale each row first (sum only). Ids equal to `padding_idx` and ids outside every bag
    count in no bag; an empty bag gives zeros. Returns [number of bags, embedding_dim]."""
    fn = "embedding_bag"
    _no_options(fn, unsupported)
    if mode not in _BAG_MODES:
        raise InvalidArgumentError(f"{fn}: mode must be one of sum, mean, max, got {mode!r}")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ShapeError(f"{fn}: weight must be a 2-D tensor [num_embeddings, embedding_dim], "
                         f"got {getattr(weight, 'shape', type(weight).__name__)}")
    ids = input if isinstance(input, Tensor) else creation.tensor(input, device=weight.device)
    if ids.dtype.is_float or ids.dtype.name == "bool":
        raise DTypeError(f"{fn}: ids must be an integer tensor, got {ids.dtype.name}")
    pad = padding_index(fn, padding_idx, weight.shape[0])
    flat, bag, n_bags = bag_of(fn, ids, offsets, include_last_offset)
    d = weight.shape[1]
    rows = lookup(fn, flat, weight)
    if per_sample_weights is not None:
        if mode != "sum":
            raise InvalidArgumentError(f"{fn}: per_sample_weights is only supported with "
                                       f"mode='sum', got mode={mode!r}")
        if not isinstance(per_sample_weights, Tensor) or per_sample_weights.shape != ids.shape:
            raise ShapeError(f"{fn}: per_sample_weights must have the input's shape "
                             f"{ids.shape}, got {getattr(per_sample_weights, 'shape', None)}")
        rows = rows * per_sample_weights.reshape(-1, 1).to(dtype=rows.dtype)
    # ids in no bag (padding, past the last offset) go to an extra bag, dropped at the end
    if pad is not None:
        bag = where(flat == pad, -1, bag)
    bag = where(bag < 0, n_bags, bag)
    if flat.shape[0] == 0:
        return creation.zeros(n_bags, d, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        index = bag.unsqueeze(1).expand(flat.shape[0], d)
        out = creation.zeros(n_bags + 1, d, dtype=weight.dtype, device=weight.device) \
            .scatter_reduce(0, index, rows, "amax", include_self=False)
        return out[:n_bags]
    out = creation.zeros(n_bags + 1, d, dtype=weight.dtype, device=weight.device) \
        .index_add(0, bag, rows)[:n_bags]
    if mode == "mean":
        ones = creation.ones(flat.shape[0], dtype=weight.dtype, device=weight.device)
        count = creation.zeros(n_bags + 1, dtype=weight.dtype, device=weight.device) \
            .index_add(0, bag, ones)[:n_bags]
        out = out / count.clamp(min=1.0).unsqueeze(1)
    return out


class EmbeddingBag(Module):
    """`weight` [num_embeddings, embedding_dim] initialized N(0, 1); `forward(input,
    offsets=None, per_sample_weights=None)` reduces each bag of looked-up rows with `mode`
    ("sum", "mean" or "max"), as `embedding_bag`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        _no_options("EmbeddingBag", dict(max_norm=max_norm, norm_type=norm_type,
                                         scale_grad_by_freq=scale_grad_by_freq, sparse=sparse))
        if mode not in _BAG_MODES:
            raise InvalidArgumentError(f"EmbeddingBag: mode must be one of sum, mean, max, "
                                       f"got {mode!r}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.mode, self.include_last_offset = mode, include_last_offset
        self.padding_idx = padding_index("EmbeddingBag", padding_idx, num_embeddings)
        if _weight is not None:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"EmbeddingBag: _weight must have shape "
                                 f"{(num_embeddings, embedding_dim)}, got {_weight.shape}")
            self.weight = Parameter(_weight)
            return
        w = creation.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
        if self.padding_idx is not None:
            keep = creation.arange(num_embeddings, device=w.device) != self.padding_idx
            w = w * keep.unsqueeze(1).to(w.dtype)
        self.weight = Parameter(w)

    def forward(self, input: Tensor, offsets=None,  # noqa: A002 - torch's name
                per_sample_weights=None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, self.mode, per_sample_weights,
                             self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, mode: str = "mean",
                        include_last_offset: bool = False, padding_idx: int | None = None,
                        **unsupported) -> "EmbeddingBag":
        """An EmbeddingBag holding `embeddings` (a copy), trained unless `freeze`."""
        _no_options("EmbeddingBag.from_pretrained", unsupported)
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise ShapeError(f"EmbeddingBag.from_pretrained: embeddings must be a 2-D tensor, "
                             f"got {getattr(embeddings, 'shape', type(embeddings).__name__)}")
        n, d = embeddings.shape
        m = cls(n, d, mode=mode, include_last_offset=include_last_offset,
                padding_idx=padding_idx, _weight=embeddings.detach().clone())
        m.weight = Parameter(m.weight.detach(), requires_grad=not freeze)
        return m

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}{pad}"
