"""More of torch's ops: selection by order (median, kthvalue, quantile, nanmedian,
nanquantile, msort) through the lazy `sort`; searching (searchsorted, bucketize, isin) through
comparisons and a sum (O(n * m) memory); distances and small elementwise ops (cdist,
heaviside, sinc); and the data-dependent ops whose output size depends on the values
(unique, unique_consecutive, bincount, histc with an empty range, masked_scatter, equal).

The data-dependent ops read their input's values now, as `nonzero` and `masked_select` do, so
inside a function recorded by `lazyt.compile` they raise `CaptureError`; everything else stays
lazy and autodiff differentiates it (values picked by order get the gradient through gather).
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import full
from .dispatch import DispatchTensor, common_device
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import as_tensor, expand, gather, index_select, scatter_add, to, where
from .layout import ValuesIndices, movedim, sort
from .mathops import isnan, tensor_arg
from .moreops import _float_fn, exporter
from .tensor import Tensor
from .amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

__all__: list = []
_export = exporter(globals(), __all__)


# ---------------------------------------------------------------------- selection by order
def _along_last(op: str, input, dim):
    """`(x, d, xm)`: the checked tensor, the normalized dim (a 0-d tensor counts as 1-D) and
    x with `d` moved last."""
    x = tensor_arg(op, input)
    if x.ndim == 0:
        x = x.reshape(1)
    d = sh.normalize_dim(op, dim, x.ndim)
    if x.shape[d] == 0:
        raise IndexOutOfRangeError(f"{op}: cannot select from an empty dim {d} of shape "
                                   f"{x.shape}")
    return x, d, movedim(x, d, -1)


def _finish(op: str, input, d: int, keepdim: bool, vals: Tensor, idx: Tensor):
    """Values and indices of shape `lead + (1,)` back to torch's output shape."""
    shape0 = tensor_arg(op, input).shape
    if keepdim:
        vals, idx = movedim(vals, -1, d), movedim(idx, -1, d)
        if not shape0:
            vals, idx = vals.reshape(()), idx.reshape(())
        return ValuesIndices(vals, idx)
    lead = vals.shape[:-1]
    return ValuesIndices(vals.reshape(lead), idx.reshape(lead))


def _pick(xm: Tensor, position: Tensor):
    """`(values, indices)` at sorted `position` (shape `lead + (1,)`) along the last dim."""
    order = sort(xm, -1).indices
    idx = gather(order, -1, position)
    return gather(xm, -1, idx), idx


def _nan_count(xm: Tensor) -> Tensor:
    return to(isnan(xm), dt.int64).sum(-1, keepdim=True)


def _median(op: str, input, dim, keepdim: bool, skip_nan: bool):
    if dim is None:
        x = tensor_arg(op, input)
        if x.numel() == 0:
            raise IndexOutOfRangeError(f"{op}: cannot take the median of an empty tensor "
                                       f"(shape {x.shape})")
        m = _median(op, x.reshape(-1), 0, False, skip_nan).values
        if not (x.requires_grad and x.dtype.is_float):
            return m
        # torch's gradient of the whole-tensor median is shared evenly by the elements equal
        # to it: amax of those (all equal m) gives the value m and splits the gradient
        ties = where(x == m.detach(), x, -math.inf).amax()
        return where(isnan(m), m, ties)
    x, d, xm = _along_last(op, input, dim)
    n = xm.shape[-1]
    lead = xm.shape[:-1] + (1,)
    if not xm.dtype.is_float:
        pos = full(lead, (n - 1) // 2, dtype=dt.int64, device=x.device)
    elif skip_nan:  # the lower median of the non-NaN values (all NaN: position 0, a NaN)
        valid = n - _nan_count(xm)
        pos = (where(valid > 0, valid, 1) - 1) // 2
    else:           # any NaN: the first NaN, which the stable sort puts at n - count
        nans = _nan_count(xm)
        pos = where(nans > 0, n - nans, (n - 1) // 2)
    vals, idx = _pick(xm, pos)
    return _finish(op, input, d, keepdim, vals, idx)


@_export()
def median(input, dim=None, keepdim: bool = False):  # noqa: A002 - torch's name
    """The lower median (of an even count, the smaller middle value); NaN where the values
    hold a NaN. Without `dim` a 0-d tensor; with `dim` `(values, indices)`."""
    return _median("median", input, dim, keepdim, False)


@_export()
def nanmedian(input, dim=None, keepdim: bool = False):  # noqa: A002 - torch's name
    """`median` of the values that are not NaN (NaN where all are)."""
    return _median("nanmedian", input, dim, keepdim, True)


@_export()
def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:  # noqa: A002
    """The k-th smallest value along `dim` (k counts from 1; NaN counts as the largest) and
    its index, `(values, indices)`."""
    x, d, xm = _along_last("kthvalue", input, dim)
    k = operator.index(k)
    n = xm.shape[-1]
    if not 1 <= k <= n:
        raise IndexOutOfRangeError(f"kthvalue: k={k} is out of range for dim {d} of size {n} "
                                   f"(shape {x.shape})")
    pos = full(xm.shape[:-1] + (1,), k - 1, dtype=dt.int64, device=x.device)
    vals, idx = _pick(xm, pos)
    return _finish("kthvalue", input, d, keepdim, vals, idx)


@_export()
def msort(input) -> Tensor:  # noqa: A002 - torch's name
    """The values sorted along dim 0 (`sort(input, 0).values`)."""
    return sort(tensor_arg("msort", input), 0).values


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantiles(op: str, x: Tensor, q) -> tuple:
    """`(q as a 1-D tensor in x's dtype, whether q was a scalar)`; a number q is checked to
    lie in [0, 1] (a tensor q is not: that would read its values)."""
    if isinstance(q, (numbers.Real, np.floating)) and not isinstance(q, bool):
        if not 0.0 <= float(q) <= 1.0:
            raise InvalidArgumentError(f"{op}: q must be in the range [0, 1], got {q}")
        return full((1,), float(q), dtype=x.dtype, device=x.device), True
    if not isinstance(q, DispatchTensor):
        raise DTypeError(f"{op}: q must be a float or a lazyt.Tensor, got {type(q).__name__}")
    qt = tensor_arg(op, q)
    common_device(op, (x, qt))
    if qt.dtype is not x.dtype:
        raise DTypeError(f"{op}: q must have the input's dtype {x.dtype.name}, got "
                         f"{qt.dtype.name}")
    if qt.ndim > 1:
        raise ShapeError(f"{op}: q must be a scalar or a 1-D tensor, got shape {qt.shape}")
    return qt.reshape(-1), qt.ndim == 0


def _quantile(op: str, input, q, dim, keepdim: bool, interpolation: str, skip_nan: bool):
    x0 = tensor_arg(op, input)
    if not x0.dtype.is_float:
        raise DTypeError(f"{op}: needs a floating-point tensor, got {x0.dtype.name} of shape "
                         f"{x0.shape}")
    if interpolation not in _INTERPOLATIONS:
        raise InvalidArgumentError(f"{op}: interpolation must be one of "
                                   f"{', '.join(_INTERPOLATIONS)}, got {interpolation!r}")
    qt, scalar_q = _quantiles(op, x0, q)
    if x0.numel() == 0:
        raise IndexOutOfRangeError(f"{op}: input tensor must be non-empty (shape {x0.shape})")
    if dim is None:
        x, d = x0.reshape(-1), 0
        kept = (1,) * x0.ndim
    else:
        x = x0.reshape(1) if x0.ndim == 0 else x0
        d = sh.normalize_dim(op, dim, x.ndim)
        kept = x.shape[:d] + (1,) + x.shape[d + 1:] if x0.ndim else ()
    s = sort(movedim(x, d, -1), -1).values                        # (lead..., n)
    n, lead = s.shape[-1], s.shape[:-1]
    nq = qt.shape[0]
    if skip_nan:
        valid = to(n - _nan_count(s), x.dtype)                    # (lead..., 1)
        rank = qt * (where(valid > 0, valid, 1.0) - 1.0)          # (lead..., nq)
    else:
        rank = expand(qt * float(n - 1), lead + (nq,))
    lo = rank.floor()
    hi = rank.ceil()
    if interpolation == "nearest":
        lo = hi = rank.round()
    lo_i = to(lo, dt.int64).clamp(0, n - 1)
    hi_i = to(hi, dt.int64).clamp(0, n - 1)
    below, above = gather(s, -1, lo_i), gather(s, -1, hi_i)
    if interpolation in ("lower", "nearest"):
        out = below
    elif interpolation == "higher":
        out = above
    elif interpolation == "midpoint":
        out = (below + above) * 0.5
    else:
        out = below + (above - below) * (rank - lo)
    last_nan = isnan(s[..., n - 1:])                              # sorted: NaN goes last
    if skip_nan:
        out = where(valid > 0, out, math.nan)
    else:
        out = where(last_nan, math.nan, out)
    out = movedim(out, -1, 0)                                     # (nq, lead...)
    out = out.reshape((nq,) + (kept if keepdim else lead))
    return out.reshape(out.shape[1:]) if scalar_q else out


@_export()
def quantile(input, q, dim=None, keepdim: bool = False, *,  # noqa: A002 - torch's name
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles along `dim` (all values when None), q a float or a 1-D tensor in
    [0, 1] (a tensor q leads the output's shape); NaN where the values hold a NaN.
    `interpolation` picks between the two nearest order statistics, as torch's."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@_export()
def nanquantile(input, q, dim=None, keepdim: bool = False, *,  # noqa: A002 - torch's name
                interpolation: str = "linear") -> Tensor:
    """`quantile` of the values that are not NaN (NaN where all are)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ---------------------------------------------------------------------- searching
def _value_arg(op: str, value, like: Tensor) -> Tensor:
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, bool):
        return full((), value, dtype=like.dtype, device=like.device)
    v = tensor_arg(op, value)
    common_device(op, (like, v))
    return v


@_export(method=False)
def searchsorted(sorted_sequence, values, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter=None) -> Tensor:
    """The indices at which `values` would be inserted into `sorted_sequence` (sorted along
    its last dim; 1-D, or with leading dims matching those of `values`) to keep it sorted:
    the count of elements `< v` (`<= v` with `right=True` or `side="right"`); NaN sorts last.
    Lazy: every value against every element, O(values.numel() * n) memory."""
    op = "searchsorted"
    seq = tensor_arg(op, sorted_sequence)
    if side is not None:
        if side not in ("left", "right"):
            raise InvalidArgumentError(f"{op}: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise InvalidArgumentError(f"{op}: side='left' and right=True are contradictory")
        right = side == "right"
    if seq.ndim == 0:
        raise ShapeError(f"{op}: sorted_sequence must have at least 1 dim, got a 0-d tensor")
    v = _value_arg(op, values, seq)
    if sorter is not None:
        srt = tensor_arg(op, sorter)
        if srt.shape != seq.shape or srt.dtype.is_float or srt.dtype is dt.bool_:
            raise ShapeError(f"{op}: sorter must be an integer tensor of the sequence's shape "
                             f"{seq.shape}, got {srt.dtype.name} {srt.shape}")
        seq = gather(seq, -1, to(srt, dt.int64))
    if seq.ndim > 1 and (v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]):
        raise ShapeError(f"{op}: the leading dims of sorted_sequence {seq.shape} and values "
                         f"{v.shape} must match (or sorted_sequence must be 1-D)")
    s = seq.unsqueeze(-2) if seq.ndim > 1 else seq              # (..., 1, n)
    vv = v.unsqueeze(-1)                                         # (..., m, 1)
    before = (s <= vv) if right else (s < vv)
    if s.dtype.is_float or vv.dtype.is_float:
        if right:
            before = before | isnan(vv)
        else:
            before = before | (isnan(vv) & ~isnan(s))
    out = to(before, dt.int64).sum(-1)
    return to(out, dt.int32) if out_int32 else out


@_export(method=False)
def bucketize(input, boundaries, *, out_int32: bool = False,  # noqa: A002 - torch's name
              right: bool = False) -> Tensor:
    """The bucket of each element given the sorted 1-D `boundaries`: i with
    `boundaries[i-1] < x <= boundaries[i]` (`<= x <` with `right=True`)."""
    b = tensor_arg("bucketize", boundaries)
    if b.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-D, got shape {b.shape}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


@_export(method=False)
def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """A bool tensor of `elements`' shape: whether each element is in `test_elements` (either
    may be a number). Lazy, O(elements.numel() * test_elements.numel()) memory."""
    like = next((t for t in (elements, test_elements) if isinstance(t, DispatchTensor)), None)
    if like is None:
        raise DTypeError("isin: expected at least one lazyt.Tensor")
    like = tensor_arg("isin", like)
    e, t = _value_arg("isin", elements, like), _value_arg("isin", test_elements, like)
    found = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    return ~found if invert else found


# ---------------------------------------------------------------------- data-dependent
def _unique_result(x: Tensor, values: Tensor, inverse, counts, return_inverse: bool,
                   return_counts: bool):
    out = [values]
    if return_inverse:
        out.append(as_tensor(np.asarray(inverse, dtype=np.int64), x))
    if return_counts:
        out.append(as_tensor(np.asarray(counts, dtype=np.int64), x))
    return out[0] if len(out) == 1 else tuple(out)


def _runs(a: np.ndarray) -> np.ndarray:
    """The first position of each run of equal rows of `a` (n, k) (NaN equals nothing)."""
    change = np.ones(a.shape[0], dtype=bool)
    if a.shape[0] > 1:
        change[1:] = (a[1:] != a[:-1]).any(axis=1) if a.shape[1] else False
    return np.flatnonzero(change)


def _unique_along(op: str, x: Tensor, dim, consecutive: bool, return_inverse: bool,
                  return_counts: bool):
    """unique over the slices of x along `dim`: their order (sorted, or consecutive runs),
    read from the values; the kept slices are taken from x lazily."""
    d = sh.normalize_dim(op, dim, x.ndim if x.ndim else 1)
    a = np.moveaxis(np.atleast_1d(x.numpy()), d, 0)
    rows = a.reshape(a.shape[0], -1)
    if consecutive:
        order = np.arange(rows.shape[0])
    else:
        order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(rows.shape[0])
    starts = _runs(rows[order])
    inverse = np.empty(rows.shape[0], dtype=np.int64)
    run_id = np.cumsum(np.isin(np.arange(rows.shape[0]), starts)) - 1
    inverse[order] = run_id
    counts = np.diff(np.append(starts, rows.shape[0]))
    keep = as_tensor(order[starts].astype(np.int64), x)
    values = index_select(x.reshape(1) if x.ndim == 0 else x, d, keep)
    return _unique_result(x, values, inverse, counts, return_inverse, return_counts)


@_export()
def unique(input, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None):
    """The distinct values (sorted; NaNs each count as distinct, as torch's), and with the
    flags the int64 `inverse` (each element's position in the output, input's shape) and
    `counts`; with `dim`, the distinct slices along it. Reads the values now."""
    x = tensor_arg("unique", input)
    if dim is not None:
        return _unique_along("unique", x, dim, False, return_inverse, return_counts)
    a = x.numpy().reshape(-1)
    _, first, inverse, counts = np.unique(a, return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=False)
    values = index_select(x.reshape(-1), 0, as_tensor(first.astype(np.int64), x))
    return _unique_result(x, values, np.reshape(inverse, x.shape), counts, return_inverse,
                          return_counts)


@_export()
def unique_consecutive(input, return_inverse: bool = False,  # noqa: A002 - torch's name
                       return_counts: bool = False, dim=None):
    """The first element of each run of equal consecutive elements (or slices along `dim`),
    with the optional int64 `inverse` and `counts`, as `unique`. Reads the values now."""
    x = tensor_arg("unique_consecutive", input)
    if dim is not None:
        return _unique_along("unique_consecutive", x, dim, True, return_inverse,
                             return_counts)
    a = x.numpy().reshape(-1, 1)
    starts = _runs(a)
    inverse = np.cumsum(np.isin(np.arange(a.shape[0]), starts)) - 1
    counts = np.diff(np.append(starts, a.shape[0]))
    values = index_select(x.reshape(-1), 0, as_tensor(starts.astype(np.int64), x))
    return _unique_result(x, values, inverse.reshape(x.shape), counts, return_inverse,
                          return_counts)


@_export()
def bincount(input, weights=None, minlength: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The count of each value in the 1-D non-negative integer `input` (length
    `max(input) + 1`, at least `minlength`), or the sum of `weights` per value (float32 and
    float64 weights keep their dtype, others sum in float64, as torch's). Reads the values now
    (they size the output); the weighted sum stays lazy and differentiable."""
    x = tensor_arg("bincount", input)
    if x.ndim != 1 or x.dtype.is_float or x.dtype is dt.bool_:
        raise DTypeError(f"bincount: needs a 1-D integer tensor, got {x.dtype.name} of shape "
                         f"{x.shape}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise InvalidArgumentError(f"bincount: minlength must be non-negative, got "
                                   f"{minlength}")
    a = x.numpy().astype(np.int64)
    if a.size and a.min() < 0:
        raise InvalidArgumentError(f"bincount: input must be non-negative, got "
                                   f"{int(a.min())}")
    n = max(int(a.max()) + 1 if a.size else 0, minlength)
    if weights is None:
        return as_tensor(np.bincount(a, minlength=n).astype(np.int64), x)
    w = tensor_arg("bincount", weights)
    common_device("bincount", (x, w))
    if w.shape != x.shape:
        raise ShapeError(f"bincount: weights {w.shape} must have the input's shape {x.shape}")
    wd = w.dtype if w.dtype in (dt.float32, dt.float64) else dt.float64
    zeros = full((n,), 0, dtype=wd, device=x.device)
    return scatter_add(zeros, 0, to(x, dt.int64), to(w, wd)) if a.size else zeros


@_export()
def histc(input, bins: int = 100, min=0, max=0) -> Tensor:  # noqa: A002 - torch's names
    """A histogram of `bins` equal bins over [min, max] (elements outside, and NaN, are left
    out; max falls in the last bin), in input's dtype. With min == max the range is the data's
    own, read from the values now (widened by 1 each way where they are all equal);
    otherwise lazy."""
    x = tensor_arg("histc", input)
    if not x.dtype.is_float:
        raise DTypeError(f"histc: needs a floating-point tensor, got {x.dtype.name} of shape "
                         f"{x.shape}")
    bins = operator.index(bins)
    if bins <= 0:
        raise InvalidArgumentError(f"histc: bins must be > 0, got {bins}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise InvalidArgumentError(f"histc: max must be larger than min, got min={lo}, "
                                   f"max={hi}")
    if lo == hi and x.numel():
        a = x.numpy()
        lo, hi = float(np.min(a)), float(np.max(a))
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidArgumentError(f"histc: range of [{lo}, {hi}] is not finite")
    flat = x.reshape(-1).detach()
    inside = (flat >= lo) & (flat <= hi)
    pos = to(((where(inside, flat, lo) - lo) * (bins / (hi - lo))).floor(), dt.int64)
    pos = pos.clamp(0, bins - 1)
    zeros = full((bins,), 0, dtype=x.dtype, device=x.device)
    return scatter_add(zeros, 0, pos, to(inside, x.dtype)) if x.numel() else zeros


@_export()
def equal(input, other) -> bool:  # noqa: A002 - torch's names
    """Whether the two tensors have the same shape and the same values (a Python bool; NaN
    equals nothing). Reads the values now."""
    a, b = tensor_arg("equal", input), tensor_arg("equal", other)
    common_device("equal", (a, b))
    if a.shape != b.shape:
        return False
    return a.numel() == 0 or bool((a == b).all())


@_export()
def masked_scatter(input, mask, source) -> Tensor:  # noqa: A002 - torch's name
    """A copy of `input` with the positions where the bool `mask` is True (the two broadcast)
    filled, in row-major order, from the leading elements of `source`. The mask is read now;
    gradients reach the used source elements and input's kept positions."""
    op = "masked_scatter"
    x = tensor_arg(op, input)
    m = as_tensor(mask, x)
    if not isinstance(m, Tensor):
        m = Tensor.from_dispatch(m)
    if m.dtype is not dt.bool_:
        raise DTypeError(f"{op}: expected a bool mask, got {m.dtype.name} of shape {m.shape}")
    src = tensor_arg(op, source)
    common_device(op, (x, m, src))
    if src.dtype is not x.dtype:
        raise DTypeError(f"{op}: source must have the input's dtype {x.dtype.name}, got "
                         f"{src.dtype.name}")
    shape = sh.broadcast(op, x.shape, m.shape)
    picks = np.broadcast_to(m.numpy(), shape).reshape(-1)
    k = int(picks.sum())
    if k > src.numel():
        raise ShapeError(f"{op}: the mask selects {k} elements but source {src.shape} holds "
                         f"only {src.numel()}")
    x = expand(x, shape) if x.shape != shape else x
    if k == 0:
        return x
    slot = np.maximum(np.cumsum(picks) - 1, 0).astype(np.int64)
    filled = index_select(src.reshape(-1), 0, as_tensor(slot, x)).reshape(shape)
    return where(m, filled, x)


# ---------------------------------------------------------------------- distances, elementwise
@_export(method=False)
def cdist(x1, x2, p: float = 2.0, compute_mode=None) -> Tensor:
    """The p-norm distance between each row of `x1` (..., P, M) and each row of `x2`
    (..., R, M), shape (..., P, R) (batch dims broadcast). Lazy, O(P * R * M) memory; the
    gradient at zero distance is 0, as torch's."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, cdist, x1, x2, p, compute_mode)
    a, b = tensor_arg("cdist", x1), tensor_arg("cdist", x2)
    common_device("cdist", (a, b))
    for t in (a, b):
        if not t.dtype.is_float:
            raise DTypeError(f"cdist: only supports floating-point dtypes, got {t.dtype.name}")
        if t.ndim < 2:
            raise ShapeError(f"cdist: expected tensors of at least 2 dims, got shape {t.shape}")
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"cdist: x1 {a.shape} and x2 {b.shape} must have the same number of "
                         "columns")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise InvalidArgumentError(f"cdist: p must be non-negative, got {p}")
    diff = (a.unsqueeze(-2) - b.unsqueeze(-3)).abs()             # (..., P, R, M)
    if p == 0:
        return to(diff != 0, diff.dtype).sum(-1)
    if p == 1:
        return diff.sum(-1)
    if math.isinf(p):
        return diff.amax(-1)
    total = (diff * diff).sum(-1) if p == 2 else (diff ** p).sum(-1)
    zero = total == 0
    safe = where(zero, 1.0, total)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1.0 / p))


@_export()
def heaviside(input, values) -> Tensor:  # noqa: A002 - torch's name
    """The Heaviside step: 0 where input < 0, `values` where it is 0, 1 where > 0 (NaN gives
    0, as torch's)."""
    x = tensor_arg("heaviside", input)
    v = _value_arg("heaviside", values, x)
    if v.dtype is not x.dtype:
        raise DTypeError(f"heaviside: input ({x.dtype.name}) and values ({v.dtype.name}) "
                         "must have the same dtype")
    shape = sh.broadcast("heaviside", x.shape, v.shape)
    step = to(x > 0, x.dtype)
    out = where(x == 0, v, step)
    return expand(out, shape) if out.shape != shape else out


@_export()
@_float_fn
def sinc(x):
    """The normalized sinc `sin(pi x) / (pi x)`, 1 at 0."""
    zero = x == 0
    px = where(zero, 1.0, x * math.pi)
    return where(zero, 1.0, px.sin() / px)

