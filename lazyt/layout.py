"""torch's shape and layout ops that lazyt's primitive op set lacks (pad, flip, roll, repeat,
tile, tril/triu, diag, meshgrid, unfold, movedim, ...), its scans (cumprod, cummax, cummin,
logcumsumexp) and sorting (sort, argsort, topk), as composites of the differentiable ops:
every backend runs them and autodiff differentiates them.

Everything stays lazy except `repeat_interleave` with a tensor of repeats, whose output size
depends on the values (it reads them, as torch does to size its output). Scans take log2(n)
steps of a Hillis-Steele scan (shift by 1, 2, 4, ... and combine), so cumprod is exact for
zeros. Sorting is a bitonic network on (value, index) pairs, O(n log^2 n) compare-exchanges
ordered by value then index, so it is always stable; values are gathered from the input,
which is where their gradient flows.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Sequence

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import arange, full
from .dispatch import Dispatch, DispatchTensor, common_device
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import (ValuesIndices, as_tensor, cat, floating, gather, index_select, method,
                         shape_args, to, where)
from .mathops import install_methods, isnan, logaddexp, tensor_arg
from .ops.scan import scan_frontend
from .tensor import Tensor

__all__ = [
    "pad", "flip", "roll", "tile", "repeat_interleave", "tril", "triu", "diag", "diagonal",
    "meshgrid", "unflatten", "movedim", "moveaxis", "cumprod", "cummax", "cummin",
    "logcumsumexp", "sort", "argsort", "topk",
]


# ---------------------------------------------------------------------- shared machinery
def _dims(op: str, dims, ndim: int) -> tuple:
    """`dims` (an int or a sequence) normalized, in the given order; duplicates raise."""
    seq = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(sh.normalize_dim(op, d, ndim) for d in seq)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"{op}: dims {seq} repeat a dim of a rank-{ndim} tensor")
    return out


def _narrow(x: Tensor, d: int, start: int, stop: int) -> Tensor:
    n = x.shape[d]
    if start == 0 and stop == n:
        return x
    return Dispatch.slice(x, tuple((start, stop, 1) if i == d else (0, s, 1)
                                   for i, s in enumerate(x.shape)))


def _fill(x: Tensor, d: int, size: int, value) -> Tensor:
    """A constant block shaped like `x` except `size` along `d`."""
    shape = x.shape[:d] + (size,) + x.shape[d + 1:]
    return full(shape, value, dtype=x.dtype, device=x.device)


def _index_along(x: Tensor, d: int, index: np.ndarray) -> Tensor:
    """`x`'s slices along `d` at the (constant) positions `index`; a plain slice when they are
    a contiguous run."""
    n = len(index)
    if n and index[0] >= 0 and np.array_equal(index, np.arange(index[0], index[0] + n)):
        return _narrow(x, d, int(index[0]), int(index[0]) + n)
    return index_select(x, d, as_tensor(index.astype(np.int64), x))


def _positions(x: Tensor, d: int) -> Tensor:
    """int64 positions 0..n-1 along `d`, broadcast to `x`'s shape."""
    n = x.shape[d]
    pos = arange(n, device=x.device).reshape(tuple(n if i == d else 1 for i in range(x.ndim)))
    return pos.expand(x.shape)


# ---------------------------------------------------------------------- padding
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_source(mode: str, n: int, lo: int, hi: int) -> np.ndarray:
    """For each output position along one dim, the input position it copies (torch's maps)."""
    src = np.arange(n + lo + hi) - lo
    if mode == "replicate":
        return np.clip(src, 0, n - 1)
    if mode == "circular":  # a negative side crops first; the rest wraps over what is left
        keep = n + builtins.min(lo, 0) + builtins.min(hi, 0)
        start = -builtins.min(lo, 0)
        return start + np.mod(np.arange(n + lo + hi) - builtins.max(lo, 0), keep)
    period = 2 * (n - 1)  # reflect: mirror at both edges, the edge itself not repeated
    src = np.mod(src, period) if period else np.zeros_like(src)
    return np.where(src >= n, period - src, src)


def _check_pad(mode: str, d: int, n: int, lo: int, hi: int, shape: tuple) -> None:
    if n + lo + hi < 0:
        raise ShapeError(f"pad: padding ({lo}, {hi}) of dim {d} of shape {shape} gives a "
                         f"negative size {n + lo + hi}")
    if mode == "constant" or (lo <= 0 and hi <= 0):
        return
    if n == 0:
        raise ShapeError(f"pad: {mode} padding of dim {d} of shape {shape} needs a non-empty "
                         "dim")
    if mode == "reflect" and builtins.max(lo, hi) >= n:
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) of dim {d} must be less than the "
                         f"dim's size {n} (shape {shape})")
    if mode == "circular" and builtins.max(lo, hi) > n:
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) of dim {d} must be at most the "
                         f"dim's size {n} (shape {shape}): it would wrap more than once")


def pad(input, pad: Sequence[int], mode: str = "constant", value=None) -> Tensor:  # noqa: A002
    """torch.nn.functional.pad: `pad` holds (before, after) pairs starting from the last dim
    (`(1, 2)` pads the last dim by 1 before and 2 after, `(1, 2, 0, 3)` also dim -2 by 0 and
    3); negative amounts crop. `mode` is "constant" (with `value`, default 0), "reflect"
    (mirror without repeating the edge), "replicate" (repeat the edge) or "circular" (wrap).
    Any number of trailing dims can be padded in every mode."""
    x = tensor_arg("pad", input)
    try:
        amounts = tuple(operator.index(p) for p in pad)
    except TypeError:
        raise DTypeError(f"pad: pad must be a sequence of ints, got {pad!r}") from None
    if len(amounts) % 2 or len(amounts) // 2 > x.ndim:
        raise ShapeError(f"pad: pad must hold (before, after) pairs for at most {x.ndim} dims "
                         f"(shape {x.shape}), got {len(amounts)} values")
    if mode not in _PAD_MODES:
        raise InvalidArgumentError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got "
                                   f"{mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise InvalidArgumentError(f"pad: {mode} padding takes no value (got {value!r})")
    fill = 0 if value is None else value
    for i in range(len(amounts) // 2):
        d = x.ndim - 1 - i
        lo, hi = amounts[2 * i], amounts[2 * i + 1]
        n = x.shape[d]
        _check_pad(mode, d, n, lo, hi, x.shape)
        if lo == 0 and hi == 0:
            continue
        if mode == "constant":
            # the input positions that land inside the output, then constant blocks around them
            start, stop = builtins.max(0, -lo), builtins.min(n, n + hi)
            kept = builtins.max(0, stop - start)
            before = builtins.min(builtins.max(0, lo), n + lo + hi)
            after = n + lo + hi - kept - before
            parts = [_fill(x, d, before, fill)] if before else []
            if kept:
                parts.append(_narrow(x, d, start, stop))
            if after:
                parts.append(_fill(x, d, after, fill))
            x = cat(parts, d) if parts else _fill(x, d, 0, fill)
        else:
            x = _index_along(x, d, _pad_source(mode, n, lo, hi))
    return x


# ---------------------------------------------------------------------- reordering
@method(function=False)
def flip(input, *args, dims=None) -> Tensor:  # noqa: A002 - torch's name
    """The elements in reverse order along each of `dims` (`x.flip(0, 1)`, `x.flip((0, 1))`
    and `flip(x, dims=[0])` all work, as in torch)."""
    x = tensor_arg("flip", input)
    if args:
        if dims is not None:
            raise InvalidArgumentError("flip: dims given both by position and by name")
        dims = args[0] if len(args) == 1 else args
    if dims is None:
        raise InvalidArgumentError("flip: expected the dims to reverse")
    ds = _dims("flip", dims, x.ndim)
    if not ds:
        return x
    return x[tuple(slice(None, None, -1) if i in ds else slice(None) for i in range(x.ndim))]


@method(function=False)
def roll(input, shifts, dims=None) -> Tensor:  # noqa: A002 - torch's name
    """Shift elements by `shifts` along `dims`, wrapping around (torch.roll); with no dims,
    the flattened tensor is rolled and reshaped back."""
    x = tensor_arg("roll", input)
    if dims is None:
        if not isinstance(shifts, int):
            if len(shifts) != 1:
                raise InvalidArgumentError(f"roll: without dims, shifts must be one int, got "
                                           f"{shifts!r}")
            shifts = shifts[0]
        return roll(x.flatten(), shifts, 0).reshape(x.shape)
    ss = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    ds = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(ss) != len(ds):
        raise InvalidArgumentError(f"roll: shifts {ss} and dims {ds} must have one length")
    for s, dim in zip(ss, ds):
        d = sh.normalize_dim("roll", dim, x.ndim)
        n = x.shape[d]
        s = operator.index(s) % n if n else 0
        if s:
            x = cat([_narrow(x, d, n - s, n), _narrow(x, d, 0, n - s)], d)
    return x


@method("moveaxis", function=False)
def movedim(input, source, destination) -> Tensor:  # noqa: A002 - torch's name
    """Move the dims `source` to the positions `destination` (ints or sequences of one
    length); the other dims keep their order."""
    x = tensor_arg("movedim", input)
    src = _dims("movedim", source, x.ndim)
    dst = _dims("movedim", destination, x.ndim)
    if len(src) != len(dst):
        raise InvalidArgumentError(f"movedim: source {source} and destination {destination} "
                                   "must have one length")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(x.ndim) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    return x.permute(*order)


moveaxis = movedim


# ---------------------------------------------------------------------- repetition
@method(function=False)
def repeat(input, *sizes) -> Tensor:  # noqa: A002 - torch's name
    """Tile the tensor `sizes[i]` times along dim i (torch's Tensor.repeat); extra leading
    sizes add dims."""
    x = tensor_arg("repeat", input)
    reps = shape_args(sizes)
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: needs at least {x.ndim} sizes for shape {x.shape}, got "
                         f"{reps}")
    if builtins.any(r < 0 for r in reps):
        raise InvalidArgumentError(f"repeat: sizes must be non-negative, got {reps}")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    pairs = tuple(v for s in shape for v in (1, s))
    wide = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    return x.reshape(pairs).expand(wide).reshape(tuple(r * s for r, s in zip(reps, shape)))


@method(function=False)
def tile(input, *dims) -> Tensor:  # noqa: A002 - torch's name
    """torch.tile: `repeat` with `dims` padded with leading 1s to the tensor's rank."""
    x = tensor_arg("tile", input)
    reps = shape_args(dims)
    return repeat(x, (1,) * (x.ndim - len(reps)) + reps)


@method(function=False)
def repeat_interleave(input, repeats=None, dim=None, *,  # noqa: A002 - torch's name
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (or slice along `dim`) `repeats` times in place (torch's
    repeat_interleave); with no dim the tensor is flattened first. `repeats` is an int or a
    1-D tensor with one count per slice: its values are read, as they set the output size.
    `repeat_interleave(counts)` alone gives the indices 0, 1, ... repeated by `counts`."""
    x = tensor_arg("repeat_interleave", input)
    if repeats is None:
        return repeat_interleave(arange(x.shape[0] if x.ndim else 1, device=x.device),
                                 x.reshape(-1), 0, output_size=output_size)
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = sh.normalize_dim("repeat_interleave", dim, builtins.max(x.ndim, 1))
        if x.ndim == 0:
            x = x.reshape(1)
    n = x.shape[d]
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.full(n, int(repeats))
    else:
        counts = np.asarray(repeats.numpy() if isinstance(repeats, DispatchTensor)
                            else repeats)
        if counts.dtype.kind not in "iu" or counts.ndim > 1:
            raise DTypeError(f"repeat_interleave: repeats must be an int or a 1-D integer "
                             f"tensor, got {counts.dtype} of shape {counts.shape}")
        counts = counts.reshape(-1)
        if counts.shape[0] == 1:
            counts = np.full(n, int(counts[0]))
        elif counts.shape[0] != n:
            raise ShapeError(f"repeat_interleave: repeats has {counts.shape[0]} counts for "
                             f"dim {d} of size {n} (shape {x.shape})")
    if (counts < 0).any():
        raise InvalidArgumentError(f"repeat_interleave: repeats must be non-negative, got "
                                   f"{counts.tolist()}")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise InvalidArgumentError(f"repeat_interleave: output_size={output_size} but the "
                                   f"repeats add up to {total}")
    if counts.size and (counts == counts[0]).all():  # one count: a broadcast, no index
        r = int(counts[0])
        out = x.unsqueeze(d + 1).expand(x.shape[:d + 1] + (r,) + x.shape[d + 1:])
        return out.reshape(x.shape[:d] + (n * r,) + x.shape[d + 1:])
    return _index_along(x, d, np.repeat(np.arange(n), counts))


# ---------------------------------------------------------------------- triangles, diagonals
def _triangle(op: str, x, diagonal: int, lower: bool) -> Tensor:
    x = tensor_arg(op, x)
    if x.ndim < 2:
        raise ShapeError(f"{op}: needs a tensor of rank >= 2, got shape {x.shape}")
    r, c = x.shape[-2:]
    offset = arange(c, device=x.device).reshape(1, c) - arange(r, device=x.device).reshape(r, 1)
    keep = offset <= diagonal if lower else offset >= diagonal
    return where(keep, x, False if x.dtype is dt.bool_ else 0)


@method(function=False)
def tril(input, diagonal: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The lower triangle of the last two dims (elements with col - row <= diagonal); the
    rest is zero."""
    return _triangle("tril", input, operator.index(diagonal), True)


@method(function=False)
def triu(input, diagonal: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The upper triangle of the last two dims (elements with col - row >= diagonal)."""
    return _triangle("triu", input, operator.index(diagonal), False)


@method(function=False)
def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The diagonal of the (dim1, dim2) planes, `offset` above the main one (below when
    negative), as a new last dim (torch.diagonal)."""
    x = tensor_arg("diagonal", input)
    if x.ndim < 2:
        raise ShapeError(f"diagonal: needs a tensor of rank >= 2, got shape {x.shape}")
    d1 = sh.normalize_dim("diagonal", dim1, x.ndim)
    d2 = sh.normalize_dim("diagonal", dim2, x.ndim)
    if d1 == d2:
        raise InvalidArgumentError(f"diagonal: dim1 and dim2 must differ, got {dim1} and "
                                   f"{dim2}")
    x = movedim(x, (d1, d2), (-2, -1))
    r, c = x.shape[-2:]
    offset = operator.index(offset)
    length = builtins.max(0, builtins.min(r + builtins.min(offset, 0),
                                          c - builtins.max(offset, 0)))
    flat = x.reshape(x.shape[:-2] + (r * c,))
    if length == 0:
        return _narrow(flat, flat.ndim - 1, 0, 0)
    start = offset if offset >= 0 else -offset * c
    step = c + 1
    return flat[..., start:start + (length - 1) * step + 1:step]


_diagonal = diagonal  # diag's keyword `diagonal` hides the function there


@method(function=False)
def diag(input, diagonal: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """torch.diag: a 1-D tensor becomes a square matrix with it on the `diagonal`-th
    diagonal; a 2-D tensor gives that diagonal."""
    x = tensor_arg("diag", input)
    k = operator.index(diagonal)
    if x.ndim == 2:
        return _diagonal(x, k)
    if x.ndim != 1:
        raise ShapeError(f"diag: needs a 1-D or 2-D tensor, got shape {x.shape}")
    n = x.shape[0]
    m = n + builtins.abs(k)
    line = pad(x, (0, builtins.abs(k)))
    line = line.reshape(m, 1) if k >= 0 else line.reshape(1, m)
    pos = arange(m, device=x.device)
    on = (pos.reshape(1, m) - pos.reshape(m, 1)) == k
    return where(on, line, False if x.dtype is dt.bool_ else 0)


# ---------------------------------------------------------------------- shapes
def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids from 1-D (or 0-D) tensors: output i varies along dim i with "ij"
    indexing (torch's default), the first two dims swapped with "xy" (numpy's default).
    The outputs are broadcast views of the inputs."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise InvalidArgumentError("meshgrid: expected at least one tensor")
    if indexing not in ("ij", "xy"):
        raise InvalidArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got "
                                   f"{indexing!r}")
    ts = [tensor_arg("meshgrid", t) for t in tensors]
    common_device("meshgrid", ts)
    for t in ts:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-D or 1-D tensors, got shape {t.shape}")
    ts = [t.reshape(-1) for t in ts]
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(ts)
    for t, a in zip(ts, axes):
        shape[a] = t.shape[0]
    out = []
    for t, a in zip(ts, axes):
        view = t.reshape(tuple(shape[a] if i == a else 1 for i in range(len(ts))))
        out.append(view.expand(tuple(shape)))
    return tuple(out)


@method(function=False)
def unflatten(input, dim: int, sizes) -> Tensor:  # noqa: A002 - torch's name
    """Split dim `dim` into `sizes` (one of them may be -1), torch.unflatten."""
    x = tensor_arg("unflatten", input)
    d = sh.normalize_dim("unflatten", dim, x.ndim)
    sizes = shape_args((sizes,)) if not isinstance(sizes, int) else (sizes,)
    if not sizes:
        raise ShapeError("unflatten: sizes must be non-empty")
    try:
        part = sh.reshape((x.shape[d],), sizes)
    except ShapeError:
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to the size "
                         f"{x.shape[d]} of dim {d} (shape {x.shape})") from None
    return x.reshape(x.shape[:d] + part + x.shape[d + 1:])


@method(function=False)
def unfold(input, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """Tensor.unfold: the windows of `size` elements along `dimension`, every `step`
    elements, as a new last dim (the dim itself counts the windows)."""
    x = tensor_arg("unfold", input)
    if x.ndim == 0:
        return unfold(x.reshape(1), dimension, size, step).reshape(size)
    d = sh.normalize_dim("unfold", dimension, x.ndim)
    n = x.shape[d]
    size, step = operator.index(size), operator.index(step)
    if step <= 0:
        raise InvalidArgumentError(f"unfold: step must be positive, got {step}")
    if not 0 <= size <= n:
        raise ShapeError(f"unfold: size {size} must be in [0, {n}], the size of dim {d} of "
                         f"shape {x.shape}")
    windows = (n - size) // step + 1
    index = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    out = _index_along(x, d, index)
    out = out.reshape(x.shape[:d] + (windows, size) + x.shape[d + 1:])
    return movedim(out, d + 1, -1)


# ---------------------------------------------------------------------- scans
def _shift(t: Tensor, s: int, d: int, fill) -> Tensor:
    """`t` moved `s` places forward along `d`, `fill` in the first `s` places."""
    n = t.shape[d]
    return cat([_fill(t, d, s, fill), _narrow(t, d, 0, n - s)], d)


def _scan(x: Tensor, d: int, combine, fill) -> Tensor:
    """Hillis-Steele inclusive scan: after the step of shift s, place i holds the combination
    of (i - 2s, i]; `combine(later, earlier)` must be associative, `fill` its identity."""
    s = 1
    while s < x.shape[d]:
        x = combine(x, _shift(x, s, d, fill))
        s *= 2
    return x


@method(function=False)
def cumprod(input, dim: int, *, dtype=None) -> Tensor:  # noqa: A002 - torch's name
    """Running product along `dim`, exact where a zero appears (no logarithms). Integers and
    bools multiply in int64, `dtype=` casts first, float16 is computed in float32."""
    return scan_frontend("cumprod", lambda t, d: _scan(t, d, _times, 1),
                         tensor_arg("cumprod", input), dim, dtype)


def _times(later, earlier):
    return later * earlier


@method(function=False)
def logcumsumexp(input, dim: int) -> Tensor:  # noqa: A002 - torch's name
    """`log(cumsum(exp(x)))` along `dim` without overflow or underflow (a scan of
    logaddexp); integers are computed in the default float."""
    x = floating(tensor_arg("logcumsumexp", input))
    d = sh.normalize_dim("logcumsumexp", dim, x.ndim)
    if x.ndim == 0:
        return x
    if x.dtype is dt.float16:
        return logcumsumexp(x.to(dt.float32), d).to(dt.float16)
    return _scan(x, d, logaddexp, -math.inf)


def _cum_extreme(op: str, input, dim, largest: bool) -> ValuesIndices:
    """Running max/min and the index where it was found, torch's rules: the last index of
    equal values, NaN wins (and then the last NaN's index)."""
    x = tensor_arg(op, input)
    d = sh.normalize_dim(op, dim, x.ndim)
    if x.ndim == 0:
        return ValuesIndices(x, full((), 0, dtype=dt.int64, device=x.device))
    key = x.detach()
    if key.dtype is dt.bool_:
        key = key.to(dt.int32)
    idx = _positions(key, d)
    s = 1
    while s < x.shape[d]:
        prev_key, prev_idx = _shift(key, s, d, 0), _shift(idx, s, d, -1)
        wins = key >= prev_key if largest else key <= prev_key
        if key.dtype.is_float:
            wins = isnan(key) | (wins & ~isnan(prev_key))
        wins = wins | (prev_idx < 0)
        key, idx = where(wins, key, prev_key), where(wins, idx, prev_idx)
        s *= 2
    idx = to(idx, dt.int64)
    return ValuesIndices(gather(x, d, idx), idx)


@method(function=False)
def cummax(input, dim: int) -> ValuesIndices:  # noqa: A002 - torch's name
    """Running maximum along `dim` and its indices (the last of equal values; NaN
    propagates), as `(values, indices)`; the gradient reaches the picked elements."""
    return _cum_extreme("cummax", input, dim, True)


@method(function=False)
def cummin(input, dim: int) -> ValuesIndices:  # noqa: A002 - torch's name
    """Running minimum along `dim` and its indices, as `(values, indices)`."""
    return _cum_extreme("cummin", input, dim, False)


# ---------------------------------------------------------------------- sorting
def _before(pk, pi, qk, qi, n: int, descending: bool):
    """Whether (key, index) p comes strictly before q: by key (NaN last ascending, first
    descending, as torch), then by index; indices >= n are padding and come last."""
    if pk.dtype.is_float:
        p_nan, q_nan = isnan(pk), isnan(qk)
        if descending:
            by_key = (pk > qk) | (p_nan & ~q_nan)
        else:
            by_key = (pk < qk) | (q_nan & ~p_nan)
        tie = (pk == qk) | (p_nan & q_nan)
    else:
        by_key = pk > qk if descending else pk < qk
        tie = pk == qk
    return (pi < n) & ((qi >= n) | by_key | (tie & (pi < qi)))


def _compare_exchange(key: Tensor, idx: Tensor, j: int, k: int, n: int, descending: bool):
    """One stage of the bitonic network: positions i and i + j (bit j of i clear) swap when
    out of order, ascending where bit k of i is clear and descending elsewhere."""
    lead, size = key.shape[:-1], key.shape[-1]
    blocks = size // (2 * j)
    kk = key.reshape(lead + (blocks, 2, j))
    ii = idx.reshape(lead + (blocks, 2, j))
    ak, bk, ai, bi = kk[..., 0, :], kk[..., 1, :], ii[..., 0, :], ii[..., 1, :]
    up = as_tensor((((np.arange(blocks) * 2 * j) & k) == 0).reshape(blocks, 1), key)
    swap = where(up, _before(bk, bi, ak, ai, n, descending),
                 _before(ak, ai, bk, bi, n, descending))
    key = cat([where(swap, bk, ak).unsqueeze(-2), where(swap, ak, bk).unsqueeze(-2)], -2)
    idx = cat([where(swap, bi, ai).unsqueeze(-2), where(swap, ai, bi).unsqueeze(-2)], -2)
    return key.reshape(lead + (size,)), idx.reshape(lead + (size,))


def _order(x: Tensor, d: int, descending: bool) -> Tensor:
    """The int64 indices that sort `x` along `d`, stably (a bitonic network on
    (value, index) pairs, padded to a power of two)."""
    key = movedim(x.detach(), d, -1)
    if key.dtype is dt.bool_:
        key = key.to(dt.int32)
    n = key.shape[-1]
    if n <= 1:
        return full(x.shape, 0, dtype=dt.int64, device=x.device)
    size = 1 << (n - 1).bit_length()
    if size > n:
        key = pad(key, (0, size - n))  # the pads' keys are never read: index >= n
    idx = arange(size, device=x.device).expand(key.shape[:-1] + (size,))
    k = 2
    while k <= size:
        j = k // 2
        while j >= 1:
            key, idx = _compare_exchange(key, idx, j, k, n, descending)
            j //= 2
        k *= 2
    return movedim(_narrow(idx, idx.ndim - 1, 0, n), -1, d)


@method(function=False)
def sort(input, dim: int = -1, descending: bool = False,  # noqa: A002 - torch's name
         stable: bool = False) -> ValuesIndices:
    """The values along `dim` in order and their indices, `(values, indices)`. NaN sorts as
    the largest value; equal values keep their order (the sort is always stable). Lazy: a
    bitonic network of O(n log^2 n) compare-exchanges; gradients reach the input through the
    gathered values."""
    x = tensor_arg("sort", input)
    d = sh.normalize_dim("sort", dim, x.ndim)
    if x.ndim == 0:
        return ValuesIndices(x, full((), 0, dtype=dt.int64, device=x.device))
    idx = _order(x, d, bool(descending))
    return ValuesIndices(gather(x, d, idx), idx)


@method(function=False)
def argsort(input, dim: int = -1, descending: bool = False,  # noqa: A002 - torch's name
            stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (`sort(...).indices`)."""
    return sort(input, dim, descending, stable).indices


@method(function=False)
def topk(input, k: int, dim: int = -1, largest: bool = True,  # noqa: A002 - torch's name
         sorted: bool = True) -> ValuesIndices:  # noqa: A002 - torch's name
    """The `k` largest (or smallest) values along `dim` and their indices, largest first
    (returned sorted whatever `sorted` says; NaN counts as the largest value)."""
    x = tensor_arg("topk", input)
    d = sh.normalize_dim("topk", dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    k = operator.index(k)
    if not 0 <= k <= n:
        raise IndexOutOfRangeError(f"topk: k={k} is out of range for dim {d} of size {n} "
                                   f"(shape {x.shape})")
    if x.ndim == 0:
        return ValuesIndices(x, full((), 0, dtype=dt.int64, device=x.device))
    idx = _narrow(_order(x, d, bool(largest)), d, 0, k)
    return ValuesIndices(gather(x, d, idx), idx)


install_methods(__name__)
