"""`lazyt.linalg`: torch.linalg's determinant, inverse, solve, factorizations (LU, QR,
Cholesky), triangular solves and norms as composites.

The factorizations are written with lazyt's own ops, one step per column over batches of
matrices: Gaussian elimination with partial pivoting (argmax picks each pivot row as
LAPACK does, `take_along_dim` swaps it in), Householder reflections, and Cholesky's and
substitution's column and row updates. So every backend runs them, `lazyt.compile` captures
them, and autodiff differentiates them through their steps. n steps of a few ops each suit
the small and medium matrices models use; no LAPACK is called.

A singular matrix is not checked (that would read its values): `det` gives 0, `inv` and
`solve` give inf or NaN, as a division by a zero pivot does.
"""
from __future__ import annotations

import math
import numbers
from collections import namedtuple

from . import dtype as dt
from .creation import arange
from .dispatch import common_device
from .errors import InvalidArgumentError, ShapeError
from .functional import cat, floating, where
from .functional import matmul as _matmul
from .mathops import tensor_arg
from .moreops import cross as _cross
from .moreops import exporter, take_along_dim
from .moreops import norm as _vector_norm_impl
from .moreops3 import matrix_power as _matrix_power
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

# results by position and by torch's field names
_SlogdetResult = namedtuple("slogdet", "sign logabsdet")
_QRResult = namedtuple("qr", "Q R")
_LUResult = namedtuple("lu", "P L U")
_LUFactorResult = namedtuple("lu_factor", "LU pivots")


def _matrices(op: str, a, square: bool = False) -> Tensor:
    """`a` as a floating batch of matrices (float16 computed in float32)."""
    x = tensor_arg(op, a)
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices [..., n, n]" if square else "matrices [..., m, n]"
        raise ShapeError(f"{op}: expected a batch of {kind}, got shape {tuple(x.shape)}")
    x = floating(x)
    return x.to(dt.float32) if x.dtype is dt.float16 else x


def _square(op: str, a) -> Tensor:
    return _matrices(op, a, square=True)


def _pivot(a: Tensor, rows: Tensor, j: int) -> tuple:
    """Step j's row order [..., m, 1] (row j swapped with the first row at or below it of
    largest magnitude in column j, as LAPACK's getrf picks it) and that row [..., 1, 1]."""
    col = where(rows < j, -1.0, a[..., :, j:j + 1].abs())    # rows above the pivot: never
    p = col.argmax(-2, keepdim=True)
    return where(rows == j, p, where(rows == p, j, rows)), p


def _eliminate(a: Tensor, n: int, full: bool):
    """Partial-pivoting elimination on the rows of `a` ([..., n, m], m >= n): below each pivot
    (`full=False`, an LU's U in the first n columns) or above and below it (Gauss-Jordan).
    Returns the reduced matrix and the permutation's sign."""
    rows = arange(n, device=a.device).reshape(n, 1)           # [n, 1]
    sign = None
    for k in range(n):
        swap, p = _pivot(a, rows, k)
        a = take_along_dim(a, swap, -2)
        flip = where(p == k, 1.0, -1.0).to(a.dtype)
        sign = flip if sign is None else sign * flip
        pivot_row = a[..., k:k + 1, :]                          # [..., 1, m]
        pivot = pivot_row[..., :, k:k + 1]                      # [..., 1, 1]
        safe = where(pivot == 0, 1.0, pivot)
        chosen = (rows != k) if full else (rows > k)
        f = where(chosen, a[..., :, k:k + 1] / safe, 0.0)       # [..., n, 1]
        a = a - f * pivot_row
    if sign is None:                                            # 0x0 matrices: nothing to do
        return a, a.new_ones(tuple(a.shape[:-2]))
    return a, sign[..., 0, 0]


@_export(method=False)
def det(A) -> Tensor:  # noqa: N803 - torch's name
    """The determinant of each square matrix of `A` [..., n, n]."""
    x = _square("det", A)
    n = x.shape[-1]
    if n == 0:
        return x.sum((-2, -1)) + 1.0
    u, sign = _eliminate(x, n, full=False)
    return sign * u.diagonal(0, -2, -1).prod(-1)


@_export(method=False)
def slogdet(A):  # noqa: N803 - torch's name
    """`(sign, logabsdet)` of each matrix: det = sign * exp(logabsdet); sign 0 and
    logabsdet -inf for a singular one."""
    x = _square("slogdet", A)
    n = x.shape[-1]
    if n == 0:
        zero = x.sum((-2, -1))
        return _SlogdetResult(zero + 1.0, zero)
    u, sign = _eliminate(x, n, full=False)
    d = u.diagonal(0, -2, -1)
    s = sign * d.sign().prod(-1)
    return _SlogdetResult(s, d.abs().log().sum(-1))


@_export(method=False)
def logdet(A) -> Tensor:  # noqa: N803 - torch's name
    """log(det): NaN for a negative determinant, -inf for a singular matrix."""
    s, la = slogdet(A)
    return where(s < 0, math.nan, where(s == 0, -math.inf, la))


@_export(method=False)
def solve(A, B, *, left: bool = True) -> Tensor:  # noqa: N803 - torch's names
    """X with A @ X = B (`left=False`: X @ A = B). B is [..., n, k] or a vector [..., n]
    (batch dims broadcast)."""
    a = _square("solve", A)
    b = tensor_arg("solve", B)
    common_device("solve", (a, b))
    if not left:
        return solve(a.transpose(-2, -1), b.transpose(-2, -1)).transpose(-2, -1)
    n = a.shape[-1]
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    if vector:
        b = b.unsqueeze(-1)
    if b.shape[-2] != n:
        raise ShapeError(f"solve: B has {b.shape[-2]} rows for a {n}x{n} A (shapes "
                         f"{tuple(a.shape)} and {tuple(tensor_arg('solve', B).shape)})")
    b = b.to(a.dtype)
    batch = _broadcast(a.shape[:-2], b.shape[:-2], "solve")
    a = a.expand(*batch, n, n)
    b = b.expand(*batch, n, b.shape[-1])
    m, _ = _eliminate(cat([a, b], -1), n, full=True)
    x = m[..., :, n:] / m[..., :, :n].diagonal(0, -2, -1).unsqueeze(-1)
    return x[..., 0] if vector else x


def _broadcast(s1, s2, op: str) -> tuple:
    out = []
    for i in range(max(len(s1), len(s2))):
        a = s1[len(s1) - 1 - i] if i < len(s1) else 1
        b = s2[len(s2) - 1 - i] if i < len(s2) else 1
        if a != b and 1 not in (a, b):
            raise ShapeError(f"{op}: batch shapes {tuple(s1)} and {tuple(s2)} do not broadcast")
        out.append(b if a == 1 else a)                          # 1 with 0 is 0
    return tuple(reversed(out))


@_export(method=False)
def inv(A) -> Tensor:  # noqa: N803 - torch's name
    """The inverse of each square matrix of `A` [..., n, n]."""
    a = _square("inv", A)
    n = a.shape[-1]
    eye = (arange(n, device=a.device).reshape(n, 1) == arange(n, device=a.device)).to(a.dtype)
    return solve(a, eye.expand(*a.shape[:-2], n, n))


@_export(method=False)
def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *,  # noqa: A002 - torch's names
                dtype=None) -> Tensor:
    """The vector `ord`-norm over `dim` (all elements when None): inf / -inf the largest /
    smallest magnitude, 0 the count of non-zeros."""
    if isinstance(ord, str):
        raise InvalidArgumentError(f"vector_norm: ord={ord!r} must be a number")
    return _vector_norm_impl(x, ord, dim, keepdim, dtype)


@_export(method=False)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *,  # noqa: N803,A002
                dtype=None) -> Tensor:
    """The matrix norm over the two dims `dim`: "fro", or 1 / -1 (largest / smallest column
    sum of magnitudes), inf / -inf (the same over rows). The spectral and nuclear norms
    (2, -2, "nuc") need singular values, which lazyt.linalg does not compute."""
    x = tensor_arg("matrix_norm", A)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: expected at least 2 dims, got shape {tuple(x.shape)}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise InvalidArgumentError(f"matrix_norm: dim must be a pair of dims, got {dim!r}")
    r, c = (d % x.ndim for d in dim)
    if r == c:
        raise InvalidArgumentError(f"matrix_norm: dim={dim!r} names one dim twice")
    if ord == "fro":
        return _vector_norm_impl(x, 2, (r, c), keepdim, dtype)
    if ord in ("nuc", 2, -2):
        raise InvalidArgumentError(f"matrix_norm: ord={ord!r} needs singular values, which "
                                   f"lazyt.linalg does not compute; use 'fro', 1, -1, inf "
                                   f"or -inf")
    if ord not in (1, -1, math.inf, -math.inf):
        raise InvalidArgumentError(f"matrix_norm: ord={ord!r} is not a matrix norm ('fro', "
                                   f"1, -1, inf or -inf)")
    x = floating(x) if dtype is None else x.to(dtype)
    sum_dim, pick_dim = (r, c) if abs(ord) == 1 else (c, r)
    s = x.abs().sum(sum_dim, keepdim=True)
    if ord > 0 and s.shape[pick_dim] == 0:                     # torch: no columns (rows) is 0
        out = s.sum(pick_dim, keepdim=True)
    else:
        out = s.amax(pick_dim, keepdim=True) if ord > 0 else s.amin(pick_dim, keepdim=True)
    if not keepdim:
        out = out.squeeze(max(r, c)).squeeze(min(r, c))
    return out


@_export(method=False)
def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """torch.linalg.norm: a vector norm for one dim (or a 1-D input with no dim), a matrix
    norm for two dims (or a 2-D input with no dim); ord None is the 2-norm / Frobenius."""
    x = tensor_arg("norm", A)
    if dim is None:
        if ord is not None and x.ndim not in (1, 2):
            raise ShapeError(f"linalg.norm: ord={ord!r} needs a 1-D or 2-D input or dim, got "
                             f"shape {tuple(x.shape)}")
        if ord is None:
            return _vector_norm_impl(x, 2, None, keepdim, dtype)
        dim = (-2, -1) if x.ndim == 2 else -1
    if isinstance(dim, numbers.Integral) or (isinstance(dim, (tuple, list)) and len(dim) == 1):
        return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(x, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)


@_export(method=False)
def vecdot(x, y, *, dim: int = -1) -> Tensor:
    """The dot product of `x` and `y` along `dim` (broadcast in the others)."""
    a, b = tensor_arg("vecdot", x), tensor_arg("vecdot", y)
    return (a * b).sum(dim)


@_export(method=False)
def multi_dot(tensors) -> Tensor:
    """The product of a list of matrices (the first may be a vector, as may the last)."""
    ts = [tensor_arg("multi_dot", t) for t in tensors]
    if len(ts) < 2:
        raise InvalidArgumentError(f"multi_dot: needs at least 2 tensors, got {len(ts)}")
    out = ts[0]
    for t in ts[1:]:
        out = _matmul(out, t)
    return out


@_export(method=False)
def matrix_power(A, n: int) -> Tensor:  # noqa: N803 - torch's names
    """A @ A @ ... (n times); n < 0 inverts first, n == 0 is the identity."""
    a = tensor_arg("matrix_power", A)
    if int(n) < 0:
        return _matrix_power(inv(a), -int(n))
    return _matrix_power(a, int(n))


# torch's top-level names and Tensor methods for the square-matrix functions
TOP_LEVEL = {"det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inv}
for _name, _fn in TOP_LEVEL.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)


@_export(method=False)
def cholesky(A, *, upper: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """L with A = L @ L^H for each symmetric positive-definite matrix of `A` (`upper=True`:
    U = L^T), one column per step. A matrix that is not positive definite is not checked
    (that would read it): its columns from the failing pivot on are NaN."""
    a = _square("cholesky", A)
    n = a.shape[-1]
    rows = arange(n, device=a.device).reshape(n, 1)
    cols = arange(n, device=a.device)
    low = a.new_zeros(tuple(a.shape))
    for j in range(n):
        v = a[..., :, j:j + 1] - _matmul(low, low[..., j:j + 1, :].transpose(-2, -1))
        d = v[..., j:j + 1, :].sqrt()
        col = where(rows == j, d, where(rows > j, v / d, 0.0))
        low = where(cols == j, col, low)
    return low.transpose(-2, -1) if upper else low


@_export(method=False)
def solve_triangular(A, B, *, upper: bool, left: bool = True,  # noqa: N803 - torch's names
                     unitriangular: bool = False) -> Tensor:
    """X with A @ X = B (`left=False`: X @ A = B) for triangular A [..., n, n] and B
    [..., n, k], by substitution, one row per step; only A's triangle is read
    (`unitriangular`: its diagonal is taken as ones)."""
    a = _square("solve_triangular", A)
    b = tensor_arg("solve_triangular", B)
    common_device("solve_triangular", (a, b))
    if b.ndim < 2:
        raise ShapeError(f"solve_triangular: B must be a matrix [..., n, k], got shape "
                         f"{tuple(b.shape)}")
    if not left:
        return solve_triangular(a.transpose(-2, -1), b.transpose(-2, -1), upper=not upper,
                                unitriangular=unitriangular).transpose(-2, -1)
    n = a.shape[-1]
    if b.shape[-2] != n:
        raise ShapeError(f"solve_triangular: B has {b.shape[-2]} rows for a {n}x{n} A")
    b = b.to(a.dtype)
    batch = _broadcast(a.shape[:-2], b.shape[:-2], "solve_triangular")
    a = a.expand(*batch, n, n)
    b = b.expand(*batch, n, b.shape[-1])
    rows = arange(n, device=a.device).reshape(n, 1)
    cols = arange(n, device=a.device)
    a_diag = a.diagonal(0, -2, -1).unsqueeze(-1)                   # [..., n, 1]
    a = where((cols > rows) if upper else (cols < rows), a, 0.0)   # the triangle, no diagonal
    x = b.new_zeros(tuple(b.shape))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        r = b[..., i:i + 1, :] - _matmul(a[..., i:i + 1, :], x)
        if not unitriangular:
            r = r / a_diag[..., i:i + 1, :]
        x = where(rows == i, r, x)
    return x


@_export(method=False)
def cross(input, other, *, dim: int = -1) -> Tensor:  # noqa: A002 - torch's names
    """The cross product of 3-vectors along `dim` (the last by default)."""
    return _cross(input, other, dim=dim)


@_export(method=False)
def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    """The diagonals of the matrices of `A` (over the last two dims by default)."""
    return tensor_arg("diagonal", A).diagonal(offset, dim1, dim2)


@_export(method=False)
def matmul(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`lazyt.matmul`."""
    return _matmul(input, other)


@_export(method=False)
def qr(A, mode: str = "reduced"):  # noqa: N803 - torch's name
    """Q, R with A = Q @ R for each matrix of `A` [..., m, n]: Householder reflections as
    LAPACK's geqrf makes them (the same signs as torch: R's diagonal is -sign(a) * norm, and a
    column already zero below the diagonal is left as it is). `mode`: "reduced" (Q
    [..., m, k], R [..., k, n], k = min(m, n)), "complete" (Q [..., m, m], R [..., m, n]) or
    "r" (R only; Q is an empty tensor)."""
    if mode not in ("reduced", "complete", "r"):
        raise InvalidArgumentError(f"qr: mode must be 'reduced', 'complete' or 'r', got "
                                   f"{mode!r}")
    x = _matrices("qr", A)
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    rows = arange(m, device=x.device).reshape(m, 1)
    r = x
    q = (rows == arange(m, device=x.device)).to(x.dtype).expand(*x.shape[:-2], m, m)
    for j in range(k):
        col = r[..., :, j:j + 1]                                   # [..., m, 1]
        alpha = col[..., j:j + 1, :]                               # [..., 1, 1]
        below = where(rows > j, col, 0.0)
        xnorm = (below * below).sum(-2, keepdim=True).sqrt()
        keep = xnorm == 0                                          # H = I (tau = 0)
        norm = (alpha * alpha + xnorm * xnorm).sqrt()
        beta = where(alpha >= 0, -norm, norm)
        safe_beta = where(keep, 1.0, beta)
        tau = where(keep, 0.0, (beta - alpha) / safe_beta)
        denom = where(keep, 1.0, alpha - beta)
        v = where(rows == j, 1.0, where(rows > j, col / denom, 0.0))   # [..., m, 1]
        r = r - tau * v * _matmul(v.transpose(-2, -1), r)
        q = q - tau * _matmul(q, v) * v.transpose(-2, -1)
    cols_n = arange(n, device=x.device)
    r = where(cols_n >= rows, r, 0.0)                               # exact zeros below
    if mode == "complete":
        return _QRResult(q, r)
    if mode == "r":
        return _QRResult(x.new_zeros(0), r[..., :k, :])
    return _QRResult(q[..., :, :k], r[..., :k, :])


def _lu(op: str, A):  # noqa: N803 - the matrix's name
    """Partial-pivoting LU of each matrix of `A` [..., m, n] as LAPACK's getrf pivots (the
    first largest magnitude): (L's multipliers [..., m, k], U's rows [..., m, n], the row order
    [..., m, 1], the pivot row of each step [..., 1, k]), k = min(m, n)."""
    x = _matrices(op, A)
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    rows = arange(m, device=x.device).reshape(m, 1)
    cols = arange(k, device=x.device)
    a = x
    mult = x.new_zeros((*x.shape[:-2], m, k))
    order = rows.expand(*x.shape[:-2], m, 1)
    picks = []
    for j in range(k):
        swap, p = _pivot(a, rows, j)
        picks.append(p)
        a = take_along_dim(a, swap, -2)
        mult = take_along_dim(mult, swap, -2)
        order = take_along_dim(order, swap, -2)
        pivot = a[..., j:j + 1, j:j + 1]
        f = where(rows > j, a[..., :, j:j + 1] / where(pivot == 0, 1.0, pivot), 0.0)
        a = a - f * a[..., j:j + 1, :]
        mult = where(cols == j, f, mult)
    return x, mult, a, order, cat(picks, -1) if picks else None, k


@_export(method=False)
def lu(A, *, pivot: bool = True):  # noqa: N803 - torch's name
    """P, L, U with A = P @ L @ U for each matrix of `A` [..., m, n]: L unit lower triangular
    [..., m, k], U upper triangular [..., k, n], P a permutation [..., m, m] (k = min(m, n));
    the pivots are LAPACK's, so the factors are torch's."""
    if not pivot:
        raise InvalidArgumentError("lu: pivot=False is not supported (torch allows it on "
                                   "CUDA only)")
    x, mult, a, order, _, k = _lu("lu", A)
    m, n = x.shape[-2], x.shape[-1]
    rows = arange(m, device=x.device).reshape(m, 1)
    eye = (rows == arange(k, device=x.device)).to(x.dtype)
    low = mult + eye
    up = where(arange(n, device=x.device) >= arange(k, device=x.device).reshape(k, 1),
               a[..., :k, :], 0.0)
    perm = (rows == order.transpose(-2, -1)).to(x.dtype)            # P[r, i] = (r == order[i])
    return _LUResult(perm, low, up)


@_export(method=False)
def lu_factor(A, *, pivot: bool = True):  # noqa: N803 - torch's name
    """(LU, pivots) as LAPACK's getrf packs them: L's multipliers below the diagonal and U on
    and above it, and the 1-based row each step swapped in (int32 [..., k])."""
    if not pivot:
        raise InvalidArgumentError("lu_factor: pivot=False is not supported")
    x, mult, a, _, picks, k = _lu("lu_factor", A)
    m, n = x.shape[-2], x.shape[-1]
    rows = arange(m, device=x.device).reshape(m, 1)
    cols = arange(n, device=x.device)
    lower = mult if k == n else cat([mult, a.new_zeros((*a.shape[:-2], m, n - k))], -1)
    packed = where(cols >= rows, a, lower)
    if picks is None:                                           # k = 0: no steps, no pivots
        pivots = x.new_zeros((*x.shape[:-2], 0)).to(dt.int32)
    else:
        pivots = (picks[..., 0, :] + 1).to(dt.int32)
    return _LUFactorResult(packed, pivots)
