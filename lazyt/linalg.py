"""`lazyt.linalg`: torch.linalg's determinant, inverse, solve, factorizations (LU, QR,
Cholesky), triangular solves, norms and spectral decompositions (eigh, svd and what builds
on them) as composites.

The factorizations are written with lazyt's own ops, one step per column over batches of
matrices: Gaussian elimination with partial pivoting (argmax picks each pivot row as
LAPACK does, `take_along_dim` swaps it in), Householder reflections, and Cholesky's and
substitution's column and row updates. So every backend runs them, `lazyt.compile` captures
them, and autodiff differentiates them through their steps. n steps of a few ops each suit
the small and medium matrices models use; no LAPACK is called.

A singular matrix is not checked (that would read its values): `det` gives 0, `inv` and
`solve` give inf or NaN, as a division by a zero pivot does.

eigh and svd are cyclic Jacobi iterations with a fixed number of sweeps, each sweep n - 1
rounds of vectorized rotations (see the section "spectral" below).
"""
from __future__ import annotations

import functools
import math
import numbers
from collections import namedtuple
from typing import NamedTuple

import numpy as np

from . import dtype as dt
from .creation import arange
from .creation import tensor as _tensor
from .dispatch import common_device
from .errors import InvalidArgumentError, LinAlgError, ShapeError
from .functional import cat, floating, where
from .functional import matmul as _matmul
from .layout import movedim
from .mathops import isnan, tensor_arg
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
    """The matrix norm over the two dims `dim`: "fro", 1 / -1 (largest / smallest column
    sum of magnitudes), inf / -inf (the same over rows), 2 / -2 (largest / smallest singular
    value) or "nuc" (their sum)."""
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
    if ord not in ("nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise InvalidArgumentError(f"matrix_norm: ord={ord!r} is not a matrix norm ('fro', "
                                   f"'nuc', 2, -2, 1, -1, inf or -inf)")
    x = floating(x) if dtype is None else x.to(dtype)
    if ord in ("nuc", 2, -2):
        return _singular_norm(x, ord, r, c, keepdim)
    sum_dim, pick_dim = (r, c) if abs(ord) == 1 else (c, r)
    s = x.abs().sum(sum_dim, keepdim=True)
    if ord > 0 and s.shape[pick_dim] == 0:                     # torch: no columns (rows) is 0
        out = s.sum(pick_dim, keepdim=True)
    else:
        out = s.amax(pick_dim, keepdim=True) if ord > 0 else s.amin(pick_dim, keepdim=True)
    if not keepdim:
        out = out.squeeze(max(r, c)).squeeze(min(r, c))
    return out


def _singular_norm(x: Tensor, ord, r: int, c: int, keepdim: bool) -> Tensor:  # noqa: A002
    """matrix_norm's 2, -2 and "nuc" from the singular values of the matrices in dims r, c."""
    s = svdvals(movedim(x, (r, c), (-2, -1)))
    if ord == -2 and s.shape[-1] == 0:
        raise ShapeError(f"matrix_norm: ord=-2 needs at least one singular value, got "
                         f"matrices of shape {(x.shape[r], x.shape[c])}")
    if ord == 2:
        out = s.amax(-1) if s.shape[-1] else s.sum(-1)         # torch: no values is 0
    else:
        out = s.amin(-1) if ord == -2 else s.sum(-1)
    out = out.to(x.dtype)
    if keepdim:
        out = out.unsqueeze(min(r, c)).unsqueeze(max(r, c))
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
    q = _batch_eye(tuple(x.shape[:-2]), m, x)
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


# ---------------------------------------------------------------------- spectral (Jacobi)
# eigh rotates pairs of rows and columns of the symmetric matrix (two-sided Jacobi); svd
# rotates pairs of columns until they are orthogonal (one-sided Jacobi, Hestenes), after a
# Householder QR that makes the columns converge in fewer sweeps (Drmac and Veselic's
# preconditioning). A sweep meets every pair once, grouped in round-robin order into n - 1
# rounds (n for odd n) of disjoint pairs; a round is about 40 ops over all pairs at once,
# O(n^2) work per matrix. The number of sweeps is fixed by size and dtype (`_sweeps`), so
# nothing is read back to decide when to stop.

_EighResult = namedtuple("eigh", "eigenvalues eigenvectors")
_SVDResult = namedtuple("svd", "U S Vh")


def _sweeps(n: int, dtype) -> int:
    """Jacobi sweeps for n indices: convergence turns quadratic after about log2(n) sweeps;
    float64 gets twice that, which strongly graded spectra (Hilbert matrices) need."""
    if n < 2:
        return 0
    lg = math.ceil(math.log2(n))
    return 2 * lg + 4 if dtype is dt.float64 else lg + 3


@functools.lru_cache(maxsize=None)
def _round_robin(n: int) -> tuple:
    """One sweep's rounds over n indices (the circle method), as numpy arrays over the
    indices: its partner (itself when it sits the round out, for odd n), the lower index of
    its pair, and its side (0.5 for the lower index, -0.5 for the upper, 0 idle)."""
    size = n + n % 2
    ring = list(range(size))
    rounds = []
    for _ in range(size - 1):
        partner, side = np.arange(n), np.zeros(n)
        for i in range(size // 2):
            p, q = sorted((ring[i], ring[size - 1 - i]))
            if q < n:
                partner[p], partner[q], side[p], side[q] = q, p, 0.5, -0.5
        rounds.append((partner, np.minimum(np.arange(n), partner), side))
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return tuple(rounds)


class _Round(NamedTuple):
    """A round's constants on the device: partner and lower index (int64 [n]), side and
    flip = -2 * side ([n], the matrix's dtype), `active` (1 / 0 for the idle index; None
    for even n) and, for eigh, `fixed` (the diagonal and the pairs' entries [n, n], set
    directly after the rotation)."""
    partner: Tensor
    lower: Tensor
    side: Tensor
    flip: Tensor
    active: Tensor | None
    fixed: Tensor | None


def _rounds(n: int, like: Tensor, fixed: bool = False) -> list:
    """`_round_robin(n)` as `_Round`s on `like`'s device (`fixed` masks for eigh)."""
    dev, np_dtype = like.device, like.dtype.np
    out = []
    for partner, lower, side in _round_robin(n):
        mask = None
        if fixed:
            mask = np.eye(n, dtype=bool)
            mask[np.arange(n), partner] = True
            mask = _tensor(mask, device=dev)
        out.append(_Round(_tensor(partner, device=dev), _tensor(lower, device=dev),
                          _tensor(side.astype(np_dtype), device=dev),
                          _tensor((-2 * side).astype(np_dtype), device=dev),
                          _tensor((side != 0).astype(np_dtype), device=dev) if n % 2 else None,
                          mask))
    return out


def _rotation(h: Tensor, g: Tensor) -> tuple:
    """(t, s, w) of the rotation that zeroes g in the symmetric [[a, g], [g, b]] with
    h = (b - a) / 2: tan, sin and 1 - cos, the last as s^2 / (1 + cos), so that an update
    `x + (s * y - w * x)` keeps the part of cos that rounding cos itself loses (else the
    vectors grow by about t^2 per rotation). g = 0 is the identity; `tiny` under the root
    keeps the gradient finite there."""
    r = (h * h + g * g + dt.finfo(h.dtype).tiny).sqrt()
    t = where(h < 0, -g, g) / (h.abs() + r)
    c = (t * t + 1.0).rsqrt()
    s = t * c
    return t, s, s * s / (c + 1.0)


def _sqrt0(q: Tensor) -> Tensor:
    """sqrt(q) for q >= 0 with a zero gradient (not NaN) at q = 0."""
    pos = q > 0
    return where(pos, where(pos, q, 1.0).sqrt(), 0.0)


def _jacobi_eigh(a: Tensor, vectors: bool) -> tuple:
    """Two-sided Jacobi on the symmetric matrices a [..., n, n] (scaled to magnitudes <= 1):
    (the diagonal [..., n], the rotations V [..., n, n] or None), a = V diag V^T. After each
    rotation the pair's diagonal gets a -+ t * g and its off-diagonal entries 0, as
    Rutishauser's formulation: the rotated values would carry rounding of size |row|."""
    n = a.shape[-1]
    rows = arange(n, device=a.device).reshape(n, 1)
    eye = (rows == arange(n, device=a.device)).to(a.dtype)
    v = eye.expand(*a.shape) if vectors else None
    rounds = _rounds(n, a, fixed=True)
    for _ in range(_sweeps(n, a.dtype)):
        for rd in rounds:
            d = a.diagonal(0, -2, -1)
            ap = a.index_select(-2, rd.partner)                     # each row's partner row
            g = ap.diagonal(0, -2, -1).index_select(-1, rd.lower)   # a[q, p], same for both
            if rd.active is not None:
                g = g * rd.active
            h = (d.index_select(-1, rd.partner) - d) * rd.side
            t, s, w = _rotation(h, g)
            s = s * rd.flip
            a = a + (ap * s.unsqueeze(-1) - a * w.unsqueeze(-1))      # J^T a
            sr, wr = s.unsqueeze(-2), w.unsqueeze(-2)
            a = a + (a.index_select(-1, rd.partner) * sr - a * wr)      # (J^T a) J
            a = where(rd.fixed, eye * (d + t * g * rd.flip).unsqueeze(-2), a)
            if vectors:
                v = v + (v.index_select(-1, rd.partner) * sr - v * wr)
    return a.diagonal(0, -2, -1), v


def _jacobi_columns(x: Tensor, vectors: bool) -> tuple:
    """One-sided Jacobi on the columns of x [..., m, n] (scaled to magnitudes <= 1): (G, V)
    with x V = G and G's columns orthogonal; V is None without `vectors`."""
    n = x.shape[-1]
    v = _batch_eye(tuple(x.shape[:-2]), n, x) if vectors else None
    rounds = _rounds(n, x)
    for _ in range(_sweeps(n, x.dtype)):
        for rd in rounds:
            xp = x.index_select(-1, rd.partner)
            nrm = (x * x).sum(-2)
            g = (x * xp).sum(-2).index_select(-1, rd.lower)
            if rd.active is not None:
                g = g * rd.active
            h = (nrm.index_select(-1, rd.partner) - nrm) * rd.side
            _, s, w = _rotation(h, g)
            sr, wr = (s * rd.flip).unsqueeze(-2), w.unsqueeze(-2)
            x = x + (xp * sr - x * wr)
            if vectors:
                v = v + (v.index_select(-1, rd.partner) * sr - v * wr)
    return x, v


def _householder(x: Tensor) -> tuple:
    """Householder reflections of x [..., m, n], m >= n, scaled to magnitudes <= 1, for the
    SVD's preconditioning (`qr` keeps its own loop: LAPACK's tau, and a column already zero
    below the diagonal left alone, which give torch's signs; here any sign does): (R
    [..., n, n], the reflections (v [..., m, 1], tau [..., 1, 1]) with x = H_0 H_1 ... [R; 0],
    H = I - tau v v^T). A column below sqrt(tiny) gets H = I (2 / |v|^2 would overflow);
    no square root of 0 reaches the gradient."""
    m, n = x.shape[-2], x.shape[-1]
    rows = arange(m, device=x.device).reshape(m, 1)
    least = math.sqrt(dt.finfo(x.dtype).tiny)
    r, steps = x, []
    for j in range(min(n, m - 1)):
        col = where(rows >= j, r[..., :, j:j + 1], 0.0)
        norm = _sqrt0((col * col).sum(-2, keepdim=True))
        alpha = r[..., j:j + 1, j:j + 1]
        v = where(rows == j, col + where(alpha >= 0, norm, -norm), col)  # v_j = alpha - beta
        vv = (v * v).sum(-2, keepdim=True)
        big = vv > least
        tau = where(big, 2.0 / where(big, vv, 1.0), 0.0)
        r = r - v * (tau * _matmul(v.transpose(-2, -1), r))
        steps.append((v, tau))
    return r[..., :n, :], steps


def _apply_reflections(steps: list, y: Tensor) -> Tensor:
    """H_0 H_1 ... y for `_householder`'s reflections."""
    for v, tau in reversed(steps):
        y = y - v * (tau * _matmul(v.transpose(-2, -1), y))
    return y


def _orthonormalize(u: Tensor) -> Tensor:
    """Q of u [..., n, n] = Q R with R's diagonal >= 0: u's columns where they are
    orthonormal, and an orthonormal completion in place of zero (or rounding-noise) columns
    that follow them."""
    r, steps = _householder(u)
    q = _apply_reflections(steps, _batch_eye((), u.shape[-1], u))
    return q * where(r.diagonal(0, -2, -1) < 0, -1.0, 1.0).unsqueeze(-2)


def _scaled(x: Tensor) -> tuple:
    """x / max|x| per matrix and that scale [..., 1, 1] (1 for a zero matrix), so squares
    and sums of squares neither overflow nor underflow."""
    scale = x.abs().amax((-2, -1), keepdim=True)
    scale = where(scale == 0, 1.0, scale)
    return x / scale, scale


def _batch_eye(batch: tuple, n: int, like: Tensor) -> Tensor:
    """Identity matrices [*batch, n, n] in `like`'s dtype and device."""
    eye = arange(n, device=like.device).reshape(n, 1) == arange(n, device=like.device)
    return eye.to(like.dtype).expand(*batch, n, n)


def _eigh(op: str, A, UPLO: str, vectors: bool) -> tuple:  # noqa: N803 - torch's names
    a = _square(op, A)
    if UPLO not in ("L", "U"):
        raise InvalidArgumentError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    n, batch = a.shape[-1], tuple(a.shape[:-2])
    if n == 0 or 0 in batch:
        return a.new_zeros((*batch, n)), _batch_eye(batch, n, a)
    rows = arange(n, device=a.device).reshape(n, 1)
    cols = arange(n, device=a.device)
    half = (cols <= rows) if UPLO == "L" else (cols >= rows)
    a = where(half, a, a.transpose(-2, -1))                     # only the named triangle
    a, scale = _scaled(a)
    d, v = _jacobi_eigh(a, vectors)
    order = d.argsort(-1)
    w = take_along_dim(d, order, -1) * scale[..., 0]
    return w, (take_along_dim(v, order.unsqueeze(-2), -1) if vectors else None)


@_export(method=False)
def eigh(A, UPLO: str = "L"):  # noqa: N803 - torch's names
    """(eigenvalues ascending [..., n], eigenvectors as columns [..., n, n]) of each
    symmetric matrix of `A`, read from its lower (UPLO="L") or upper triangle. Cyclic
    two-sided Jacobi; each eigenvector's sign is whatever the rotations give (torch's is
    LAPACK's, also arbitrary)."""
    w, v = _eigh("eigh", A, UPLO, True)
    return _EighResult(w, v)


@_export(method=False)
def eigvalsh(A, UPLO: str = "L") -> Tensor:  # noqa: N803 - torch's names
    """The eigenvalues, ascending, of each symmetric matrix of `A` (see `eigh`)."""
    return _eigh("eigvalsh", A, UPLO, False)[0]


def _svd(op: str, A, vectors: bool, full: bool) -> tuple:  # noqa: N803 - the matrix's name
    """(U, S, Vh) of each matrix of A, S descending; U and Vh None without `vectors`."""
    x = _matrices(op, A)
    batch = tuple(x.shape[:-2])
    m0, n0 = x.shape[-2], x.shape[-1]
    wide = m0 < n0
    if wide:                                                    # svd(A^T), swapped back
        x = x.transpose(-2, -1)
    m, n = x.shape[-2], x.shape[-1]
    if n == 0 or 0 in batch:
        s = x.new_zeros((*batch, n))
        if not vectors:
            return None, s, None
        u = _batch_eye(batch, m, x)[..., :, :m if full else n]
        vh = x.new_zeros((*batch, n, n))
        return (vh, s, u.transpose(-2, -1)) if wide else (u, s, vh)
    x, scale = _scaled(x)
    r, steps = _householder(x)
    g, v = _jacobi_columns(r.transpose(-2, -1), vectors)      # R^T V = G
    s = _sqrt0((g * g).sum(-2))
    order = s.argsort(-1, descending=True)
    s = take_along_dim(s, order, -1)
    if not vectors:
        return None, s * scale[..., 0], None
    cols = order.unsqueeze(-2)
    g, v = take_along_dim(g, cols, -1), take_along_dim(v, cols, -1)
    # R = V S Ux^T with Ux = G / S, so A = Q R = (Q [V; 0]) S Ux^T
    ux = _orthonormalize(g / where(s > 0, s, 1.0).unsqueeze(-2))
    if m > n:
        zeros = x.new_zeros((*batch, m - n, n))
        v = cat([v, zeros], -2)
        if full:
            rest = cat([zeros.transpose(-2, -1), _batch_eye(batch, m - n, x)], -2)
            v = cat([v, rest], -1)
    u = _apply_reflections(steps, v)
    s = s * scale[..., 0]
    vh = ux.transpose(-2, -1)
    return (vh.transpose(-2, -1), s, u.transpose(-2, -1)) if wide else (u, s, vh)


@_export(method=False)
def svd(A, full_matrices: bool = True):  # noqa: N803 - torch's names
    """(U, S, Vh) with A = U @ diag(S) @ Vh for each matrix of `A` [..., m, n], S descending
    [..., k] (k = min(m, n)); U [..., m, m] and Vh [..., n, n], or [..., m, k] and [..., k, n]
    with `full_matrices=False`. One-sided Jacobi after a Householder QR; the singular
    vectors' signs are whatever the rotations give (torch's, LAPACK's, are arbitrary too)."""
    u, s, vh = _svd("svd", A, True, bool(full_matrices))
    return _SVDResult(u, s, vh)


@_export(method=False)
def svdvals(A) -> Tensor:  # noqa: N803 - torch's name
    """The singular values, descending, of each matrix of `A` [..., m, n] (see `svd`)."""
    return _svd("svdvals", A, False, False)[1]


def _tolerance(op: str, x: Tensor, largest: Tensor, atol, rtol) -> Tensor:
    """torch's cutoff max(atol, rtol * largest) [..., 1]; rtol defaults to
    eps * max(m, n), or to 0 where atol > 0 is given."""
    default = dt.finfo(x.dtype).eps * max(x.shape[-2], x.shape[-1])

    def arg(value) -> Tensor:                                    # a number or a tensor [...]
        t = value if isinstance(value, Tensor) else _tensor(float(value), device=x.device)
        return floating(tensor_arg(op, t)).to(x.dtype).unsqueeze(-1)

    if atol is None:
        return largest * (default if rtol is None else arg(rtol))
    a = arg(atol)
    r = where(a > 0, 0.0, default) if rtol is None else arg(rtol)
    return where(a > r * largest, a, r * largest)


@_export(method=False)
def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The number of singular values (|eigenvalues| with `hermitian`) above torch's tolerance
    max(atol, rtol * the largest), int64; rtol defaults to eps * max(m, n) when neither is
    given (and to 0 when only atol > 0 is)."""
    x = _matrices("matrix_rank", A)
    s = (eigvalsh(x).abs() if hermitian else svdvals(x))
    if s.shape[-1] == 0:
        return s.sum(-1).to(dt.int64)
    tol = _tolerance("matrix_rank", x, s.amax(-1, keepdim=True), atol, rtol)
    return (s > tol).to(dt.int64).sum(-1)


@_export(method=False)
def pinv(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The Moore-Penrose pseudo-inverse of each matrix of `A` [..., m, n] -> [..., n, m]:
    V diag(1/S) U^T over the singular values above matrix_rank's tolerance (eigh with
    `hermitian`, reading the lower triangle)."""
    x = _matrices("pinv", A)
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        return x.new_zeros((*x.shape[:-2], x.shape[-1], x.shape[-2]))
    if hermitian:
        w, v = eigh(x)
        tol = _tolerance("pinv", x, w.abs().amax(-1, keepdim=True), atol, rtol)
        keep = w.abs() > tol
        inv_w = where(keep, 1.0 / where(keep, w, 1.0), 0.0)
        return _matmul(v * inv_w.unsqueeze(-2), v.transpose(-2, -1))
    u, s, vh = svd(x, full_matrices=False)
    tol = _tolerance("pinv", x, s[..., :1], atol, rtol)
    keep = s > tol
    inv_s = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    return _matmul(vh.transpose(-2, -1) * inv_s.unsqueeze(-2), u.transpose(-2, -1))


@_export(method=False)
def cond(A, p=None) -> Tensor:  # noqa: N803 - torch's names
    """The condition number of each matrix of `A` in the norm `p`: for None / 2 / -2 the
    ratio of its extreme singular values (any shape), else norm(A) * norm(inv(A)) (square
    matrices; inf for a singular one, as torch)."""
    x = _matrices("cond", A)
    if p in (None, 2, -2):
        s = svdvals(x)
        if s.shape[-1] == 0:
            return s.sum(-1)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise InvalidArgumentError(f"cond: p={p!r} is not a matrix norm (None, 2, -2, "
                                   f"'fro', 'nuc', 1, -1, inf or -inf)")
    if x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"cond(p={p!r}): A must be square matrices [..., n, n], got shape "
                         f"{tuple(x.shape)}")
    if x.shape[-1] == 0:
        return x.sum((-2, -1))
    out = matrix_norm(x, p) * matrix_norm(inv(x), p)
    return where(isnan(out), math.inf, out)


# ---------------------------------------------------------------------- LU solves, exp, _ex
def _pivot_order(pivots: Tensor, m: int) -> Tensor:
    """The row order [..., m] LAPACK's 1-based sequential swaps `pivots` [..., k] make:
    row i of L @ U is row order[i] of A."""
    idx = arange(m, device=pivots.device)
    order = idx.expand(*pivots.shape[:-1], m)
    for j in range(pivots.shape[-1]):
        p = (pivots[..., j:j + 1] - 1).to(dt.int64)                   # [..., 1]
        at_j = order[..., j:j + 1]
        at_p = take_along_dim(order, p, -1)
        order = where(idx == j, at_p, where(idx == p, at_j, order))
    return order


def _lu_args(op: str, LU, pivots) -> tuple:  # noqa: N803 - torch's name
    a = _matrices(op, LU)
    p = tensor_arg(op, pivots)
    if p.dtype.is_float or p.dtype is dt.bool_:
        raise InvalidArgumentError(f"{op}: pivots must be an integer tensor, got "
                                   f"{p.dtype.name}")
    k = min(a.shape[-2], a.shape[-1])
    if tuple(p.shape) != tuple(a.shape[:-2]) + (k,):
        raise ShapeError(f"{op}: pivots of shape {tuple(p.shape)} do not match LU of shape "
                         f"{tuple(a.shape)} (expected {tuple(a.shape[:-2]) + (k,)})")
    return a, p, k


def unpack_lu(op: str, LU, pivots, unpack_data: bool = True,  # noqa: N803 - torch's name
              unpack_pivots: bool = True) -> tuple:
    """(P, L, U) from `lu_factor`'s packed form (torch's `lu_unpack`)."""
    a, p, k = _lu_args(op, LU, pivots)
    m, n = a.shape[-2], a.shape[-1]
    rows = arange(m, device=a.device).reshape(m, 1)
    perm = low = up = None
    if unpack_pivots:
        order = _pivot_order(p, m)
        perm = (rows == order.unsqueeze(-2)).to(a.dtype)            # P[r, i] = (r == order[i])
    if unpack_data:
        kcols = arange(k, device=a.device)
        low = where(kcols < rows, a[..., :, :k], 0.0) + (rows == kcols).to(a.dtype)
        up = where(arange(n, device=a.device) >= kcols.reshape(k, 1), a[..., :k, :], 0.0)
    empty = a.new_zeros((0,))
    return _LUResult(perm if perm is not None else empty, low if low is not None else empty,
                     up if up is not None else empty)


@_export(method=False)
def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False) -> Tensor:  # noqa: N803
    """X with A @ X = B (`left=False`: X @ A = B; `adjoint`: with A^T) from `lu_factor`'s
    (LU, pivots) of square A."""
    a, p, _ = _lu_args("lu_solve", LU, pivots)
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"lu_solve: LU must hold square matrices, got {tuple(a.shape)}")
    b = tensor_arg("lu_solve", B)
    if b.ndim < 2 or (b.shape[-2] if left else b.shape[-1]) != a.shape[-1]:
        raise ShapeError(f"lu_solve: B of shape {tuple(b.shape)} does not fit A of shape "
                         f"{tuple(a.shape)} (left={left})")
    if not left:                                   # X A = B  <=>  A^T X^T = B^T
        return lu_solve(a, p, b.transpose(-2, -1), adjoint=not adjoint).transpose(-2, -1)
    perm, low, up = unpack_lu("lu_solve", a, p)
    if adjoint:                                    # A^T = U^T L^T P^T
        y = solve_triangular(up.transpose(-2, -1), b, upper=False)
        z = solve_triangular(low.transpose(-2, -1), y, upper=True, unitriangular=True)
        return _matmul(perm, z)
    y = _matmul(perm.transpose(-2, -1), b.to(a.dtype))
    return solve_triangular(up, solve_triangular(low, y, upper=False, unitriangular=True),
                            upper=True)


# Higham (2005): [13/13] Pade coefficients and the 1-norm below which they need no scaling
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


@_export(method=False)
def matrix_exp(A) -> Tensor:  # noqa: N803 - torch's name
    """e^A of each square matrix of `A`, by scaling and squaring of the [13/13] Pade
    approximant (differentiable through its matmuls and solve). The scaling reads the largest
    1-norm of the batch to the host, so it runs eagerly, not under `lazyt.compile`."""
    a = floating(_square("matrix_exp", A))
    n = a.shape[-1]
    if n == 0 or a.numel() == 0:
        return a
    norm = float(a.abs().sum(-2).amax().item())
    s = 0 if not math.isfinite(norm) or norm <= _THETA13 else \
        int(math.ceil(math.log2(norm / _THETA13)))
    x = a / (2.0 ** s) if s else a
    b = _PADE13
    eye = (arange(n, device=a.device).reshape(n, 1) == arange(n, device=a.device)).to(a.dtype)
    x2 = _matmul(x, x)
    x4 = _matmul(x2, x2)
    x6 = _matmul(x4, x2)
    u = _matmul(x, _matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2)
                + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = (_matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2)
         + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye)
    r = solve(v - u, v + u)
    for _ in range(s):
        r = _matmul(r, r)
    return r


def _info(bad: Tensor) -> Tensor:
    """int32 info per matrix: 1 + the first index where `bad` [..., n] holds, else 0."""
    n = bad.shape[-1]
    if n == 0:
        return bad.sum(-1).to(dt.int32)
    first = bad.to(dt.int32).argmax(-1)
    return where(bad.any(-1), first + 1, 0).to(dt.int32)


_CholeskyExResult = namedtuple("cholesky_ex", "L info")
_InvExResult = namedtuple("inv_ex", "inverse info")
_SolveExResult = namedtuple("solve_ex", "result info")
_LUFactorExResult = namedtuple("lu_factor_ex", "LU pivots info")


@_export(method=False)
def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):  # noqa: N803
    """(L, info): info is 1 + the order of the first leading minor that is not positive
    definite (0 for a good matrix); `check_errors` raises instead."""
    low = cholesky(A, upper=upper)
    info = _info(~(low.diagonal(0, -2, -1) > 0))
    if check_errors and bool((info != 0).any().item()):
        raise LinAlgError("cholesky_ex: a matrix is not positive definite "
                                   f"(info {info.numpy().tolist()})")
    return _CholeskyExResult(low, info)


def _singular_info(op: str, a: Tensor, check_errors: bool) -> Tensor:
    u = lu_factor(a).LU.diagonal(0, -2, -1)
    info = _info(u == 0)
    if check_errors and bool((info != 0).any().item()):
        raise LinAlgError(f"{op}: a matrix is singular (info {info.numpy().tolist()})")
    return info


@_export(method=False)
def inv_ex(A, *, check_errors: bool = False):  # noqa: N803 - torch's name
    """(inverse, info): info is 1 + the first zero pivot of the LU (0 when invertible)."""
    a = _square("inv_ex", A)
    return _InvExResult(inv(a), _singular_info("inv_ex", a, check_errors))


@_export(method=False)
def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):  # noqa: N803
    a = _square("solve_ex", A)
    return _SolveExResult(solve(a, B, left=left), _singular_info("solve_ex", a, check_errors))


@_export(method=False)
def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):  # noqa: N803
    packed, pivots = lu_factor(A, pivot=pivot)
    k = min(packed.shape[-2], packed.shape[-1])
    info = _info(packed.diagonal(0, -2, -1)[..., :k] == 0)
    if check_errors and bool((info != 0).any().item()):
        raise LinAlgError(f"lu_factor_ex: a matrix is singular (info "
                                   f"{info.numpy().tolist()})")
    return _LUFactorExResult(packed, pivots, info)


TOP_LEVEL["matrix_exp"] = matrix_exp
if not hasattr(Tensor, "matrix_exp"):
    Tensor.matrix_exp = matrix_exp


# ---------------------------------------------------------------------- Householder, least squares
_GeqrfResult = namedtuple("geqrf", "a tau")
_LstsqResult = namedtuple("lstsq", "solution residuals rank singular_values")


def _reflector(a: Tensor, j: int, rows: Tensor) -> Tensor:
    """Column j's Householder vector [..., m, 1] as geqrf packs it: 1 at row j, the stored
    entries below, 0 above."""
    return where(rows == j, 1.0, where(rows > j, a[..., :, j:j + 1], 0.0))


def geqrf(input) -> tuple:  # noqa: A002 - torch's name
    """LAPACK's geqrf of each matrix [..., m, n]: R on and above the diagonal, the Householder
    vectors (their unit first entries implied) below it, and the scales tau [..., min(m, n)],
    so that A = H_0 ... H_{k-1} R with H_i = I - tau_i v_i v_i^T (torch.geqrf)."""
    a = floating(_matrices("geqrf", input))
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    rows = arange(m, device=a.device).reshape(m, 1)
    r, vs, taus = a, [], []
    for j in range(k):
        col = r[..., :, j:j + 1]
        alpha = col[..., j:j + 1, :]
        below = where(rows > j, col, 0.0)
        xnorm = (below * below).sum(-2, keepdim=True).sqrt()
        keep = xnorm == 0                                 # nothing to reflect: tau = 0
        norm = (alpha * alpha + xnorm * xnorm).sqrt()
        beta = where(alpha >= 0, -norm, norm)
        tau = where(keep, 0.0, (beta - alpha) / where(keep, 1.0, beta))
        v = where(rows == j, 1.0, where(rows > j, col / where(keep, 1.0, alpha - beta), 0.0))
        r = r - tau * v * _matmul(v.transpose(-2, -1), r)
        vs.append(v)
        taus.append(tau.reshape(*tau.shape[:-2], 1))
    if not k:
        return _GeqrfResult(a, a.new_zeros((*a.shape[:-2], 0)))
    cols = arange(n, device=a.device)
    reflectors = cat(vs, -1)
    if k < n:
        reflectors = cat([reflectors, a.new_zeros((*a.shape[:-2], m, n - k))], -1)
    return _GeqrfResult(where(rows > cols, reflectors, r), cat(taus, -1))


def _reflectors_args(op: str, A, tau) -> tuple:  # noqa: N803 - torch's name
    a = floating(_matrices(op, A))
    t = tensor_arg(op, tau).to(a.dtype)
    k = t.shape[-1] if t.ndim else 0
    if t.ndim < 1 or tuple(t.shape[:-1]) != tuple(a.shape[:-2]) or k > a.shape[-1]:
        raise ShapeError(f"{op}: tau of shape {tuple(t.shape)} does not fit A of shape "
                         f"{tuple(a.shape)} (expected [..., k] with k <= {a.shape[-1]})")
    return a, t, k


@_export(method=False)
def householder_product(A, tau) -> Tensor:  # noqa: N803 - torch's name
    """The first n columns of H_0 ... H_{k-1} for the reflectors stored below the diagonal of
    `A` [..., m, n] (m >= n) and their scales `tau` [..., k] (torch's `orgqr`)."""
    a, t, k = _reflectors_args("householder_product", A, tau)
    m, n = a.shape[-2], a.shape[-1]
    if m < n:
        raise ShapeError(f"householder_product: A must have at least as many rows as columns, "
                         f"got {tuple(a.shape)}")
    rows = arange(m, device=a.device).reshape(m, 1)
    q = (rows == arange(n, device=a.device)).to(a.dtype).expand(*a.shape[:-2], m, n)
    for i in range(k - 1, -1, -1):                       # H_0 (H_1 (... (H_{k-1} I)))
        v = _reflector(a, i, rows)
        q = q - t[..., i:i + 1].unsqueeze(-1) * v * _matmul(v.transpose(-2, -1), q)
    return q


def ormqr(input, tau, other, left: bool = True, transpose: bool = False) -> Tensor:  # noqa
    """`other` multiplied by the Q (m x m) of geqrf's reflectors: Q C, Q^T C, C Q or C Q^T."""
    a, t, k = _reflectors_args("ormqr", input, tau)
    c = tensor_arg("ormqr", other).to(a.dtype)
    m = a.shape[-2]
    if c.ndim < 2 or (c.shape[-2] if left else c.shape[-1]) != m:
        raise ShapeError(f"ormqr: other of shape {tuple(c.shape)} does not fit Q of size {m} "
                         f"(left={left})")
    rows = arange(m, device=a.device).reshape(m, 1)
    # Q = H_0 ... H_{k-1}; each H_i is symmetric, so Q^T = H_{k-1} ... H_0
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = _reflector(a, i, rows)
        scale = t[..., i:i + 1].unsqueeze(-1)
        if left:
            c = c - scale * v * _matmul(v.transpose(-2, -1), c)
        else:
            c = c - scale * _matmul(c, v) * v.transpose(-2, -1)
    return c


_LSTSQ_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


@_export(method=False)
def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803 - torch's names
    """The least-squares solution X of A X ~ B ([..., m, n] and [..., m, k], batches
    broadcast), with torch's result fields: `gels` (the default's QR, for full-rank A) gives no
    rank; the others (`gelsy` by default, `gelsd`, `gelss`) solve through the pseudo-inverse
    with singular values below `rcond` (default eps * max(m, n)) times the largest cut, and
    give the rank; `gelsd`/`gelss` also the singular values. `residuals` (squared, per column)
    come when m > n, the driver is not `gelsy`, and every matrix has full rank."""
    if driver not in _LSTSQ_DRIVERS:
        raise InvalidArgumentError(f"lstsq: driver must be one of 'gels', 'gelsy', 'gelsd', "
                                   f"'gelss' or None, got {driver!r}")
    a = floating(_matrices("lstsq", A))
    b = tensor_arg("lstsq", B)
    common_device("lstsq", (a, b))
    if b.ndim < 2 or b.shape[-2] != a.shape[-2]:
        raise ShapeError(f"lstsq: B must be [..., {a.shape[-2]}, k] for A of shape "
                         f"{tuple(a.shape)}, got {tuple(b.shape)}")
    b = b.to(a.dtype)
    m, n = a.shape[-2], a.shape[-1]
    batch = _broadcast(a.shape[:-2], b.shape[:-2], "lstsq")
    a = a.expand(*batch, m, n)
    b = b.expand(*batch, m, b.shape[-1])
    name = driver or "gelsy"
    eps = float(np.finfo(a.dtype.np).eps)
    tol = eps * max(m, n) if rcond is None or rcond < 0 else float(rcond)
    empty = a.new_zeros((0,))
    if name == "gels":
        if m >= n:
            q, r = qr(a)
            x = solve_triangular(r, _matmul(q.transpose(-2, -1), b), upper=True)
        else:
            q, r = qr(a.transpose(-2, -1))
            y = solve_triangular(r.transpose(-2, -1), b, upper=False)
            x = _matmul(q, y)
        rank = _tensor(np.zeros(0, dtype=np.int64), device=a.device)
        s = empty
        full = True
    else:
        x = _matmul(pinv(a, rtol=tol), b)
        s = svdvals(a)
        largest = s[..., :1] if s.shape[-1] else s.sum(-1, keepdim=True)
        rank = (s > largest * tol).sum(-1)
        full = bool((rank == min(m, n)).all().item()) if m > n else False
        if name == "gelsy":
            s = empty
    residuals = empty
    if m > n and name != "gelsy" and full:
        residuals = (_matmul(a, x) - b).square().sum(-2)
    return _LstsqResult(x, residuals, rank, s)


@_export(method=False)
def vander(x, *, N=None) -> Tensor:  # noqa: N803 - torch's name
    """The Vandermonde matrix of `x` [..., n]: columns x^0, x^1, ..., x^(N-1) (N = n by
    default), increasing powers as torch's (numpy's `vander` decreases)."""
    t = tensor_arg("vander", x)
    if t.ndim < 1:
        raise ShapeError("vander: x must have at least one dim")
    cols = t.shape[-1] if N is None else N
    if isinstance(cols, bool) or not isinstance(cols, numbers.Integral) or cols <= 1:
        raise InvalidArgumentError(f"vander: N must be an int greater than 1 (torch's rule), "
                                   f"got {cols!r}")
    powers = [t.unsqueeze(-1) ** 0, t.unsqueeze(-1)]
    for _ in range(cols - 2):
        powers.append(powers[-1] * t.unsqueeze(-1))
    return cat(powers, -1)


def _split_dims(op: str, shape: tuple, ind: int) -> tuple:
    if isinstance(ind, bool) or not isinstance(ind, numbers.Integral) or not 0 < ind < len(shape):
        raise InvalidArgumentError(f"{op}: ind must be an int in [1, {len(shape) - 1}], got "
                                   f"{ind!r}")
    return shape[:ind], shape[ind:]


@_export(method=False)
def tensorinv(A, ind: int = 2) -> Tensor:  # noqa: N803 - torch's name
    """The inverse of `A` read as a matrix of its first `ind` dims by the rest (whose sizes'
    products must be equal): shape A.shape[ind:] + A.shape[:ind]."""
    a = tensor_arg("tensorinv", A)
    left, right = _split_dims("tensorinv", tuple(a.shape), ind)
    rows, cols = math.prod(left), math.prod(right)
    if rows != cols:
        raise ShapeError(f"tensorinv: the first {ind} dims {left} and the rest {right} must "
                         f"hold as many elements as each other")
    return inv(a.reshape(rows, cols)).reshape(*right, *left)


@_export(method=False)
def tensorsolve(A, B, dims=None) -> Tensor:  # noqa: N803 - torch's names
    """X with tensordot(A, X, X.ndim) = B: X has shape A.shape[B.ndim:] (after moving `dims`
    of A to the end)."""
    a = tensor_arg("tensorsolve", A)
    b = tensor_arg("tensorsolve", B)
    if dims is not None:
        dims = [d % a.ndim for d in dims]
        a = a.permute(*[d for d in range(a.ndim) if d not in dims], *dims)
    if tuple(a.shape[:b.ndim]) != tuple(b.shape):
        raise ShapeError(f"tensorsolve: A's leading dims {tuple(a.shape[:b.ndim])} must equal "
                         f"B's shape {tuple(b.shape)}")
    out_shape = tuple(a.shape[b.ndim:])
    rows, cols = math.prod(b.shape), math.prod(out_shape)
    if rows != cols:
        raise ShapeError(f"tensorsolve: B's {rows} elements and the solution's {cols} must match "
                         "(A must be square as a matrix)")
    return solve(a.reshape(rows, cols), b.reshape(rows, 1)).reshape(out_shape)


__all__.append("LinAlgError")                          # torch.linalg.LinAlgError
TOP_LEVEL.update(geqrf=geqrf, orgqr=householder_product, ormqr=ormqr)
for _name in ("geqrf", "orgqr", "ormqr"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, TOP_LEVEL[_name])
