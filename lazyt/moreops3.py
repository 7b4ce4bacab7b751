"""Still more of torch's ops as composites: products (tensordot, inner, vdot, chain_matmul,
matrix_power, addmv, addr, addbmm, addcmul, addcdiv and the in-place forms an optimizer
uses), layout (atleast_1d/2d/3d, diagflat, block_diag, cartesian_prod, combinations,
tril_indices, triu_indices, vander), statistics (cov, corrcoef), integration (trapezoid,
cumulative_trapezoid), renorm, `torch.pdist` and the floating-point helpers logaddexp2, ldexp and
frexp. Every backend runs them and autodiff differentiates them; index sets that depend only
on sizes (combinations, pdist's pairs, the triangle indices) are made on the host.
"""
from __future__ import annotations

import itertools
import math
import numbers
from collections import namedtuple

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import full
from .creation import tensor as _tensor
from .dispatch import DispatchTensor, common_device
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import as_tensor, cat, expand, floating, index_select, matmul, stack, to, where
from .inplace import rebind
from .layout import movedim, pad
from .mathops import float_pair, tensor_arg
from .moreops import diag_embed, exporter
from .tensor import Tensor
from .amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

__all__: list = []
_export = exporter(globals(), __all__)

# frexp's result by position and by torch's field names
_Frexp = namedtuple("frexp", "mantissa exponent")


def _scalar(v) -> bool:
    return isinstance(v, (numbers.Number, np.generic)) and not isinstance(v, bool)


def _index(values, like: Tensor) -> Tensor:
    """A host list of ids as an int64 tensor on `like`'s device."""
    return _tensor(np.asarray(values, dtype=np.int64), device=like.device)


# ---------------------------------------------------------------------- products
@_export(method=False)
def tensordot(a, b, dims=2, out=None) -> Tensor:
    """Sum over the last `dims` dims of `a` and the first `dims` of `b` (an int), or over the
    paired lists `dims=([a dims], [b dims])`: one matmul after permute and reshape."""
    if out is not None:
        raise InvalidArgumentError("tensordot: out= is not supported (lazyt tensors are "
                                   "values; use the result)")
    x, y = tensor_arg("tensordot", a), tensor_arg("tensordot", b)
    common_device("tensordot", (x, y))
    if isinstance(dims, numbers.Integral):
        if dims < 0 or dims > min(x.ndim, y.ndim):
            raise ShapeError(f"tensordot: dims={dims} must be in [0, {min(x.ndim, y.ndim)}] "
                             f"for shapes {x.shape} and {y.shape}")
        da, db = list(range(x.ndim - dims, x.ndim)), list(range(dims))
    else:
        if isinstance(dims, DispatchTensor):
            dims = tensor_arg("tensordot", dims).tolist()
        try:
            da, db = dims
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"tensordot: dims must be an int or a pair of dim "
                                       f"lists, got {dims!r}") from None
        da = [da] if isinstance(da, numbers.Integral) else list(da)
        db = [db] if isinstance(db, numbers.Integral) else list(db)
        if len(da) != len(db):
            raise ShapeError(f"tensordot: both dim lists need the same length, got {da} and "
                             f"{db}")
        da = [sh.normalize_dim("tensordot", d, x.ndim) for d in da]
        db = [sh.normalize_dim("tensordot", d, y.ndim) for d in db]
    for i, j in zip(da, db):
        if x.shape[i] != y.shape[j]:
            raise ShapeError(f"tensordot: contracted dims differ in size: dim {i} of "
                             f"{x.shape} against dim {j} of {y.shape}")
    free_a = [d for d in range(x.ndim) if d not in da]
    free_b = [d for d in range(y.ndim) if d not in db]
    k = math.prod(x.shape[d] for d in da)
    xa = x.permute(*(free_a + da)).reshape(math.prod(x.shape[d] for d in free_a), k)
    yb = y.permute(*(db + free_b)).reshape(k, math.prod(y.shape[d] for d in free_b))
    d = dt.promote(x.dtype, y.dtype)
    res = matmul(to(xa, d), to(yb, d))
    return res.reshape(tuple(x.shape[i] for i in free_a) + tuple(y.shape[i] for i in free_b))


@_export()
def inner(input, other) -> Tensor:  # noqa: A002 - torch's names
    """Sum of products over the last dim of both (a scalar operand multiplies)."""
    a, b = tensor_arg("inner", input), tensor_arg("inner", other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims differ: {a.shape} and {b.shape}")
    return tensordot(a, b, ([-1], [-1]))


@_export()
def vdot(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The dot product of two 1-D tensors of one length (real: no conjugation to do)."""
    a, b = tensor_arg("vdot", input), tensor_arg("vdot", other)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ShapeError(f"vdot: expected two 1-D tensors of one length, got {a.shape} and "
                         f"{b.shape}")
    if a.dtype is not b.dtype:
        raise DTypeError(f"vdot: both tensors need one dtype, got {a.dtype.name} and "
                         f"{b.dtype.name}")
    return (a * b).sum()


@_export(method=False)
def chain_matmul(*matrices) -> Tensor:
    """The product of 2-D tensors, left to right (torch's deprecated form of multi_dot)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise InvalidArgumentError("chain_matmul: expected at least one matrix")
    ms = [tensor_arg("chain_matmul", m) for m in matrices]
    for m in ms:
        if m.ndim != 2:
            raise ShapeError(f"chain_matmul: expected 2-D tensors, got shape {m.shape}")
    out = ms[0]
    for m in ms[1:]:
        out = matmul(out, m)
    return out


@_export()
def matrix_power(input, n: int) -> Tensor:  # noqa: A002 - torch's name
    """`input` (square matrices, batched) to the integer power `n >= 0` by repeated squaring
    (n = 0: the identity). Negative powers need an inverse, which lazyt does not have."""
    x = tensor_arg("matrix_power", input)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power: expected square matrices, got shape {x.shape}")
    if not isinstance(n, numbers.Integral):
        raise InvalidArgumentError(f"matrix_power: n must be an int, got {n!r}")
    if n < 0:
        raise InvalidArgumentError(f"matrix_power: n={n} needs a matrix inverse, which lazyt "
                                   f"does not provide")
    m = x.shape[-1]
    if n == 0:
        eye = as_tensor(np.eye(m, dtype=x.dtype.np), x)
        return expand(eye, x.shape)
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def _beta_alpha(op: str, base: Tensor, prod: Tensor, beta, alpha) -> Tensor:
    """`beta * base + alpha * prod`, where beta=0 ignores `base` (NaNs included), as torch."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return expand(prod, sh.broadcast(op, base.shape, prod.shape)) if base.shape != \
            prod.shape else prod
    if beta != 1:
        base = base * beta
    return base + prod


@_export()
def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:  # noqa: A002 - torch's names
    """`beta * input + alpha * (mat @ vec)`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, addmv, input, mat, vec, beta=beta, alpha=alpha)
    x, m, v = (tensor_arg("addmv", t) for t in (input, mat, vec))
    if m.ndim != 2 or v.ndim != 1 or m.shape[1] != v.shape[0]:
        raise ShapeError(f"addmv: expected a matrix and a vector of matching size, got "
                         f"{m.shape} and {v.shape}")
    return _beta_alpha("addmv", x, matmul(m, v), beta, alpha)


@_export()
def addr(input, vec1, vec2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002 - torch's names
    """`beta * input + alpha * outer(vec1, vec2)`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, addr, input, vec1, vec2, beta=beta, alpha=alpha)
    x, a, b = (tensor_arg("addr", t) for t in (input, vec1, vec2))
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"addr: expected two vectors, got {a.shape} and {b.shape}")
    return _beta_alpha("addr", x, a.reshape(-1, 1) * b.reshape(1, -1), beta, alpha)


@_export()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002 - torch's
    """`beta * input + alpha * sum_i(batch1[i] @ batch2[i])`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, addbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    x, a, b = (tensor_arg("addbmm", t) for t in (input, batch1, batch2))
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ShapeError(f"addbmm: expected batches [b, n, m] and [b, m, p], got {a.shape} "
                         f"and {b.shape}")
    # one GEMM: [n, b*m] @ [b*m, p]
    n, p = a.shape[1], b.shape[2]
    prod = matmul(movedim(a, 0, 1).reshape(n, -1), b.reshape(-1, p)) if a.shape[0] else \
        full((n, p), 0, dtype=dt.promote(a.dtype, b.dtype), device=a.device)
    return _beta_alpha("addbmm", x, prod, beta, alpha)


def _value(op: str, value):
    if not _scalar(value) and not (isinstance(value, DispatchTensor) and value.ndim == 0):
        raise InvalidArgumentError(f"{op}: value must be a number or a 0-d tensor, got "
                                   f"{type(value).__name__}")
    return value


@_export()
def addcmul(input, tensor1, tensor2, *, value=1) -> Tensor:  # noqa: A002 - torch's names
    """`input + value * tensor1 * tensor2` (the three broadcast)."""
    x, a, b = (tensor_arg("addcmul", t) for t in (input, tensor1, tensor2))
    value = _value("addcmul", value)
    prod = a * b
    return x + (prod * value if not (_scalar(value) and value == 1) else prod)


@_export()
def addcdiv(input, tensor1, tensor2, *, value=1) -> Tensor:  # noqa: A002 - torch's names
    """`input + value * tensor1 / tensor2`; integer tensor1 and tensor2 are refused, as in
    torch (their division would truncate)."""
    x, a, b = (tensor_arg("addcdiv", t) for t in (input, tensor1, tensor2))
    if not a.dtype.is_float and not b.dtype.is_float:
        raise DTypeError(f"addcdiv: integer division of {a.dtype.name} tensors is not "
                         f"supported; use floating-point tensor1 or tensor2")
    value = _value("addcdiv", value)
    q = a / b
    return x + (q * value if not (_scalar(value) and value == 1) else q)


@_export(function=False)
def addcmul_(self, tensor1, tensor2, *, value=1) -> Tensor:
    """In-place `addcmul` (the result keeps this tensor's dtype and shape)."""
    return rebind(self, addcmul(self, tensor1, tensor2, value=value), "addcmul_")


@_export(function=False)
def addcdiv_(self, tensor1, tensor2, *, value=1) -> Tensor:
    """In-place `addcdiv`."""
    return rebind(self, addcdiv(self, tensor1, tensor2, value=value), "addcdiv_")


@_export(function=False)
def addmv_(self, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """In-place `addmv`."""
    return rebind(self, addmv(self, mat, vec, beta=beta, alpha=alpha), "addmv_")


@_export(function=False)
def addr_(self, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
    """In-place `addr`."""
    return rebind(self, addr(self, vec1, vec2, beta=beta, alpha=alpha), "addr_")


@_export(function=False)
def addbmm_(self, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """In-place `addbmm`."""
    return rebind(self, addbmm(self, batch1, batch2, beta=beta, alpha=alpha), "addbmm_")


# ---------------------------------------------------------------------- layout
def _atleast(op: str, nd: int, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(op, nd, tuple(tensors[0])))
    out = []
    for t in tensors:
        x = tensor_arg(op, t)
        if x.ndim < nd:
            if x.ndim == 0:
                x = x.reshape((1,) * nd)
            elif nd == 2:
                x = x.reshape(1, *x.shape)
            elif x.ndim == 1:      # atleast_3d: (n,) -> (1, n, 1), as numpy and torch
                x = x.reshape(1, x.shape[0], 1)
            else:                  # (m, n) -> (m, n, 1)
                x = x.reshape(*x.shape, 1)
        out.append(x)
    return out[0] if len(out) == 1 else tuple(out)


@_export(method=False)
def atleast_1d(*tensors):
    """Each tensor with at least one dim (a 0-d one becomes shape (1,))."""
    return _atleast("atleast_1d", 1, tensors)


@_export(method=False)
def atleast_2d(*tensors):
    """Each tensor with at least two dims (leading size-1 dims added)."""
    return _atleast("atleast_2d", 2, tensors)


@_export(method=False)
def atleast_3d(*tensors):
    """Each tensor with at least three dims: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast("atleast_3d", 3, tensors)


@_export()
def diagflat(input, offset: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """A square matrix with the flattened input on its `offset` diagonal."""
    return diag_embed(tensor_arg("diagflat", input).reshape(-1), offset=offset)


@_export(method=False)
def block_diag(*tensors) -> Tensor:
    """The tensors (0-, 1- or 2-D) on the diagonal of one matrix, zeros elsewhere."""
    if not tensors:
        raise InvalidArgumentError("block_diag: expected at least one tensor")
    ms = []
    for t in tensors:
        x = tensor_arg("block_diag", t)
        if x.ndim > 2:
            raise ShapeError(f"block_diag: tensors must have at most 2 dims, got {x.shape}")
        ms.append(x.reshape(1, -1) if x.ndim == 1 else x.reshape(1, 1) if x.ndim == 0 else x)
    common_device("block_diag", ms)
    d = ms[0].dtype
    for m in ms[1:]:
        d = dt.promote(d, m.dtype)
    cols = sum(m.shape[1] for m in ms)
    rows, at = [], 0
    for m in ms:
        rows.append(pad(to(m, d), [at, cols - at - m.shape[1]]))
        at += m.shape[1]
    return cat(rows, 0)


@_export(method=False)
def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows ([n1*n2*..., k]; one
    tensor: itself)."""
    xs = [tensor_arg("cartesian_prod", t) for t in tensors]
    if not xs:
        raise InvalidArgumentError("cartesian_prod: expected at least one tensor")
    for x in xs:
        if x.ndim != 1:
            raise ShapeError(f"cartesian_prod: expected 1-D tensors, got shape {x.shape}")
    if len(xs) == 1:
        return xs[0]
    common_device("cartesian_prod", xs)
    d = xs[0].dtype
    for x in xs[1:]:
        d = dt.promote(d, x.dtype)
    shape = tuple(x.shape[0] for x in xs)
    cols = []
    for i, x in enumerate(xs):
        view = [1] * len(xs)
        view[i] = shape[i]
        cols.append(expand(to(x, d).reshape(tuple(view)), shape).reshape(-1))
    return stack(cols, 1)


@_export(method=False)
def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-`r` combinations of a 1-D tensor's elements, as rows in lexicographic order
    of positions (itertools' order); `with_replacement` allows repeats."""
    x = tensor_arg("combinations", input)
    if x.ndim != 1:
        raise ShapeError(f"combinations: expected a 1-D tensor, got shape {x.shape}")
    if not isinstance(r, numbers.Integral) or r < 0:
        raise InvalidArgumentError(f"combinations: r must be a non-negative int, got {r!r}")
    n = x.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    if r == 0:
        return full((0,), 0, dtype=x.dtype, device=x.device)
    idx = np.asarray(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        return full((0,) if r == 0 else (0, r), 0, dtype=x.dtype, device=x.device)
    return index_select(x, 0, _index(idx.reshape(-1), x)).reshape(idx.shape)


def _tri_indices(op: str, row: int, col: int, offset: int, lower: bool, dtype, device):
    for v, name in ((row, "row"), (col, "col"), (offset, "offset")):
        if not isinstance(v, numbers.Integral):
            raise InvalidArgumentError(f"{op}: {name} must be an int, got {v!r}")
    if row < 0 or col < 0:
        raise InvalidArgumentError(f"{op}: row and col must be >= 0, got {row} and {col}")
    fn = np.tril_indices if lower else np.triu_indices
    r, c = fn(row, offset, col)
    d = dt.as_dtype(dtype) if dtype is not None else dt.int64
    if d.is_float or d is dt.bool_:
        raise DTypeError(f"{op}: dtype must be an integer dtype, got {d.name}")
    return _tensor(np.stack([r, c]).astype(d.np), device=device)


@_export(method=False)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """The [2, n] (row, col) positions of the lower triangle of a row x col matrix, row by
    row (`offset` shifts the diagonal up)."""
    return _tri_indices("tril_indices", row, col, offset, True, dtype, device)


@_export(method=False)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """The [2, n] (row, col) positions of the upper triangle, row by row."""
    return _tri_indices("triu_indices", row, col, offset, False, dtype, device)


@_export(method=False)
def vander(x, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-D tensor: column j is `x ** (N - 1 - j)` (or `x ** j`
    with `increasing`); N defaults to len(x). Integer input stays integer (torch's int64)."""
    v = tensor_arg("vander", x)
    if v.ndim != 1:
        raise ShapeError(f"vander: expected a 1-D tensor, got shape {v.shape}")
    n = v.shape[0] if N is None else N
    if not isinstance(n, numbers.Integral) or n < 0:
        raise InvalidArgumentError(f"vander: N must be a non-negative int, got {N!r}")
    if v.dtype is dt.bool_ or (not v.dtype.is_float and v.dtype is not dt.int64):
        v = to(v, dt.int64)
    if n == 0:
        return full((v.shape[0], 0), 0, dtype=v.dtype, device=v.device)
    cols = [full(v.shape, 1, dtype=v.dtype, device=v.device)]
    for _ in range(1, n):
        cols.append(cols[-1] * v)      # powers by products: exact for integers, as torch's
    if not increasing:
        cols = cols[::-1]
    return stack(cols, 1)


# ---------------------------------------------------------------------- statistics
@_export()
def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:  # noqa: A002
    """The covariance matrix of the variables in the rows of `input` (observations in the
    columns; a 1-D input is one variable), with integer frequency weights and float
    observation weights as torch's; `correction=1` is Bessel's."""
    x = tensor_arg("cov", input)
    if x.ndim > 2:
        raise ShapeError(f"cov: expected at most 2 dims, got shape {x.shape}")
    x = x.reshape(1, -1) if x.ndim < 2 else x
    x = floating(x)
    n = x.shape[1]
    w = None
    if fweights is not None:
        f = tensor_arg("cov", fweights)
        if f.dtype.is_float or f.ndim > 1 or (f.ndim == 1 and f.shape[0] != n):
            raise ShapeError(f"cov: fweights must be a 1-D integer tensor of {n} elements, "
                             f"got {f.dtype.name} of shape {f.shape}")
        w = to(f, x.dtype)
    if aweights is not None:
        a = tensor_arg("cov", aweights)
        if not a.dtype.is_float or a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n):
            raise ShapeError(f"cov: aweights must be a 1-D float tensor of {n} elements, got "
                             f"{a.dtype.name} of shape {a.shape}")
        a = to(a, x.dtype)
        w = a if w is None else w * a
    if w is None:
        w_sum = full((), n, dtype=x.dtype, device=x.device)
        avg = x.mean(1, keepdim=True)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / w_sum
    if correction == 0:
        norm = w_sum
    elif w is None:
        norm = w_sum - correction
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * to(tensor_arg("cov", aweights), x.dtype)).sum() / w_sum
    norm = where(norm < 0, 0.0, norm)
    xc = x - avg
    xw = xc if w is None else xc * w
    c = matmul(xw, xc.t()) / norm
    return c.reshape(()) if c.shape == (1, 1) and tensor_arg("cov", input).ndim < 2 else c


@_export()
def corrcoef(input) -> Tensor:  # noqa: A002 - torch's name
    """Pearson's correlation coefficients of the rows' variables, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    r = c / d.reshape(-1, 1) / d.reshape(1, -1)
    return r.clamp(-1.0, 1.0)


# ---------------------------------------------------------------------- integration
def _trap_args(op: str, y, x, dx, dim):
    yv = floating(tensor_arg(op, y))
    d = sh.normalize_dim(op, dim, max(yv.ndim, 1))
    if x is not None and dx is not None:
        raise InvalidArgumentError(f"{op}: pass x or dx, not both")
    n = yv.shape[d]
    lo, hi = yv.narrow(d, 0, max(n - 1, 0)), yv.narrow(d, min(1, n), max(n - 1, 0))
    if x is None:
        spacing = 1.0 if dx is None else dx
        return (lo + hi) * (0.5 * spacing) if _scalar(spacing) else \
            (lo + hi) * tensor_arg(op, spacing) * 0.5, d
    xv = tensor_arg(op, x)
    if xv.ndim == 1:
        if xv.shape[0] != n:
            raise ShapeError(f"{op}: x has {xv.shape[0]} points, y has {n} along dim {d}")
        view = [1] * yv.ndim
        view[d] = n
        xv = xv.reshape(tuple(view))
    xv = to(xv, yv.dtype)
    m = xv.shape[d] if xv.ndim == yv.ndim else n
    dxs = xv.narrow(d, min(1, m), max(m - 1, 0)) - xv.narrow(d, 0, max(m - 1, 0))
    return (lo + hi) * dxs * 0.5, d


@_export(method=False)
def trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along `dim`: spacing `dx` (default 1) or sample points `x`."""
    parts, d = _trap_args("trapezoid", y, x, dx, dim)
    return parts.sum(d)


@_export(method=False)
def trapz(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """torch's older name of `trapezoid`."""
    parts, d = _trap_args("trapz", y, x, dx, dim)
    return parts.sum(d)


@_export(method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along `dim` (one element fewer than y there)."""
    parts, d = _trap_args("cumulative_trapezoid", y, x, dx, dim)
    return parts.cumsum(d)


# ---------------------------------------------------------------------- norms and distances
@_export()
def renorm(input, p, dim: int, maxnorm) -> Tensor:  # noqa: A002 - torch's names
    """Each slice along `dim` rescaled so its p-norm is at most `maxnorm` (slices already
    within keep their values; torch's 1e-7 guard in the scale)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, renorm, input, p, dim, maxnorm)
    x = tensor_arg("renorm", input)
    if not x.dtype.is_float:
        raise DTypeError(f"renorm: needs a floating-point tensor, got {x.dtype.name}")
    if not _scalar(p) or p <= 0:
        raise InvalidArgumentError(f"renorm: p must be a positive number, got {p!r}")
    if not _scalar(maxnorm) or maxnorm < 0:
        raise InvalidArgumentError(f"renorm: maxnorm must be a number >= 0, got {maxnorm!r}")
    d = sh.normalize_dim("renorm", dim, max(x.ndim, 1))
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = x.norm(p, dim=others, keepdim=True) if others else x.abs()
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return x * to(scale, x.dtype)


@_export(function=False)
def renorm_(self, p, dim: int, maxnorm) -> Tensor:
    """In-place `renorm`."""
    return rebind(self, renorm(self, p, dim, maxnorm), "renorm_")


@_export(method=False)
def pdist(input, p: float = 2.0) -> Tensor:  # noqa: A002 - torch's names
    """`torch.pdist`: `nn.functional.pdist` (the p-norm distances between every pair of
    rows i < j of a 2-D tensor, read row by row)."""
    from .nn.layers import pdist as _pdist
    return _pdist(tensor_arg("pdist", input), p)


# ---------------------------------------------------------------------- floating point
@_export()
def logaddexp2(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`log2(2**input + 2**other)` without overflow (the larger one taken out first)."""
    a, b = float_pair("logaddexp2", input, other)
    if a.dtype is dt.float16:
        return logaddexp2(a.to(dt.float32), b.to(dt.float32)).to(dt.float16)
    m = where(a > b, a, b)
    same = a == b   # (also both +inf / -inf: the difference would be NaN)
    diff = where(same, 0.0, -(a - b).abs())
    return where(same, a + 1.0, m + (1.0 + diff.exp2()).log2())


@_export()
def ldexp(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`input * 2 ** other` (other an integer tensor or number; float result)."""
    x = floating(tensor_arg("ldexp", input))
    e = other if not isinstance(other, DispatchTensor) else tensor_arg("ldexp", other)
    if isinstance(e, DispatchTensor):
        two = to(e, x.dtype if x.dtype is not dt.float16 else dt.float32).exp2()
    else:
        two = 2.0 ** float(e)
    out = x * two
    return to(out, x.dtype) if isinstance(out, DispatchTensor) and out.dtype is not x.dtype \
        else out


@_export()
def frexp(input):  # noqa: A002 - torch's name
    """`(mantissa, exponent)` with `input = mantissa * 2 ** exponent`, |mantissa| in
    [0.5, 1) (0, inf and NaN give themselves and exponent 0, as torch); exponent int32."""
    x = tensor_arg("frexp", input)
    if not x.dtype.is_float:
        raise DTypeError(f"frexp: needs a floating-point tensor, got {x.dtype.name}")
    w = to(x, dt.float64) if x.dtype is not dt.float64 and x.dtype is not dt.float32 else x
    a = w.abs()
    finite = (a > 0) & (a < math.inf)
    safe = where(finite, a, 1.0)
    e = safe.log2().floor() + 1.0
    m = safe / e.exp2()
    # log2 can be off by one at powers of two and their neighbours: bring m into [0.5, 1)
    hi = m >= 1.0
    e = where(hi, e + 1.0, e)
    m = where(hi, m * 0.5, m)
    lo = m < 0.5
    e = where(lo, e - 1.0, e)
    m = where(lo, m * 2.0, m)
    mant = where(finite, m * w.sign(), w)
    expo = to(where(finite, e, 0.0), dt.int32)
    return _Frexp(to(mant, x.dtype), expo)
