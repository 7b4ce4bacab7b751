"""torch's masked and scattered reads and writes that lazyt's primitive op set lacks
(masked_fill, masked_select, nonzero, argwhere, scatter, scatter_reduce, index_put and their
in-place forms, index_fill, index_copy, index_reduce, put, nn.functional.one_hot), as
composites of `where`, `gather`, `scatter_add`,
`index_select` and the reductions: every backend runs them and autodiff differentiates them.

Writes follow one pattern: `_last_writes` picks the one write each target keeps (the last
in the index's row-major order, as torch's CPU kernels do; lazily, with a few rounds of
`scatter_add` and `gather`) and marks the targets hit, `scatter_add` places the kept values
in a zero tensor, and `where` keeps the input elsewhere, so gradients reach the winning
values and the input's untouched positions; ops that accumulate add every write instead.
scatter_reduce's prod/amax/amin compare every index entry with every target position along
`dim` (O(index.numel() * size) memory), then reduce.

`masked_select`, `nonzero` and `argwhere` (and a boolean index in `index_put`) read their
mask's values now, as their output's size depends on them; everything else stays lazy.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import arange, full
from .capture_state import STATE as _CAPTURE
from .dispatch import Dispatch, DispatchTensor, common_device
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import (as_tensor, binary, cat, check_known_index, expand, gather, index_add,
                         index_select, index_tensor, method, refuse_byte_index, scatter_add, to,
                         where)
from .inplace import rebind
from .layout import movedim, pad
from .mathops import install_methods, tensor_arg
from .ops import BinaryOp
from .tensor import Tensor

__all__ = [
    "masked_fill", "masked_select", "nonzero", "argwhere", "scatter", "scatter_reduce",
    "index_put", "index_fill", "index_copy", "index_reduce", "put",
]

_B = BinaryOp
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


# ---------------------------------------------------------------------- shared machinery
def _bool_mask(op: str, mask, like: Tensor) -> Tensor:
    """`mask` as a bool tensor on `like`'s device; `DTypeError` for any other dtype (torch
    takes bool masks only)."""
    m = as_tensor(mask, like)
    if not isinstance(m, Tensor):
        m = Tensor.from_dispatch(m)
    if m.dtype is not dt.bool_:
        raise DTypeError(f"{op}: expected a bool mask, got {m.dtype.name} of shape {m.shape}")
    common_device(op, (like, m))
    return m


def _work_dtype(d: dt.DType) -> dt.DType:
    """The dtype scatter_add adds in: bool is placed as int32 and cast back."""
    return dt.int32 if d is dt.bool_ else d


def _scalar_value(op: str, value) -> bool:
    """Whether `value` is a Python (or numpy) number, as opposed to a tensor."""
    if isinstance(value, (numbers.Number, np.generic)):
        return True
    if isinstance(value, DispatchTensor):
        return False
    raise DTypeError(f"{op}: expected a number or a lazyt.Tensor value, got "
                     f"{type(value).__name__}")


# float32 exponents of the winner search's weights: normal numbers (a GPU may flush smaller)
_LOW_EXP, _HIGH_EXP = -126, 127


def _digit_plan(op: str, length: int) -> list[tuple[int, int, int]]:
    """`(place, radix, spacing)` of each digit of the positions `range(length)`, lowest
    first. A digit's round sums the weights `2 ** (spacing * digit)` of a target's
    candidates in float32. At most `place` of them share a digit value and each add rounds
    up by at most 2**-24 (at most `length` adds), so with this spacing the sum stays below
    `2 ** spacing` times its largest weight, and only that weight times `2 ** spacing`
    exceeds the sum."""
    grow = length * 2.0 ** -24 / math.log(2)   # log2 of float32's rounding growth
    plan, place = [], 1
    while place < length:
        s = 2
        while math.log2(place) + math.log2(2 ** s / (2 ** s - 1)) + grow + 0.1 > s:
            s += 1
        radix = min((_HIGH_EXP - _LOW_EXP) // s, -(-length // place))
        if radix < 2:
            raise ShapeError(f"{op}: {length} writes along one dim are more than the "
                             "last-write search handles")
        plan.append((place, radix, s))
        place *= radix
    return plan


def _digit_table(values: np.ndarray, place: int, length: int, like: Tensor) -> Tensor:
    """`values[(p // place) % len(values)]` for each position `p < length`, as a lazy
    broadcast of the small table (no division on the device)."""
    radix = len(values)
    reps = -(-length // (place * radix))
    table = as_tensor(values, like).reshape(1, radix, 1)
    return expand(table, (reps, radix, place)).reshape(-1)[:length]


def _last_writes(op: str, shape: tuple, d: int, index: Tensor):
    """`(keep, hit)` of writes along `d` at `index` into a tensor of `shape`: `keep` (shaped
    like index, or None for all) marks the write each target keeps, the last in row-major
    order (entries sharing a target differ only along `d`: the one with the largest position
    there), and `hit` (shaped like `shape`) the targets written.

    Lazy and exact: each round keeps, per target, the candidates whose next digit of their
    position is the largest (see `_digit_plan`), one scatter_add and one gather a round; one
    round covers 126 positions along `d`, two 3906, four a million. When the index's values
    are already on the host (ids made from data, outside `lazyt.compile`), both masks are
    found there in one pass and uploaded instead."""
    known = _known_last_writes(shape, d, index)
    if known is not None:
        return known
    n = index.shape[d]
    dev = index.device
    if n <= 1:  # no target can be written twice
        ones = full(index.shape, 1, dtype=dt.int32, device=dev)
        return None, scatter_add(full(shape, 0, dtype=dt.int32, device=dev), d, index, ones) > 0
    view = [1] * index.ndim
    view[d] = n
    zeros = full(shape, 0, dtype=dt.float32, device=dev)
    keep = hit = None
    for place, radix, s in reversed(_digit_plan(op, n)):
        exps = _LOW_EXP + s * np.arange(radix)
        weight = _digit_table(np.ldexp(np.float32(1), exps), place, n, zeros).reshape(view)
        bound = _digit_table(np.ldexp(np.float32(1), exps + s), place, n, zeros).reshape(view)
        total = scatter_add(zeros, d, index, expand(weight, index.shape) if keep is None
                            else where(keep, weight, 0.0))
        if hit is None:
            hit = total > 0
        top = bound > gather(total, d, index)
        keep = top if keep is None else keep & top
    return keep, hit


def _known_last_writes(shape: tuple, d: int, index: Tensor):
    """`_last_writes`'s `(keep, hit)` computed on the host when `index`'s values are there
    and in range (else None: the lazy rounds run, and the kernels check the range)."""
    if _CAPTURE.session is not None:   # a replay must follow new index values
        return None
    a = Dispatch.host_value(index)
    if a is None or a.dtype.kind not in "iu" or a.size == 0 or a.shape != tuple(index.shape):
        return None
    if a.min() < 0 or a.max() >= shape[d]:
        return None
    strides = [sh.numel(shape[k + 1:]) for k in range(len(shape))]
    target = a.astype(np.int64) * strides[d]
    for k, grid in enumerate(np.indices(a.shape, sparse=True)):
        if k != d and a.shape[k] > 1:
            target = target + grid * strides[k]
    order = np.arange(a.size, dtype=np.int64).reshape(a.shape)
    last = np.full(sh.numel(shape), -1, np.int64)
    last[target.reshape(-1)] = order.reshape(-1)          # numpy: the last assignment wins
    keep = last[target] == order
    hit = as_tensor((last >= 0).reshape(shape), index)
    return (None if keep.all() else as_tensor(keep, index)), hit


def _kept(src: Tensor, keep, work: dt.DType) -> Tensor:
    """`src` in `work`, zero where `keep` (broadcast; None keeps all) is False."""
    src = to(src, work)
    return src if keep is None else where(keep, src, 0)


def _place(op: str, x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    """`x` with `src` written along `d` at `index`, one value a target (the last write wins,
    see `_last_writes`): gradients reach the winning `src` entries and x's kept positions."""
    work = _work_dtype(x.dtype)
    keep, hit = _last_writes(op, x.shape, d, index)
    if keep is not None and src.shape != index.shape:
        src = src[tuple(slice(0, s) for s in index.shape)]
    placed = scatter_add(full(x.shape, 0, dtype=work, device=x.device), d, index,
                         _kept(src, keep, work))
    return where(hit, to(placed, x.dtype), x)


def _same_dtype(op: str, x: Tensor, src: Tensor) -> None:
    if src.dtype is not x.dtype:
        raise DTypeError(f"{op}: src must have the input's dtype {x.dtype.name}, got "
                         f"{src.dtype.name} (shape {src.shape})")


def _scatter_args(op: str, input, dim, index, src):
    """The checked (x, dim, int64 index, src) of a scatter: index has x's rank, fits inside x
    outside `dim` and inside src; src has x's dtype."""
    x = tensor_arg(op, input)
    if x.ndim == 0:
        x = x.reshape(1)
    d = sh.normalize_dim(op, dim, x.ndim)
    idx = index_tensor(op, index, x)
    src = tensor_arg(op, src)
    common_device(op, (x, idx, src))
    _same_dtype(op, x, src)
    if idx.ndim == 0:
        idx = idx.reshape(1)
    if src.ndim == 0:
        src = src.reshape(1)
    sh.gather(op, x.shape, d, idx.shape)
    check_known_index(op, idx, x.shape[d], d)
    if src.ndim != idx.ndim or any(a > b for a, b in zip(idx.shape, src.shape)):
        raise ShapeError(f"{op}: index shape {idx.shape} must fit inside src shape "
                         f"{src.shape}")
    return x, d, idx, src


# ---------------------------------------------------------------------- masks
@method(function=False)
def masked_fill(input, mask, value) -> Tensor:  # noqa: A002 - torch's name
    """`value` where the bool `mask` is True, `input` elsewhere (the two broadcast). `value`
    is a number or a 0-d tensor (which then gets the gradient of the filled positions); the
    result keeps input's dtype."""
    x = tensor_arg("masked_fill", input)
    m = _bool_mask("masked_fill", mask, x)
    if _scalar_value("masked_fill", value):
        v = full((), value, dtype=x.dtype, device=x.device)
    else:
        v = tensor_arg("masked_fill", value)
        if v.ndim != 0:
            raise ShapeError(f"masked_fill: a tensor value must be 0-d, got shape {v.shape}")
        common_device("masked_fill", (x, v))
        v = to(v, x.dtype)
    sh.broadcast("masked_fill", x.shape, m.shape)
    return where(m, v, x)


@method(function=False)
def masked_fill_(input, mask, value) -> Tensor:  # noqa: A002 - torch's name
    """In-place `masked_fill`: the mask must broadcast to the tensor's shape."""
    return rebind(input, masked_fill(input, mask, value), "masked_fill_")


@method(function=False)
def masked_select(input, mask) -> Tensor:  # noqa: A002 - torch's name
    """The elements of `input` where the bool `mask` is True (the two broadcast), as a 1-D
    tensor in row-major order. The mask is read now: its values size the output."""
    x = tensor_arg("masked_select", input)
    m = _bool_mask("masked_select", mask, x)
    shape = sh.broadcast("masked_select", x.shape, m.shape)
    if x.shape != shape:
        x = expand(x, shape)
    picks = np.flatnonzero(np.broadcast_to(m.numpy(), shape).reshape(-1)).astype(np.int64)
    return index_select(x.reshape(-1), 0, as_tensor(picks, x))


@method(function=False)
def nonzero(input, *, as_tuple: bool = False):  # noqa: A002 - torch's name
    """The indices of the non-zero elements: an int64 tensor of shape (count, ndim) in
    row-major order, or with `as_tuple=True` one 1-D tensor per dim (a 0-d input counts as
    1-D). Reads the values now: they size the output."""
    x = tensor_arg("nonzero", input)
    a = x.numpy()
    if as_tuple:
        return tuple(as_tensor(i.astype(np.int64), x) for i in np.nonzero(np.atleast_1d(a)))
    found = np.argwhere(a).astype(np.int64)
    return as_tensor(found.reshape(np.count_nonzero(a), a.ndim), x)


@method(function=False)
def argwhere(input) -> Tensor:  # noqa: A002 - torch's name
    """`nonzero(input)`: the (count, ndim) int64 indices of the non-zero elements."""
    return nonzero(tensor_arg("argwhere", input))


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """torch.nn.functional.one_hot: int64 of shape `tensor.shape + (num_classes,)`, 1 at each
    class index. With the default -1 the class count is `max + 1`, read from the values;
    with a given count the op stays lazy and an index outside [0, num_classes) gives a row
    of zeros instead of torch's error (checking would read the values)."""
    x = tensor_arg("one_hot", tensor)
    if x.dtype.is_float or x.dtype is dt.bool_:
        raise DTypeError(f"one_hot: expected an integer tensor of class indices, got "
                         f"{x.dtype.name}")
    n = operator.index(num_classes)
    if n == -1:
        if x.numel() == 0:
            raise InvalidArgumentError("one_hot: cannot infer the number of classes from an "
                                       f"empty tensor (shape {x.shape}); pass num_classes")
        values = x.numpy()
        if values.min() < 0:
            raise IndexOutOfRangeError(f"one_hot: class values must be non-negative, got "
                                       f"{int(values.min())}")
        n = int(values.max()) + 1
    elif n < 0:
        raise InvalidArgumentError(f"one_hot: num_classes must be positive or -1, got {n}")
    classes = arange(n, device=x.device)
    return to(x.unsqueeze(-1) == to(classes, x.dtype), dt.int64)


# ---------------------------------------------------------------------- scatter
@method(function=False)
def scatter(input, dim: int, index, src=None, *, value=None,  # noqa: A002 - torch's name
            reduce: str | None = None) -> Tensor:
    """torch.scatter: a copy of `input` with `src[i][j]` written at `[index[i][j]][j]` (for
    dim 0), or the number `value` at every indexed position; `src` may be a number too (as
    torch's `scatter(dim, index, value)`); a position indexed twice gets the last write, as
    torch on CPU. `reduce="add"`/`"multiply"` combine with the input instead of overwriting.
    Gradients reach the written `src` entries and input's kept positions."""
    if (src is None) == (value is None):
        raise InvalidArgumentError("scatter: pass exactly one of src and value")
    if src is None:
        src = value
    x = tensor_arg("scatter", input)
    if _scalar_value("scatter", src):
        idx = index_tensor("scatter", index, x)
        src = full(idx.shape, src, dtype=x.dtype, device=x.device)
    if reduce is not None:
        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise InvalidArgumentError(f"scatter: reduce must be 'add' or 'multiply', got "
                                       f"{reduce!r}")
        return scatter_reduce(x, dim, index, src, modes[reduce])
    x0 = x
    x, d, idx, src = _scatter_args("scatter", x, dim, index, src)
    if idx.numel() == 0:
        return x0
    return _place("scatter", x, d, idx, src).reshape(x0.shape)


@method(function=False)
def scatter_(input, dim: int, index, src=None, *, value=None,  # noqa: A002 - torch's name
             reduce: str | None = None) -> Tensor:
    """In-place `scatter`."""
    return rebind(input, scatter(input, dim, index, src, value=value, reduce=reduce),
                  "scatter_")


@method(function=False)
def scatter_add_(input, dim: int, index, src) -> Tensor:  # noqa: A002 - torch's name
    """In-place `scatter_add`."""
    return rebind(input, scatter_add(input, dim, index, src), "scatter_add_")


def _identity(reduce: str, src: Tensor):
    """What an unwritten slot holds before the reduction: the reduction's identity (for
    integers, src's own extreme, as int64's limits do not fit every backend)."""
    if reduce == "prod":
        return 1
    if src.dtype.is_float:
        return -np.inf if reduce == "amax" else np.inf
    return (src.min() if reduce == "amax" else src.max()).detach()


def _dense_reduce(x: Tensor, d: int, idx: Tensor, src: Tensor, reduce: str,
                  include_self: bool):
    """prod/amax/amin: every index entry against every target position along `d`, then one
    reduction, so each reduction's own gradient (ties split evenly, zeros exact) applies.
    Returns `(reduced, hit)` shaped like x."""
    n = x.shape[d]
    src = src[tuple(slice(0, s) for s in idx.shape)]
    idx_l, src_l = movedim(idx, d, -1), movedim(src, d, -1)          # (A..., k)
    onehot = idx_l.unsqueeze(-1) == arange(n, device=x.device)       # (A..., k, n)
    contrib = where(onehot, src_l.unsqueeze(-1), _identity(reduce, src_l))
    if include_self:
        x_l = movedim(x, d, -1)[tuple(slice(0, s) for s in idx_l.shape[:-1])]
        contrib = cat([x_l.unsqueeze(-2), contrib], -2)
    fn = {"prod": lambda t: t.prod(-2), "amax": lambda t: t.amax(-2),
          "amin": lambda t: t.amin(-2)}[reduce]
    reduced = to(fn(contrib), x.dtype)
    hit = onehot.any(-2)
    reduced, hit = movedim(reduced, -1, d), movedim(hit, -1, d)
    grow = []
    for a, b in zip(reversed(reduced.shape), reversed(x.shape)):
        grow += [0, b - a]
    if any(grow):  # the index covers only part of x outside `d`
        reduced, hit = pad(reduced, grow), pad(hit, grow, value=False)
    return reduced, hit


@method(function=False)
def scatter_reduce(input, dim: int, index, src, reduce: str,  # noqa: A002 - torch's name
                   *, include_self: bool = True) -> Tensor:
    """torch.scatter_reduce: reduce the values of `src` scattered to each position of
    `input` along `dim` ("sum", "prod", "mean", "amax" or "amin"), together with input's
    own value when `include_self`; positions no index reaches keep input's value. An integer
    "mean" rounds down, as torch's. Gradients as torch's: ties of amax/amin share evenly,
    prod is exact where values are zero (one difference: with `include_self=False`, torch
    also counts an excluded input value equal to the result in the split; here it does
    not, so the shares add up to the output's gradient)."""
    if reduce not in _REDUCES:
        raise InvalidArgumentError(f"scatter_reduce: reduce must be one of "
                                   f"{', '.join(_REDUCES)}, got {reduce!r}")
    x0 = tensor_arg("scatter_reduce", input)
    x, d, idx, src = _scatter_args("scatter_reduce", x0, dim, index, src)
    if idx.numel() == 0:
        return x0
    if reduce in ("sum", "mean"):
        work = _work_dtype(x.dtype)
        xw, sw = to(x, work), to(src, work)
        ones = full(idx.shape, 1, dtype=dt.int32, device=x.device)
        count = scatter_add(full(x.shape, 0, dtype=dt.int32, device=x.device), d, idx, ones)
        hit = count > 0
        base = xw if include_self else where(hit, 0, xw)
        total = scatter_add(base, d, idx, sw)
        if reduce == "mean":
            count = binary(_B.MAXIMUM, count + int(include_self), 1)
            if work.is_float:
                total = total / to(count, work)
            else:
                total = binary(_B.FLOOR_DIV, total, to(count, work))
        out = to(where(hit, total, xw), x.dtype)
    else:
        reduced, hit = _dense_reduce(x, d, idx, src, reduce, include_self)
        out = where(hit, reduced, x)
    return out.reshape(x0.shape)


@method(function=False)
def scatter_reduce_(input, dim: int, index, src, reduce: str,  # noqa: A002 - torch's name
                    *, include_self: bool = True) -> Tensor:
    """In-place `scatter_reduce`."""
    return rebind(input, scatter_reduce(input, dim, index, src, reduce,
                                        include_self=include_self), "scatter_reduce_")


# ---------------------------------------------------------------------- index_put
def _index_list(x: Tensor, indices) -> list:
    """The integer index tensors of `indices` (one per leading dim of x; a bool tensor
    stands for the dims it covers, through its nonzero positions)."""
    if not isinstance(indices, (tuple, list)):
        raise DTypeError(f"index_put: indices must be a tuple of tensors, got "
                         f"{type(indices).__name__}")
    out = []
    for k in indices:
        if k is None:
            raise InvalidArgumentError("index_put: None is not supported in indices; index "
                                       "the leading dims with tensors")
        t = as_tensor(k, x)
        if not isinstance(t, Tensor):
            t = Tensor.from_dispatch(t)
        common_device("index_put", (x, t))
        refuse_byte_index("index_put", t)
        if t.dtype is dt.bool_:
            dims = x.shape[len(out):len(out) + t.ndim]
            if tuple(t.shape) != tuple(dims):
                raise IndexOutOfRangeError(f"index_put: boolean index of shape {t.shape} does "
                                           f"not match the dims {dims} of shape {x.shape} it "
                                           "indexes")
            out.extend(nonzero(t, as_tuple=True) if t.ndim else [])
            if t.ndim == 0:
                raise InvalidArgumentError("index_put: a 0-d boolean index is not supported")
        else:
            out.append(index_tensor("index_put", t, x))
    if len(out) > x.ndim:
        raise IndexOutOfRangeError(f"index_put: too many indices ({len(out)}) for a tensor "
                                   f"of shape {x.shape}")
    return out


def _flat_positions(x: Tensor, idx: list):
    """`(positions, lead)`: the row-major positions in `x` of `x[idx]` (shape: the indices
    broadcast, then x's unindexed dims), and those in the indexed leading dims alone (shape:
    the indices broadcast): `x[idx]`'s own indexing applied to the positions, so negative
    entries count from the end and ranges are checked as `x[idx]` checks them."""
    if len(idx) > 1:
        sh.broadcast("index_put", *(t.shape for t in idx))
    k = len(idx)
    lead = arange(sh.numel(x.shape[:k]), device=x.device).reshape(x.shape[:k])[tuple(idx)]
    rest = x.shape[k:]
    if not rest:
        return lead, lead
    r = sh.numel(rest)
    within = arange(r, device=x.device).reshape(rest)
    return lead.reshape(lead.shape + (1,) * len(rest)) * r + within, lead


@method(function=False)
def index_put(input, indices, values, accumulate: bool = False) -> Tensor:  # noqa: A002
    """torch.index_put: a copy of `input` with `input[indices] = values` (`indices` a tuple
    of integer or bool tensors for the leading dims, broadcast together; `values` broadcast
    to the indexed shape; a position indexed twice gets the last write), or `+=` with
    `accumulate=True`, where repeated positions add up. Gradients reach the written `values`
    and input's kept positions."""
    x = tensor_arg("index_put", input)
    idx = _index_list(x, indices)
    if not idx:
        raise InvalidArgumentError("index_put: indices must hold at least one tensor")
    if _scalar_value("index_put", values):
        v = full((), values, dtype=x.dtype, device=x.device)
    else:
        v = tensor_arg("index_put", values)
        common_device("index_put", (x, v))
        if v.dtype is not x.dtype:
            raise DTypeError(f"index_put: values must have the input's dtype {x.dtype.name}, "
                             f"got {v.dtype.name}")
    pos, lead = _flat_positions(x, idx)
    try:
        v = expand(v, pos.shape) if v.shape != pos.shape else v
    except ShapeError:
        raise ShapeError(f"index_put: values of shape {v.shape} do not broadcast to the "
                         f"indexed shape {pos.shape} of input shape {x.shape}") from None
    n = x.numel()
    work = _work_dtype(x.dtype)
    if accumulate:
        out = scatter_add(to(x.reshape(n), work), 0, pos.reshape(-1), to(v, work).reshape(-1))
        return to(out, x.dtype).reshape(x.shape)
    # the last write of each indexed slot wins: found over the leading dims alone
    tail = (1,) * (x.ndim - len(idx))
    keep, hit = _last_writes("index_put", (sh.numel(x.shape[:len(idx)]),), 0,
                             lead.reshape(-1))
    v = _kept(v, None if keep is None else keep.reshape(lead.shape + tail), work)
    placed = scatter_add(full((n,), 0, dtype=work, device=x.device), 0, pos.reshape(-1),
                         v.reshape(-1))
    hit = hit.reshape(x.shape[:len(idx)] + tail)
    return where(hit, to(placed, x.dtype).reshape(x.shape), x)


@method(function=False)
def index_put_(input, indices, values, accumulate: bool = False) -> Tensor:  # noqa: A002
    """In-place `index_put`."""
    return rebind(input, index_put(input, indices, values, accumulate), "index_put_")


# ---------------------------------------------------------------------- index_* and put
def _row_index(op: str, x: Tensor, dim, index, negative: bool):
    """(d, 1-D int64 index) of an index_* op: a 0-d or 1-D integer index along `dim`;
    `negative` wraps negative ids once from the end (index_fill does, index_copy not)."""
    d = sh.normalize_dim(op, dim, max(x.ndim, 1))
    idx = index_tensor(op, index, x)
    common_device(op, (x, idx))
    if idx.ndim > 1:
        raise ShapeError(f"{op}: index must be 0-d or 1-D, got shape {idx.shape}")
    idx = idx.reshape(-1)
    n = x.shape[d] if x.ndim else 1
    check_known_index(op, idx, n, d, low=-n if negative else 0)
    if negative:
        idx = where(idx < 0, idx + n, idx)
    return d, idx


def _along(idx: Tensor, d: int, shape: tuple) -> Tensor:
    """The 1-D `idx` broadcast over `shape` with its entries along dim `d`."""
    view = [1] * len(shape)
    view[d] = idx.shape[0]
    return expand(idx.reshape(tuple(view)), shape)


@method(function=False)
def index_fill(input, dim: int, index, value) -> Tensor:  # noqa: A002 - torch's name
    """torch.index_fill: a copy of `input` with the slices at `index` along `dim` set to
    `value` (a number, or a 0-d tensor that then gets their gradient); negative ids count
    from the end."""
    x = tensor_arg("index_fill", input)
    d, idx = _row_index("index_fill", x, dim, index, negative=True)
    if _scalar_value("index_fill", value):
        v = full((), value, dtype=x.dtype, device=x.device)
    else:
        v = tensor_arg("index_fill", value)
        if v.ndim != 0:
            raise ShapeError(f"index_fill: a tensor value must be 0-d, got shape {v.shape}")
        common_device("index_fill", (x, v))
        v = to(v, x.dtype)
    if idx.numel() == 0:
        return x
    n = x.shape[d] if x.ndim else 1
    ones = full(idx.shape, 1, dtype=dt.int32, device=x.device)
    hit = scatter_add(full((n,), 0, dtype=dt.int32, device=x.device), 0, idx, ones) > 0
    if x.ndim:
        view = [1] * x.ndim
        view[d] = n
        hit = hit.reshape(tuple(view))
    else:
        hit = hit.reshape(())
    return where(hit, v, x)


@method(function=False)
def index_fill_(input, dim: int, index, value) -> Tensor:  # noqa: A002 - torch's name
    """In-place `index_fill`."""
    return rebind(input, index_fill(input, dim, index, value), "index_fill_")


def _index_source(op: str, x: Tensor, d: int, idx: Tensor, source) -> Tensor:
    src = tensor_arg(op, source)
    common_device(op, (x, src))
    _same_dtype(op, x, src)
    want = list(x.shape) if x.ndim else [1]
    want[d] = idx.shape[0]
    if src.ndim == 0 and x.ndim == 0:
        src = src.reshape(1)
    if tuple(src.shape) != tuple(want):
        raise ShapeError(f"{op}: source must have shape {tuple(want)} (input {x.shape} with "
                         f"{idx.shape[0]} entries along dim {d}), got {src.shape}")
    return src


@method(function=False)
def index_copy(input, dim: int, index, source) -> Tensor:  # noqa: A002 - torch's name
    """torch.index_copy: a copy of `input` with slice `i` of `source` along `dim` written at
    `index[i]` (an id given twice gets its last slice, as torch on CPU). Gradients reach
    `source` and input's kept slices."""
    x = tensor_arg("index_copy", input)
    d, idx = _row_index("index_copy", x, dim, index, negative=False)
    src = _index_source("index_copy", x, d, idx, source)
    if idx.numel() == 0:
        return x
    x1 = x.reshape(1) if x.ndim == 0 else x
    work = _work_dtype(x.dtype)
    keep, hit = _last_writes("index_copy", (x1.shape[d],), 0, idx)   # the last id wins
    view = [1] * x1.ndim
    view[d] = -1
    if keep is not None:
        keep = keep.reshape(tuple(view))
    placed = index_add(full(x1.shape, 0, dtype=work, device=x.device), d, idx,
                       _kept(src, keep, work))
    return where(hit.reshape(tuple(view)), to(placed, x.dtype), x1).reshape(x.shape)


@method(function=False)
def index_copy_(input, dim: int, index, source) -> Tensor:  # noqa: A002 - torch's name
    """In-place `index_copy`."""
    return rebind(input, index_copy(input, dim, index, source), "index_copy_")


@method(function=False)
def index_reduce(input, dim: int, index, source, reduce: str,  # noqa: A002 - torch's name
                 *, include_self: bool = True) -> Tensor:
    """torch.index_reduce: reduce the slices of `source` sent to each id of `index` along
    `dim` ("prod", "mean", "amax" or "amin"), with input's own slice when `include_self`;
    slices no id reaches keep input's value (`scatter_reduce` over whole slices)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise InvalidArgumentError(f"index_reduce: reduce must be one of prod, mean, amax, "
                                   f"amin, got {reduce!r}")
    x = tensor_arg("index_reduce", input)
    d, idx = _row_index("index_reduce", x, dim, index, negative=False)
    src = _index_source("index_reduce", x, d, idx, source)
    if idx.numel() == 0:
        return x
    x1 = x.reshape(1) if x.ndim == 0 else x
    out = scatter_reduce(x1, d, _along(idx, d, src.shape), src, reduce,
                         include_self=include_self)
    return out.reshape(x.shape)


@method(function=False)
def index_reduce_(input, dim: int, index, source, reduce: str,  # noqa: A002 - torch's name
                  *, include_self: bool = True) -> Tensor:
    """In-place `index_reduce`."""
    return rebind(input, index_reduce(input, dim, index, source, reduce,
                                      include_self=include_self), "index_reduce_")


@method(function=False)
def put(input, index, source, accumulate: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """torch.put: a copy of `input` with `source`'s elements written at `index`, both taken
    as 1-D (input in row-major order; negative ids count from the end; a repeated id gets
    the last write), or added with `accumulate=True`, where repeated ids add up."""
    x = tensor_arg("put", input)
    idx = index_tensor("put", index, x)
    src = tensor_arg("put", source)
    common_device("put", (x, idx, src))
    _same_dtype("put", x, src)
    if idx.numel() != src.numel():
        raise ShapeError(f"put: index ({idx.numel()} elements, shape {idx.shape}) and source "
                         f"({src.numel()} elements, shape {src.shape}) must have as many "
                         f"elements")
    n = x.numel()
    flat = idx.reshape(-1)
    check_known_index("put", flat, n, 0, low=-n)
    flat = where(flat < 0, flat + n, flat)   # wrapped once: the kernel rejects what stays < 0
    if flat.numel() == 0:
        return x
    flat_x, flat_v = x.reshape(n), src.reshape(-1)
    if accumulate:
        work = _work_dtype(x.dtype)
        out = to(scatter_add(to(flat_x, work), 0, flat, to(flat_v, work)), x.dtype)
    else:
        out = _place("put", flat_x, 0, flat, flat_v)
    return out.reshape(x.shape)


@method(function=False)
def put_(input, index, source, accumulate: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """In-place `put`."""
    return rebind(input, put(input, index, source, accumulate), "put_")


install_methods(__name__)
