"""More of torch's names as composites: scatters into a slice, a selected index or a diagonal
(`select_scatter`, `slice_scatter`, `diagonal_scatter`), integer `gcd` and `lcm`, `remainder`,
`fmin`/`fmax` (NaN-ignoring), `signbit`, `hsplit`/`vsplit`/`dsplit`, `row_stack` and the
function forms of `narrow`, `narrow_copy` and `clone`. Every backend runs them; the scatters
are a `where` over a mask made on the host from sizes alone, so autodiff sends each output
element's gradient to the one tensor it came from.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import tensor as _tensor
from .dispatch import DispatchTensor, common_device
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import index_select, maximum, minimum, to, where
from .layout import movedim
from .mathops import fmod, isnan, promoted, tensor_arg
from .moreops import exporter, tensor_split, vstack
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)


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
