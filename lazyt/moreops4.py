"""More of torch's names as composites: scatters into a slice, a selected index or a diagonal
(`select_scatter`, `slice_scatter`, `diagonal_scatter`), integer `gcd` and `lcm`, `remainder`,
`fmin`/`fmax` (NaN-ignoring), `signbit`, `hsplit`/`vsplit`/`dsplit`, `row_stack`, the
function forms of `narrow`, `narrow_copy` and `clone`, and the statistics `mode`, `gradient`
and `histogram`. Every backend runs them; the scatters
are a `where` over a mask made on the host from sizes alone, so autodiff sends each output
element's gradient to the one tensor it came from.
"""
from __future__ import annotations

import math
import numbers
from collections import namedtuple

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import tensor as _tensor
from .dispatch import DispatchTensor, common_device
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import (ValuesIndices, cat, floating, gather, index_select, maximum, minimum,
                         to, where)
from .layout import movedim
from .mathops import fmod, isnan, promoted, tensor_arg
from .moreops import exporter, tensor_split, vstack
from .moreops2 import searchsorted
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

# results by position and by torch's field names
_Histogram = namedtuple("histogram", "hist bin_edges")


def _host(values, like: Tensor, dtype=np.int64) -> Tensor:
    return _tensor(np.asarray(values, dtype=dtype), device=like.device)


def _src(op: str, input, src) -> tuple:  # noqa: A002 - torch's name
    x, s = tensor_arg(op, input), tensor_arg(op, src)
    common_device(op, (x, s))
    if s.dtype is not x.dtype:
        raise DTypeError(f"{op}: src has dtype {s.dtype.name}, input {x.dtype.name}; "
                         f"they must be the same")
    return x, s


# --------------------------------------------------------------------------- views by name
@_export(method=False)
def narrow(input, dim: int, start: int, length: int) -> Tensor:  # noqa: A002 - torch's name
    """`input.narrow(dim, start, length)`: `length` elements of `dim` from `start`."""
    return tensor_arg("narrow", input).narrow(dim, int(start), int(length))


@_export()
def narrow_copy(input, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """`narrow` (lazyt tensors are values, so the copy and the view read the same)."""
    return tensor_arg("narrow_copy", input).narrow(dim, int(start), int(length))


@_export(method=False)
def clone(input, *, memory_format=None) -> Tensor:  # noqa: A002 - torch's name
    """`input.clone()`."""
    return tensor_arg("clone", input).clone()


# --------------------------------------------------------------------------- scatters
@_export()
def select_scatter(input, src, dim: int, index: int) -> Tensor:  # noqa: A002 - torch's
    """`input` with `input.select(dim, index)` replaced by `src` (shaped as that slice)."""
    x, s = _src("select_scatter", input, src)
    d = sh.normalize_dim("select_scatter", dim, x.ndim)
    n = x.shape[d]
    i = int(index)
    if not -n <= i < n:
        raise IndexOutOfRangeError(f"select_scatter: index {i} is out of range for dim {d} "
                                   f"of size {n}")
    i %= n
    want = x.shape[:d] + x.shape[d + 1:]
    if tuple(s.shape) != tuple(want):
        raise ShapeError(f"select_scatter: src has shape {tuple(s.shape)}; the slice of "
                         f"{tuple(x.shape)} at dim {d} has shape {tuple(want)}")
    mask = np.zeros((n,) + (1,) * (x.ndim - d - 1), bool)
    mask[i] = True
    return where(_host(mask, x, bool), s.unsqueeze(d), x)


@_export()
def slice_scatter(input, src, dim: int = 0, start=None, end=None,  # noqa: A002 - torch's
                  step: int = 1) -> Tensor:
    """`input` with `input[..., start:end:step, ...]` (at `dim`) replaced by `src`."""
    x, s = _src("slice_scatter", input, src)
    d = sh.normalize_dim("slice_scatter", dim, x.ndim)
    if int(step) <= 0:
        raise InvalidArgumentError(f"slice_scatter: step must be positive, got {step}")
    n = x.shape[d]
    picked = range(n)[slice(start, end, int(step))]
    want = x.shape[:d] + (len(picked),) + x.shape[d + 1:]
    if tuple(s.shape) != tuple(want):
        raise ShapeError(f"slice_scatter: src has shape {tuple(s.shape)}; the slice "
                         f"[{start}:{end}:{step}] of {tuple(x.shape)} at dim {d} has shape "
                         f"{tuple(want)}")
    if not len(picked):
        return x.clone()
    ids = np.zeros(n, np.int64)
    mask = np.zeros((n,) + (1,) * (x.ndim - d - 1), bool)
    ids[list(picked)] = np.arange(len(picked))
    mask[list(picked)] = True
    return where(_host(mask, x, bool), index_select(s, d, _host(ids, x)), x)


@_export()
def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0,  # noqa: A002 - torch's
                     dim2: int = 1) -> Tensor:
    """`input` with `input.diagonal(offset, dim1, dim2)` replaced by `src` (whose last dim
    runs along the diagonal, as `diagonal` returns it)."""
    x, s = _src("diagonal_scatter", input, src)
    d1 = sh.normalize_dim("diagonal_scatter", dim1, x.ndim)
    d2 = sh.normalize_dim("diagonal_scatter", dim2, x.ndim)
    if d1 == d2:
        raise InvalidArgumentError(f"diagonal_scatter: dim1 and dim2 are both {d1}")
    n1, n2 = x.shape[d1], x.shape[d2]
    k = int(offset)
    rows = np.arange(n1)[:, None]
    cols = np.arange(n2)[None, :]
    on = (cols - rows) == k
    length = int(on.sum())
    rest = tuple(x.shape[i] for i in range(x.ndim) if i not in (d1, d2))
    if tuple(s.shape) != rest + (length,):
        raise ShapeError(f"diagonal_scatter: src has shape {tuple(s.shape)}; the diagonal "
                         f"(offset {k}, dims {d1}, {d2}) of {tuple(x.shape)} has shape "
                         f"{rest + (length,)}")
    if not length:
        return x.clone()
    moved = movedim(x, (d1, d2), (-2, -1))
    ids = np.where(on, np.minimum(rows, cols), 0).reshape(-1)
    g = index_select(s, -1, _host(ids, x)).reshape(*rest, n1, n2)
    return movedim(where(_host(on, x, bool), g, moved), (-2, -1), (d1, d2))


# --------------------------------------------------------------------------- integers
#: Euclid's steps that finish every pair of the dtype's range (consecutive Fibonacci
#: numbers are the slowest pairs: F(k+2) > max needs k steps).
def _euclid_steps(d: dt.DType) -> int:
    top = np.iinfo(d.np).max
    a, b, k = 1, 1, 0
    while b <= top:
        a, b, k = b, a + b, k + 1
    return k + 1


def _int_pair(op: str, input, other) -> tuple:  # noqa: A002 - torch's name
    a = tensor_arg(op, input)
    d = promoted(op, a, other)
    if not d.is_int:
        raise DTypeError(f"{op}: integer tensors expected, got {d.name}")
    b = to(tensor_arg(op, other), d) if isinstance(other, DispatchTensor) else \
        _tensor(np.asarray(other, d.np), device=a.device)
    return to(a, d), b


@_export()
def gcd(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The greatest common divisor of integer tensors (non-negative; gcd(0, 0) = 0), by
    Euclid's algorithm run for as many steps as the dtype's worst pair needs."""
    a, b = _int_pair("gcd", input, other)
    a, b = a.abs(), b.abs()
    for _ in range(_euclid_steps(a.dtype)):
        nz = b != 0
        a, b = where(nz, b, a), where(nz, fmod(a, where(nz, b, 1)), b)
    return a


@_export()
def lcm(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The least common multiple of integer tensors, `|a / gcd(a, b) * b|` (0 when either
    is 0)."""
    a, b = _int_pair("lcm", input, other)
    g = gcd(a, b)
    zero = g == 0
    return where(zero, 0, (a // where(zero, 1, g) * b).abs())


@_export()
def remainder(input, other) -> Tensor:  # noqa: A002 - torch's names
    """Python's `%`: the remainder with the divisor's sign (`fmod` keeps the dividend's);
    `input` may be a number when `other` is a tensor."""
    if isinstance(input, DispatchTensor):
        return input % other
    if isinstance(input, numbers.Number) and isinstance(other, DispatchTensor):
        return other.__rmod__(input)
    raise DTypeError(f"remainder: a tensor expected, got {type(input).__name__} and "
                     f"{type(other).__name__}")


# --------------------------------------------------------------------------- floats
def _nan_pick(op: str, pick, input, other) -> Tensor:  # noqa: A002 - torch's names
    a = tensor_arg(op, input)
    b = tensor_arg(op, other) if isinstance(other, DispatchTensor) else other
    m = pick(a, b)
    if not m.dtype.is_float:
        return m
    b = to(b, m.dtype) if isinstance(b, DispatchTensor) else \
        _tensor(np.asarray(b, m.dtype.np), device=a.device)
    a = to(a, m.dtype)
    return where(isnan(a), b, where(isnan(b), a, m))


@_export()
def fmin(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`minimum` that ignores a NaN: NaN only where both are NaN."""
    return _nan_pick("fmin", minimum, input, other)


@_export()
def fmax(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`maximum` that ignores a NaN: NaN only where both are NaN."""
    return _nan_pick("fmax", maximum, input, other)


@_export()
def signbit(input) -> Tensor:  # noqa: A002 - torch's name
    """True where the sign bit is set: negative numbers and -0.0 (a NaN counts as positive:
    lazyt has no bit view to read its sign bit)."""
    x = tensor_arg("signbit", input)
    if not x.dtype.is_float:
        return x < 0
    # copysign carries the sign bit of -0.0 (1/x is -inf there); a NaN counts as positive
    return (x < 0) | ((x == 0) & ((1.0 / x) < 0))


# --------------------------------------------------------------------------- splits
def _split_dim(op: str, x: Tensor, need: int, dim: int, indices_or_sections):
    if x.ndim < need:
        raise ShapeError(f"{op}: needs a tensor of at least {need} dims, got {x.ndim}")
    if isinstance(indices_or_sections, numbers.Integral) and \
            x.shape[dim] % int(indices_or_sections):
        raise ShapeError(f"{op}: dim {dim} of size {x.shape[dim]} does not split into "
                         f"{indices_or_sections} equal parts")
    return tensor_split(x, indices_or_sections, dim)


@_export()
def hsplit(input, indices_or_sections) -> tuple:  # noqa: A002 - torch's name
    """Split along dim 1 (dim 0 of a 1-D tensor) into equal parts or at indices."""
    x = tensor_arg("hsplit", input)
    return _split_dim("hsplit", x, 1, 0 if x.ndim == 1 else 1, indices_or_sections)


@_export()
def vsplit(input, indices_or_sections) -> tuple:  # noqa: A002 - torch's name
    """Split along dim 0 of a tensor of at least 2 dims."""
    return _split_dim("vsplit", tensor_arg("vsplit", input), 2, 0, indices_or_sections)


@_export()
def dsplit(input, indices_or_sections) -> tuple:  # noqa: A002 - torch's name
    """Split along dim 2 of a tensor of at least 3 dims."""
    return _split_dim("dsplit", tensor_arg("dsplit", input), 3, 2, indices_or_sections)


@_export(method=False)
def row_stack(tensors) -> Tensor:
    """`vstack`."""
    return vstack(tensors)


# --------------------------------------------------------------------------- statistics
@_export()
def mode(input, dim: int = -1, keepdim: bool = False):  # noqa: A002 - torch's names
    """The most frequent value along `dim` (the smallest of those tied) and the index of its
    last occurrence, as torch. Counts come from comparing every pair along `dim`, so a row of
    n elements costs n * n comparisons. NaN rows follow torch's CPU kernel (see `_mode_nan`)."""
    x = tensor_arg("mode", input)
    if x.ndim == 0:
        return ValuesIndices(x, x.new_zeros(()).to(dt.int64))
    d = sh.normalize_dim("mode", dim, x.ndim)
    if x.shape[d] == 0:
        raise ShapeError(f"mode: dim {d} of shape {tuple(x.shape)} is empty")
    m = movedim(x, d, -1)                                        # [..., n]
    n = m.shape[-1]
    pos = _tensor(np.arange(n), device=x.device)
    same = m.unsqueeze(-1) == m.unsqueeze(-2)                    # [..., n, n]
    if m.dtype.is_float:
        value, index = _mode_nan(m, same, pos)
        value = gather(m, -1, index)        # the gradient goes to that index, as torch's
    else:
        counts = same.to(dt.int64).sum(-1)
        best = counts.amax(-1, keepdim=True)
        value = where(counts == best, m, _top_value(m.dtype)).amin(-1, keepdim=True)
        index = where(m == value, pos, -1).amax(-1, keepdim=True)
    if keepdim:
        return ValuesIndices(movedim(value, -1, d), movedim(index, -1, d))
    return ValuesIndices(value[..., 0], index[..., 0])


def _mode_nan(m: Tensor, same: Tensor, pos: Tensor) -> tuple:
    """mode of float rows m [..., n] (kept dims), equal to torch's CPU kernel for rows of up to
    16 elements: it insertion-sorts (value, index) pairs with `<`, then takes the first longest
    run of equal neighbours. A NaN compares false, so it stays where it is and splits the row:
    a number joins the sorted segment after the last NaN before it, unless it is below every
    number before it and the row starts with a number (then it goes to the front). Each
    element's segment key (0 front, 2k after the k-th NaN, 2k+1 for the (k+1)-th NaN itself)
    orders the runs; a NaN is a run of one. Without NaN this is the smallest most frequent
    value and its last index. (Longer rows with NaN: torch's introsort order is its own.)"""
    n = m.shape[-1]
    nan = isnan(m)
    before = _tensor(np.tri(n, k=-1, dtype=bool), device=m.device)          # [i, j]: j < i
    nans_before = (nan.unsqueeze(-2) & before).to(dt.int64).sum(-1)
    below = (m.unsqueeze(-1) < m.unsqueeze(-2)) | nan.unsqueeze(-2)         # x_i < x_j or NaN
    front = ~(before & ~below).any(-1) & ~nan[..., :1]
    key = where(nan, 2 * nans_before + 1, where(front, 0, 2 * nans_before))
    counts = (same & (key.unsqueeze(-1) == key.unsqueeze(-2))).to(dt.int64).sum(-1)
    counts = where(nan, 1, counts)
    tied = counts == counts.amax(-1, keepdim=True)
    run = tied & (key == where(tied, key, 2 * n + 2).amin(-1, keepdim=True))
    nan_run = (run & nan).any(-1, keepdim=True)
    value = where(nan_run, math.nan, where(run & ~nan, m, math.inf).amin(-1, keepdim=True))
    index = where(run & ((m == value) | nan_run), pos, -1).amax(-1, keepdim=True)
    return value, index


def _top_value(d: dt.DType):
    if d.is_float:
        return math.inf
    if d is dt.bool_:
        return True
    return int(np.iinfo(d.np).max)


@_export(method=False)
def gradient(input, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002
    """torch.gradient: the derivative estimated by second-order central differences inside
    and first- or second-order (`edge_order`) one-sided differences at the ends, per dim of
    `dim` (all when None). `spacing` is one number, one number per dim, or one coordinate
    tensor per dim (unevenly spaced samples), as numpy.gradient."""
    x = floating(tensor_arg("gradient", input))
    dims = list(range(x.ndim)) if dim is None else \
        [dim] if isinstance(dim, numbers.Integral) else list(dim)
    dims = [sh.normalize_dim("gradient", d, x.ndim) for d in dims]
    if edge_order not in (1, 2):
        raise InvalidArgumentError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if isinstance(spacing, (numbers.Number, DispatchTensor)) and not (
            isinstance(spacing, DispatchTensor) and spacing.ndim == 1):
        spacings = [spacing] * len(dims)
    else:
        spacings = list(spacing)
        if len(spacings) != len(dims):
            raise InvalidArgumentError(f"gradient: {len(spacings)} spacings for "
                                       f"{len(dims)} dims")
    return tuple(_gradient_1d(x, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_1d(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    n = x.shape[d]
    if n < edge_order + 1:
        raise ShapeError(f"gradient: dim {d} has {n} samples; edge_order={edge_order} needs "
                         f"at least {edge_order + 1}")
    f = movedim(x, d, -1)

    def at(i, j=None):
        return f[..., i:j] if j is not None else f[..., i:i + 1]

    if isinstance(h, DispatchTensor) and h.ndim == 1:
        c = to(tensor_arg("gradient", h), x.dtype)
        if c.shape[0] != n:
            raise ShapeError(f"gradient: the coordinates of dim {d} have {c.shape[0]} "
                             f"entries for {n} samples")
        dx = c[1:] - c[:-1]                                             # [n - 1]
        hl, hr = dx[:-1], dx[1:]
        inner = (hl * hl * at(2, n) - hr * hr * at(0, n - 2) + (hr * hr - hl * hl)
                 * at(1, n - 1)) / (hl * hr * (hl + hr))
        if edge_order == 1:
            first = (at(1) - at(0)) / dx[0:1]
            last = (at(n - 1) - at(n - 2)) / dx[n - 2:n - 1]
        else:
            a, b = dx[0:1], dx[1:2]
            first = (-(2 * a + b) / (a * (a + b)) * at(0) + (a + b) / (a * b) * at(1)
                     - a / (b * (a + b)) * at(2))
            a, b = dx[n - 3:n - 2], dx[n - 2:n - 1]
            last = (b / (a * (a + b)) * at(n - 3) - (a + b) / (a * b) * at(n - 2)
                    + (a + 2 * b) / (b * (a + b)) * at(n - 1))
    else:
        h = float(h.item()) if isinstance(h, DispatchTensor) else float(h)
        inner = (at(2, n) - at(0, n - 2)) / (2 * h) if n > 2 else None
        if edge_order == 1:
            first = (at(1) - at(0)) / h
            last = (at(n - 1) - at(n - 2)) / h
        else:
            first = (-1.5 * at(0) + 2 * at(1) - 0.5 * at(2)) / h
            last = (0.5 * at(n - 3) - 2 * at(n - 2) + 1.5 * at(n - 1)) / h
    parts = [first] + ([inner] if inner is not None and n > 2 else []) + [last]
    return movedim(cat(parts, -1), -1, d)


@_export()
def histogram(input, bins=100, *, range=None, weight=None,  # noqa: A002 - torch's names
              density: bool = False):
    """torch.histogram: counts (or summed `weight`s) of the elements in each bin, and the
    bins' edges. `bins` is a count of equal bins over `range` (the data's min and max when
    None, widened by 0.5 each way when they are equal) or a 1-D tensor of increasing edges.
    The last bin includes its right edge; elements outside are left out. Lazy: the range
    comes from reductions, not from reading the values."""
    x = tensor_arg("histogram", input)
    if not x.dtype.is_float:
        raise DTypeError(f"histogram: expected a floating-point input, got {x.dtype.name}")
    flat = x.reshape(-1)
    if isinstance(bins, DispatchTensor):
        edges = to(tensor_arg("histogram", bins), x.dtype)
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise ShapeError(f"histogram: bins must be a 1-D tensor of at least 2 edges, got "
                             f"shape {tuple(edges.shape)}")
        nb = edges.shape[0] - 1
    else:
        nb = int(bins)
        if nb <= 0:
            raise InvalidArgumentError(f"histogram: bins must be positive, got {bins}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
            if not lo <= hi:
                raise InvalidArgumentError(f"histogram: range {tuple(range)} has min > max")
            lo = _tensor(np.asarray(lo, x.dtype.np), device=x.device)
            hi = _tensor(np.asarray(hi, x.dtype.np), device=x.device)
        else:
            lo, hi = flat.amin(), flat.amax()
        same = lo == hi
        lo, hi = where(same, lo - 0.5, lo), where(same, hi + 0.5, hi)
        # torch's linspace: from the start for the first half, from the end for the rest
        i = _tensor(np.arange(nb + 1), device=x.device).to(x.dtype)
        step = (hi - lo) / nb
        edges = where(i < (nb + 1) // 2, lo + i * step, hi - (nb - i) * step)
    ids = searchsorted(edges, flat, right=True) - 1
    ids = where(flat == edges[nb:], nb - 1, ids)                 # the last edge's own bin
    inside = (ids >= 0) & (ids < nb) & (flat >= edges[:1]) & (flat <= edges[nb:])
    w = flat.new_ones(tuple(flat.shape)) if weight is None else \
        to(tensor_arg("histogram", weight), x.dtype).reshape(-1)
    if tuple(w.shape) != tuple(flat.shape):
        raise ShapeError(f"histogram: weight has {w.shape[0]} elements for {flat.shape[0]}")
    hist = x.new_zeros((nb,)).index_add(0, where(inside, ids, 0), where(inside, w, 0.0))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return _Histogram(hist, edges)
