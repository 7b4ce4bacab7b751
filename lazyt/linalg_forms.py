"""torch's older top-level linear algebra, kept in torch for existing code and built here on
`lazyt.linalg`: `svd` (U, S, V with V not transposed; `some`, `compute_uv`), `cholesky(upper=)`,
`cholesky_solve`, `cholesky_inverse`, `triangular_solve` (B first, returning the solution and
a copy of A), `lu` (LU, pivots[, infos]), `lu_unpack`, `lu_solve`, `pinverse`,
`nuclear_norm`, `frobenius_norm`, `norm_except_dim` and `mvlgamma`; each also a Tensor
method where torch has one."""
from __future__ import annotations

import numbers
from collections import namedtuple

from . import linalg as la
from . import special
from .creation import arange
from .errors import InvalidArgumentError, ShapeError
from .mathops import tensor_arg
from .moreops import exporter
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

_SVDResult = namedtuple("svd", "U S V")
_TriangularSolveResult = namedtuple("triangular_solve", "solution cloned_coefficient")
_LUUnpackResult = namedtuple("lu_unpack", "P L U")


@_export()
def svd(input, some: bool = True, compute_uv: bool = True):  # noqa: A002 - torch's name
    """(U, S, V) with input = U diag(S) V^T; `some=False` gives square U and V;
    `compute_uv=False` gives zero-filled U (m, m) and V (n, n), as torch."""
    x = tensor_arg("svd", input)
    if not compute_uv:
        m, n = x.shape[-2], x.shape[-1]
        s = la.svdvals(x)
        return _SVDResult(x.new_zeros((*x.shape[:-2], m, m)), s,
                          x.new_zeros((*x.shape[:-2], n, n)))
    u, s, vh = la.svd(x, full_matrices=not some)
    return _SVDResult(u, s, vh.transpose(-2, -1))


@_export()
def cholesky(input, upper: bool = False) -> Tensor:  # noqa: A002 - torch's name
    return la.cholesky(input, upper=upper)


@_export()
def cholesky_solve(B, L, upper: bool = False) -> Tensor:  # noqa: N803 - torch's names
    """X with A X = B, given A's Cholesky factor L (A = L L^T; `upper`: A = U^T U)."""
    b = tensor_arg("cholesky_solve", B)
    f = tensor_arg("cholesky_solve", L)
    low = f.transpose(-2, -1) if upper else f
    y = la.solve_triangular(low, b, upper=False)
    return la.solve_triangular(low.transpose(-2, -1), y, upper=True)


@_export()
def cholesky_inverse(L, upper: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """A^-1 from A's Cholesky factor."""
    f = tensor_arg("cholesky_inverse", L)
    if f.ndim < 2 or f.shape[-1] != f.shape[-2]:
        raise ShapeError(f"cholesky_inverse: L must hold square matrices, got {tuple(f.shape)}")
    n = f.shape[-1]
    eye = arange(n, device=f.device).reshape(n, 1) == arange(n, device=f.device)
    return cholesky_solve(eye.to(f.dtype).expand(*f.shape), f, upper)


@_export()
def triangular_solve(b, A, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False):
    """(X, a copy of A) with op(A) X = b, op(A) = A or A^T, for triangular A."""
    a = tensor_arg("triangular_solve", A)
    lhs = a.transpose(-2, -1) if transpose else a
    x = la.solve_triangular(lhs, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TriangularSolveResult(x, a.clone())


@_export()
def lu(A, pivot: bool = True, get_infos: bool = False):  # noqa: N803 - torch's name
    """(LU, pivots), or (LU, pivots, infos) with `get_infos`: `linalg.lu_factor`'s packed
    factors."""
    if get_infos:
        return tuple(la.lu_factor_ex(A, pivot=pivot))
    return tuple(la.lu_factor(A, pivot=pivot))


@_export(method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True,  # noqa: N803 - torch's names
              unpack_pivots: bool = True):
    """(P, L, U) with A = P L U from the packed (LU, pivots); a part not unpacked is an empty
    tensor."""
    return _LUUnpackResult(*la.unpack_lu("lu_unpack", LU_data, LU_pivots, unpack_data,
                                         unpack_pivots))


@_export()
def lu_solve(b, LU_data, LU_pivots) -> Tensor:  # noqa: N803 - torch's names
    """X with A X = b from A's packed (LU, pivots)."""
    return la.lu_solve(LU_data, LU_pivots, b)


@_export()
def pinverse(input, rcond: float = 1e-15) -> Tensor:  # noqa: A002 - torch's name
    return la.pinv(input, rtol=rcond)


@_export()
def nuclear_norm(input, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """The sum of singular values of the matrix (or of the two `dim`s)."""
    if isinstance(dim, bool):                 # torch's nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return la.matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


@_export(method=False)
def frobenius_norm(input, dim, keepdim: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """The square root of the sum of squares over `dim` (one or two dims)."""
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if not 1 <= len(dims) <= 2:
        raise InvalidArgumentError(f"frobenius_norm: expects one or two dims, got {dim!r}")
    return la.vector_norm(input, 2, dims, keepdim)


@_export(method=False)
def norm_except_dim(v, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The `pow`-norm over every dim but `dim` (kept, size 1 elsewhere); dim -1: over all."""
    x = tensor_arg("norm_except_dim", v)
    if dim == -1:
        return la.vector_norm(x, pow)
    if not 0 <= dim < max(x.ndim, 1):
        raise InvalidArgumentError(f"norm_except_dim: dim {dim} is out of range for rank "
                                   f"{x.ndim}")
    others = tuple(d for d in range(x.ndim) if d != dim)
    return la.vector_norm(x, pow, others, keepdim=True) if others else x.abs()


@_export()
def mvlgamma(input, p: int) -> Tensor:  # noqa: A002 - torch's name
    """The multivariate log-gamma of dimension `p` (torch.special.multigammaln)."""
    return special.multigammaln(input, p)

