"""More of torch's ops as composites of lazyt's differentiable ops: elementwise math (expm1,
atan2, hypot, xlogy, nan_to_num, ...), reductions (amax, aminmax, nansum, count_nonzero, ...),
small linear algebra (dot, addmm, kron, cross, norm, ...), layout (tensor_split, hstack,
rot90, diff, take, ...) and the `Tensor.new_*` constructors. Every backend runs them and
autodiff differentiates them.

dtypes follow torch: float-only ops compute integer input in the default float and float16
in float32, rounded once. Branching formulas feed each branch only the elements it computes,
so a branch not taken puts no NaN into the gradient. (`erfc` is left out: as `1 - erf` it
would be 0 in the tails where torch gives the tail value.)
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import NamedTuple

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import full, tensor as _tensor
from .dispatch import DispatchTensor
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import (METHODS, as_tensor, binary, cat, clamp, expand, floating, gather,
                         matmul, shape_args, t as _t, to, transpose, where)
from .layout import diagonal, flip, movedim, pad
from .mathops import atan, const, copysign, float_pair, isinf, isnan, tensor_arg
from .ops import BinaryOp
from .tensor import Tensor
from .amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

_B = BinaryOp
__all__: list = []


def exporter(namespace: dict, names: list):
    """The `_export` decorator of a module of composites: it registers the decorated function
    in `namespace` and `names` (the module's globals and `__all__`) under its name and
    `aliases` and, with `method`, as `Tensor.<name>`; a name Tensor already has is left
    alone."""
    def _export(*aliases: str, method: bool = True, function: bool = True):
        def register(fn):
            for n in (fn.__name__, *aliases):
                if function:
                    namespace[n] = fn
                    names.append(n)
                if method and n not in METHODS and not hasattr(Tensor, n):
                    METHODS[n] = fn
                    setattr(Tensor, n, fn)
            return fn
        return register
    return _export


_export = exporter(globals(), __all__)


def _float_fn(fn):
    """`fn(x)`, written for float32/float64, with torch's dtype rules (integers and bools in
    the default float, float16 in float32 rounded once)."""
    def op(input):  # noqa: A002 - torch's name
        x = floating(tensor_arg(fn.__name__, input))
        if x.dtype is dt.float16:
            return fn(x.to(dt.float32)).to(dt.float16)
        return fn(x)
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _float_pair_fn(fn):
    """`fn(a, b)` over two operands promoted to one float dtype (float16 computed in float32)."""
    def op(input, other):  # noqa: A002 - torch's name
        a, b = float_pair(fn.__name__, input, other)
        if a.dtype is dt.float16:
            return fn(a.to(dt.float32), b.to(dt.float32)).to(dt.float16)
        return fn(a, b)
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _float_input(op: str, input, dtype) -> Tensor:  # noqa: A002 - torch's name
    """`input` as a tensor (cast to `dtype` when given) that must be floating point."""
    x = tensor_arg(op, input)
    if dtype is not None:
        x = to(x, dt.as_dtype(dtype))
    if not x.dtype.is_float:
        raise DTypeError(f"{op}: needs a floating-point tensor, got {x.dtype.name} of shape "
                         f"{x.shape}")
    return x


def _safe(cond: Tensor, x: Tensor, safe) -> Tensor:
    return where(cond, x, safe)


# ---------------------------------------------------------------------- elementwise
_EXPM1_TAYLOR = [1.0 / math.factorial(k) for k in range(18, 0, -1)]  # x^18/18! .. x/1!


@_export()
@_float_fn
def expm1(x):
    """`exp(x) - 1`, accurate near 0 (a Taylor polynomial for |x| < 0.5)."""
    small = x.abs() < 0.5
    xs = _safe(small, x, 0.0)
    poly = xs * _EXPM1_TAYLOR[0]
    for c in _EXPM1_TAYLOR[1:]:
        poly = (poly + c) * xs
    return where(small, poly, _safe(small, 1.0, x).exp() - 1.0)


@_export()
@_float_fn
def log1p(x):
    """`log(1 + x)`, accurate near 0: for |x| < 0.5 the series of `2 atanh(s)`, s = x / (2 + x)
    (|s| < 1/3; terms to s^(2k+1) until they fall below the dtype's precision), which needs
    no `log` near 1 (a GPU's log is only absolutely accurate there: WGSL allows 2^-21, which
    made log1p(-1e-6) 1% off on wgpu); elsewhere `log(u) * x / (u - 1)` with u = 1 + x."""
    small = x.abs() < 0.5
    xs = _safe(small, x, 0.0)
    sv = xs / (xs + 2.0)
    s2 = sv * sv
    terms = 27 if x.dtype is dt.float64 else 13    # s^(2k+1) / (2k+1) with |s| < 1/3
    acc = None
    for k in range(terms, -1, -1):
        c = 1.0 / (2 * k + 1)
        acc = c if acc is None else acc * s2 + c
    series = sv * acc * 2.0
    u = x + 1.0
    ok = (u != 0) & (u < math.inf) & (u != 1.0)
    us = _safe(ok, u, 2.0)
    corr = us.log() * (_safe(ok, x, 1.0) / (us - 1.0))  # log(u) * x / (u - 1): exact-ish
    return where(small, series, where(ok, corr, where(u == 1.0, x, u.log())))


@_export("arctan2")
@_float_pair_fn
def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi], with torch's signed zeros and infinities."""
    y, x = (expand(v, sh.broadcast("atan2", y.shape, x.shape)) for v in (y, x))
    cond = x.abs() >= y.abs()
    ya, xa = _safe(cond, y, 0.0), _safe(cond, x, 1.0)
    ta = atan(ya / where(xa == 0, 1.0, xa))
    neg_x = copysign(const(xa, 1.0), xa) < 0
    a = copysign(where(neg_x, ta + copysign(const(ya, math.pi), ya), ta), ya)  # y's sign
    yb, xb = _safe(cond, 1.0, y), _safe(cond, 0.0, x)
    b = copysign(const(yb, math.pi / 2), yb) - atan(xb / yb)
    out = where(cond, a, b)
    both_inf = isinf(x) & isinf(y)
    corner = copysign(where(x > 0, const(x, math.pi / 4), const(x, 3 * math.pi / 4)), y)
    return where(both_inf, corner, out)


@_export()
@_float_pair_fn
def hypot(x, y):
    """`sqrt(x**2 + y**2)` without overflow or underflow in the squares."""
    a, b = x.abs(), y.abs()
    ge = a >= b
    m, n = where(ge, a, b), where(ge, b, a)
    zero = m == 0
    r = n / where(zero, 1.0, m)
    out = m * (r * r + 1.0).sqrt()
    return where(isinf(a) | isinf(b), math.inf, out)


def _bools(op: str, a, b):
    a, b = tensor_arg(op, a), tensor_arg(op, b)
    return to(a, dt.bool_), to(b, dt.bool_)


@_export()
def logical_and(input, other) -> Tensor:  # noqa: A002 - torch's name
    """Elementwise `input and other`, each taken as a truth value; a bool tensor."""
    return binary(_B.BITAND, *_bools("logical_and", input, other))


@_export()
def logical_or(input, other) -> Tensor:  # noqa: A002 - torch's name
    """Elementwise `input or other`, each taken as a truth value; a bool tensor."""
    return binary(_B.BITOR, *_bools("logical_or", input, other))


@_export()
def logical_xor(input, other) -> Tensor:  # noqa: A002 - torch's name
    """Elementwise `input xor other`, each taken as a truth value; a bool tensor."""
    return binary(_B.NE, *_bools("logical_xor", input, other))


@_export()
def sgn(input) -> Tensor:  # noqa: A002 - torch's name
    """The sign of each element (-1, 0 or 1): torch's `sgn`, which for real tensors is `sign`."""
    return tensor_arg("sgn", input).sign()


@_export()
def frac(input) -> Tensor:  # noqa: A002 - torch's name
    """The fractional part `x - trunc(x)`, with x's sign; floating-point tensors only."""
    x = tensor_arg("frac", input)
    if not x.dtype.is_float:
        raise DTypeError(f"frac: needs a floating-point tensor, got {x.dtype.name} of shape "
                         f"{x.shape}")
    return x - x.trunc()


@_export()
@_float_fn
def deg2rad(x):
    """Degrees to radians."""
    return x * (math.pi / 180.0)


@_export()
@_float_fn
def rad2deg(x):
    """Radians to degrees."""
    return x * (180.0 / math.pi)


@_export()
def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:  # noqa: A002
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the
    dtype's largest and lowest finite values); integer tensors are returned unchanged."""
    x = tensor_arg("nan_to_num", input)
    if not x.dtype.is_float:
        return x
    fi = np.finfo(x.dtype.np)
    hi = float(fi.max) if posinf is None else float(posinf)
    lo = float(fi.min) if neginf is None else float(neginf)
    out = where(x == math.inf, const(x, hi), x)
    out = where(x == -math.inf, const(x, lo), out)
    return where(isnan(x), const(x, float(nan)), out)


@_export()
@_float_pair_fn
def xlogy(x, y):
    """`x * log(y)`, 0 where x is 0 (unless y is NaN)."""
    x, y = (expand(v, sh.broadcast("xlogy", x.shape, y.shape)) for v in (x, y))
    zero = (x == 0) & ~isnan(y)
    return where(zero, 0.0, x * where(zero, 1.0, y).log())


@_export()
def logit(input, eps=None) -> Tensor:  # noqa: A002 - torch's name
    """`log(x / (1 - x))`; with `eps`, x is first clamped to [eps, 1 - eps]."""
    def f(x):
        if eps is not None:
            x = clamp(x, float(eps), 1.0 - float(eps))
        return (x / (1.0 - x)).log()
    f.__name__ = "logit"
    return _float_fn(f)(input)


@_export()
def float_power(input, exponent) -> Tensor:  # noqa: A002 - torch's name
    """`input ** exponent` computed in float64 (as torch; devices without float64 raise)."""
    ops = [v for v in (input, exponent) if isinstance(v, DispatchTensor)]
    if not ops:
        raise DTypeError("float_power: expected at least one lazyt.Tensor")
    for v in (input, exponent):
        if not isinstance(v, (DispatchTensor, numbers.Number)):
            raise DTypeError(f"float_power: expected a tensor or a number, got "
                             f"{type(v).__name__}")
    a, b = (to(tensor_arg("float_power", v), dt.float64) if isinstance(v, DispatchTensor)
            else float(v) for v in (input, exponent))
    return binary(_B.POW, a, b)


@_export()
def clamp_min(input, min) -> Tensor:  # noqa: A002 - torch's names
    """`clamp(input, min=min)`."""
    return clamp(tensor_arg("clamp_min", input), min=min)


@_export()
def clamp_max(input, max) -> Tensor:  # noqa: A002 - torch's names
    """`clamp(input, max=max)`."""
    return clamp(tensor_arg("clamp_max", input), max=max)


clip = clamp  # torch's alias (Tensor.clip exists already)
__all__.append("clip")


# ---------------------------------------------------------------------- reductions
class MinMax(NamedTuple):
    """`(min, max)`, as torch's aminmax returns them."""
    min: Tensor
    max: Tensor


@_export()
def aminmax(input, *, dim=None, keepdim: bool = False) -> MinMax:  # noqa: A002
    """`(amin, amax)` over `dim` (an int; all dims when None)."""
    x = tensor_arg("aminmax", input)
    if dim is not None and not isinstance(dim, numbers.Integral):
        raise InvalidArgumentError(f"aminmax: dim must be an int or None, got {dim!r}")
    if dim is None and keepdim:
        return MinMax(x.amin(None, keepdim=True), x.amax(None, keepdim=True))
    return MinMax(x.amin(dim, keepdim=keepdim), x.amax(dim, keepdim=keepdim))


@_export()
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The sum over `dim`, NaN counted as zero."""
    x = tensor_arg("nansum", input)
    if x.dtype.is_float:
        x = where(isnan(x), 0.0, x)
    return x.sum(dim, keepdim=keepdim, dtype=dtype) if dtype is not None else \
        x.sum(dim, keepdim=keepdim)


@_export()
def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The mean over `dim` of the elements that are not NaN (NaN where all are)."""
    x = _float_input("nanmean", input, dtype)
    ok = ~isnan(x)
    total = where(ok, x, 0.0).sum(dim, keepdim=keepdim)
    return total / to(ok, x.dtype).sum(dim, keepdim=keepdim)


@_export()
def count_nonzero(input, dim=None) -> Tensor:  # noqa: A002 - torch's name
    """The number of non-zero elements over `dim` (an int or a tuple; all when None), int64."""
    x = tensor_arg("count_nonzero", input)
    return to(binary(_B.NE, x, 0), dt.int64).sum(dim)


# ---------------------------------------------------------------------- linear algebra
def _rank(op: str, x: Tensor, n: int, what: str) -> None:
    if x.ndim != n:
        raise ShapeError(f"{op}: {what} must be {n}-D, got shape {x.shape}")


def _same_dtype(op: str, a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise DTypeError(f"{op}: expected both operands to have the same dtype, got "
                         f"{a.dtype.name} and {b.dtype.name}")


@_export()
def dot(input, tensor) -> Tensor:  # noqa: A002 - torch's names
    """The inner product of two 1-D tensors of one dtype and length."""
    a, b = tensor_arg("dot", input), tensor_arg("dot", tensor)
    _rank("dot", a, 1, "input"), _rank("dot", b, 1, "tensor")
    _same_dtype("dot", a, b)
    if a.shape != b.shape:
        raise ShapeError(f"dot: inconsistent tensor sizes {a.shape} and {b.shape}")
    if a.dtype is dt.bool_:
        raise DTypeError("dot: not supported for bool tensors")
    return to((a * b).sum(), a.dtype)


@_export("ger")
def outer(input, vec2) -> Tensor:  # noqa: A002 - torch's names
    """The outer product `input[i] * vec2[j]` of two 1-D tensors."""
    a, b = tensor_arg("outer", input), tensor_arg("outer", vec2)
    _rank("outer", a, 1, "input"), _rank("outer", b, 1, "vec2")
    return a.reshape(a.shape[0], 1) * b.reshape(1, b.shape[0])


@_export()
def mv(input, vec) -> Tensor:  # noqa: A002 - torch's names
    """The product of a 2-D matrix and a 1-D vector."""
    a, v = tensor_arg("mv", input), tensor_arg("mv", vec)
    _rank("mv", a, 2, "input"), _rank("mv", v, 1, "vec")
    if a.shape[1] != v.shape[0]:
        raise ShapeError(f"mv: size mismatch, input {a.shape}, vec {v.shape}")
    return matmul(a, v)


@_export()
def bmm(input, mat2) -> Tensor:  # noqa: A002 - torch's names
    """Batched matrix product of (b, n, m) and (b, m, p) tensors (no broadcasting)."""
    a, b = tensor_arg("bmm", input), tensor_arg("bmm", mat2)
    _rank("bmm", a, 3, "input"), _rank("bmm", b, 3, "mat2")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ShapeError(f"bmm: shapes {a.shape} and {b.shape} cannot be multiplied")
    return matmul(a, b)


def _scaled_sum(op: str, input, prod: Tensor, beta, alpha) -> Tensor:
    x = tensor_arg(op, input)
    sh.broadcast(op, x.shape, prod.shape)
    scaled = prod if alpha == 1 else prod * alpha
    if beta == 0:  # torch ignores input then (NaN and inf in it do not propagate)
        return expand(scaled, sh.broadcast(op, x.shape, prod.shape))
    return (x if beta == 1 else x * beta) + scaled


@_export()
def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002 - torch's names
    """`beta * input + alpha * (mat1 @ mat2)` for 2-D mat1, mat2 (input broadcasts)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, addmm, input, mat1, mat2, beta=beta, alpha=alpha)
    a, b = tensor_arg("addmm", mat1), tensor_arg("addmm", mat2)
    _rank("addmm", a, 2, "mat1"), _rank("addmm", b, 2, "mat2")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"addmm: mat1 {a.shape} and mat2 {b.shape} cannot be multiplied")
    return _scaled_sum("addmm", input, matmul(a, b), beta, alpha)


@_export()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """`beta * input + alpha * bmm(batch1, batch2)` (input broadcasts)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, baddbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@_export()
def trace(input) -> Tensor:  # noqa: A002 - torch's name
    """The sum of a 2-D tensor's main diagonal (integers sum in int64)."""
    x = tensor_arg("trace", input)
    _rank("trace", x, 2, "input")
    return diagonal(x).sum()


@_export()
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """Matrices whose `offset` diagonal (in dims dim1, dim2 of the result) holds the last dim
    of `input`; the rest is zero."""
    x = tensor_arg("diag_embed", input)
    if x.ndim == 0:
        x = x.reshape(1)
    offset = operator.index(offset)
    nd = x.ndim + 1
    d1, d2 = sh.normalize_dim("diag_embed", dim1, nd), sh.normalize_dim("diag_embed", dim2, nd)
    if d1 == d2:
        raise InvalidArgumentError(f"diag_embed: diagonal dimensions cannot be identical "
                                   f"{dim1}, {dim2}")
    n = x.shape[-1]
    m = n + abs(offset)
    lo = max(offset, 0)
    xp = pad(x, (lo, m - n - lo)) if m != n else x
    rows = xp.reshape(*x.shape[:-1], 1, m)
    mask = np.subtract.outer(np.arange(m), np.arange(m)) == -offset  # j - i == offset
    out = where(as_tensor(mask, x), rows, const(rows, 0)) if rows.dtype is not dt.bool_ \
        else rows & as_tensor(mask, x)
    return movedim(out, (-2, -1), (d1, d2))


@_export(method=True)
def cross(input, other, dim=None) -> Tensor:  # noqa: A002 - torch's names
    """The cross product of 3-vectors along `dim` (None: the first dim of size 3)."""
    a, b = tensor_arg("cross", input), tensor_arg("cross", other)
    shape = sh.broadcast("cross", a.shape, b.shape)
    a, b = expand(a, shape), expand(b, shape)
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dimension of size 3 in input of shape {shape}")
    d = sh.normalize_dim("cross", dim, len(shape))
    if shape[d] != 3:
        raise ShapeError(f"cross: dim {dim} must have size 3, got shape {shape}")
    a0, a1, a2 = (a.narrow(d, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(d, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@_export()
def kron(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The Kronecker product: block (i, ...) of the result is `input[i, ...] * other`."""
    a, b = tensor_arg("kron", input), tensor_arg("kron", other)
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    ai = a.reshape(tuple(v for s in sa for v in (s, 1)))
    bi = b.reshape(tuple(v for s in sb for v in (1, s)))
    return (ai * bi).reshape(tuple(x * y for x, y in zip(sa, sb)))


def _norm_dims(x: Tensor, dim):
    if dim is None:
        return None
    return (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)


@_export()
def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:  # noqa: A002
    """The vector p-norm over `dim` (all elements when None): "fro" and 2 are the Euclidean
    norm, inf / -inf the largest / smallest magnitude, 0 the count of non-zeros."""
    x = _float_input("norm", input, dtype)
    dims = _norm_dims(x, dim)
    if p == "fro" or p is None:
        p = 2.0
    if isinstance(p, str) or not isinstance(p, numbers.Real):
        raise InvalidArgumentError(f"norm: p={p!r} is not supported (use a number, 'fro', "
                                   "inf or -inf)")
    p = float(p)
    a = x.abs()
    if p == math.inf:
        return a.amax(dims, keepdim=keepdim)
    if p == -math.inf:
        return a.amin(dims, keepdim=keepdim)
    if p == 0:
        return to(a != 0, x.dtype).sum(dims, keepdim=keepdim)
    if p == 1:
        return a.sum(dims, keepdim=keepdim)
    s = x * x if p == 2 else where(a == 0, 1.0, a) ** p * to(a != 0, x.dtype)
    s = s.sum(dims, keepdim=keepdim)
    zero = s == 0
    root = _safe(zero, 1.0, s).sqrt() if p == 2 else _safe(zero, 1.0, s) ** (1.0 / p)
    return where(zero, 0.0, root)


@_export(method=True)
def dist(input, other, p=2) -> Tensor:  # noqa: A002 - torch's names
    """`norm(input - other, p)` (the two broadcast)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, dist, input, other, p)
    return norm(binary(_B.SUB, tensor_arg("dist", input), tensor_arg("dist", other)), p)


# ---------------------------------------------------------------------- layout
@_export()
def ravel(input) -> Tensor:  # noqa: A002 - torch's name
    """The elements as a 1-D tensor."""
    return tensor_arg("ravel", input).reshape(-1)


@_export("swapdims")
def swapaxes(input, axis0: int, axis1: int) -> Tensor:  # noqa: A002 - torch's name
    """`transpose(input, axis0, axis1)`."""
    return transpose(tensor_arg("swapaxes", input), axis0, axis1)


# function forms of methods Tensor already has
t = _t
broadcast_to = expand
__all__ += ["t", "broadcast_to"]


@_export()
def unbind(input, dim: int = 0) -> tuple:  # noqa: A002 - torch's name
    """The slices along `dim`, that dim removed."""
    x = tensor_arg("unbind", input)
    d = sh.normalize_dim("unbind", dim, x.ndim)
    return tuple(x.narrow(d, i, 1).squeeze(d) for i in range(x.shape[d]))


@_export()
def tensor_split(input, indices_or_sections, dim: int = 0) -> tuple:  # noqa: A002
    """Split along `dim` into `n` near-equal parts (the first `size % n` one larger) or at the
    given indices (clamped to the size, as torch)."""
    x = tensor_arg("tensor_split", input)
    d = sh.normalize_dim("tensor_split", dim, x.ndim)
    size = x.shape[d]
    spec = indices_or_sections
    if isinstance(spec, DispatchTensor):
        spec = tensor_arg("tensor_split", spec)
        if spec.dtype.is_float or spec.dtype is dt.bool_ or spec.ndim > 1:
            raise DTypeError(f"tensor_split: a tensor of sections or indices must be a 0-D "
                             f"or 1-D integer tensor, got {spec.dtype.name} {spec.shape}")
        spec = spec.numpy().tolist()
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        n = int(spec)
        if n <= 0:
            raise InvalidArgumentError(f"tensor_split: number of sections must be larger "
                                       f"than 0, got {n}")
        q, r = divmod(size, n)
        bounds = np.cumsum([0] + [q + 1] * r + [q] * (n - r)).tolist()
    else:
        try:
            idx = [operator.index(i) for i in spec]
        except TypeError:
            raise DTypeError(f"tensor_split: expected an int or a sequence of ints, got "
                             f"{indices_or_sections!r}") from None
        bounds = [0] + [min(max(i + size if i < 0 else i, 0), size) for i in idx] + [size]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = max(hi, lo)
        out.append(x.narrow(d, lo, hi - lo))
    return tuple(out)


def _tensors(op: str, tensors) -> list:
    if isinstance(tensors, DispatchTensor) or not len(tensors):
        raise InvalidArgumentError(f"{op}: expects a non-empty sequence of tensors")
    return [tensor_arg(op, t) for t in tensors]


def _atleast(x: Tensor, n: int) -> Tensor:
    if x.ndim >= n:
        return x
    if n == 3 and x.ndim == 2:
        return x.reshape(*x.shape, 1)
    if n == 3 and x.ndim == 1:
        return x.reshape(1, x.shape[0], 1)
    return x.reshape((1,) * (n - x.ndim) + x.shape)


@_export(method=False)
def hstack(tensors) -> Tensor:
    """Concatenate column-wise (along dim 0 for 1-D tensors, else dim 1)."""
    ts = [_atleast(t, 1) for t in _tensors("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


@_export(method=False)
def vstack(tensors) -> Tensor:
    """Concatenate row-wise, 1-D tensors as rows."""
    return cat([_atleast(t, 2) for t in _tensors("vstack", tensors)], 0)


@_export(method=False)
def dstack(tensors) -> Tensor:
    """Concatenate depth-wise (along dim 2, after making each at least 3-D)."""
    return cat([_atleast(t, 3) for t in _tensors("dstack", tensors)], 2)


@_export(method=False)
def column_stack(tensors) -> Tensor:
    """Stack 1-D tensors as columns (and concatenate 2-D ones) along dim 1."""
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t
          for t in _tensors("column_stack", tensors)]
    return cat(ts, 1)


@_export(method=False)
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape."""
    ts = [tensor_arg("broadcast_tensors", t) for t in tensors]
    shape = sh.broadcast("broadcast_tensors", *(t.shape for t in ts))
    return tuple(expand(t, shape) for t in ts)


@_export()
def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002 - torch's name
    """Rotate by 90 degrees `k` times, from the first toward the second of `dims`."""
    x = tensor_arg("rot90", input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise InvalidArgumentError(f"rot90: expected total rotation dims == 2, got {dims}")
    if x.ndim < 2:
        raise ShapeError(f"rot90: expected total dims >= 2, got shape {x.shape}")
    d0, d1 = (sh.normalize_dim("rot90", d, x.ndim) for d in dims)
    if d0 == d1:
        raise InvalidArgumentError(f"rot90: rotation dims must differ, got {dims}")
    k = operator.index(k) % 4
    if k == 1:
        return transpose(flip(x, (d1,)), d0, d1)
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return flip(transpose(x, d0, d1), (d1,))
    return x


@_export()
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:  # noqa: A002
    """The `n`-th forward difference along `dim` (bool tensors: `!=`), after concatenating
    `prepend` and `append`."""
    x = tensor_arg("diff", input)
    if x.ndim == 0:
        raise ShapeError("diff: expects a tensor of rank >= 1, got a 0-d tensor")
    n = operator.index(n)
    if n < 0:
        raise InvalidArgumentError(f"diff: order must be non-negative, got {n}")
    d = sh.normalize_dim("diff", dim, x.ndim)
    parts = [tensor_arg("diff", v) for v in (prepend,) if v is not None] + [x] + \
        [tensor_arg("diff", v) for v in (append,) if v is not None]
    if len(parts) > 1:
        x = cat(parts, d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = binary(_B.NE, hi, lo) if x.dtype is dt.bool_ else hi - lo
    return x


def _index(op: str, index, like: Tensor) -> Tensor:
    i = tensor_arg(op, index) if isinstance(index, DispatchTensor) else as_tensor(
        np.asarray(index), like)
    if i.dtype.is_float or i.dtype is dt.bool_:
        raise DTypeError(f"{op}: indices must be an integer tensor, got {i.dtype.name}")
    return to(i, dt.int64)


@_export()
def take(input, index) -> Tensor:  # noqa: A002 - torch's name
    """The elements of `input`, taken as 1-D, at `index` (negative counts from the end);
    the result has `index`'s shape."""
    x = tensor_arg("take", input)
    idx = _index("take", index, x)
    n = x.numel()
    flat_idx = idx.reshape(-1)
    flat_idx = where(flat_idx < 0, flat_idx + n, flat_idx)
    return gather(x.reshape(-1), 0, flat_idx).reshape(idx.shape)


@_export()
def take_along_dim(input, indices, dim=None) -> Tensor:  # noqa: A002 - torch's name
    """`gather` along `dim` with `input` and `indices` broadcast in the other dims; with
    dim=None, both are taken as 1-D."""
    x = tensor_arg("take_along_dim", input)
    idx = _index("take_along_dim", indices, x)
    if dim is None:
        return gather(x.reshape(-1), 0, idx.reshape(-1))
    if x.ndim != idx.ndim:
        raise ShapeError(f"take_along_dim: input {x.shape} and indices {idx.shape} should "
                         "have the same number of dimensions")
    d = sh.normalize_dim("take_along_dim", dim, x.ndim)
    xs = list(x.shape)
    ids = list(idx.shape)
    xs[d] = ids[d] = 1
    common = list(sh.broadcast("take_along_dim", tuple(xs), tuple(ids)))
    x = expand(x, tuple(common[:d] + [x.shape[d]] + common[d + 1:]))
    idx = expand(idx, tuple(common[:d] + [idx.shape[d]] + common[d + 1:]))
    return gather(x, d, idx)


# ---------------------------------------------------------------------- Tensor.new_*
def _like(self: Tensor, dtype, device):
    return (self.dtype if dtype is None else dt.as_dtype(dtype),
            self.device if device is None else device)


@_export(function=False)
def new_full(self, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`, by default of this tensor's dtype and
    device."""
    d, dev = _like(self, dtype, device)
    return full(shape_args((size,)), fill_value, dtype=d, device=dev,
                requires_grad=requires_grad)


@_export(function=False)
def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Zeros of `size`, by default of this tensor's dtype and device."""
    return new_full(self, shape_args(size), 0, dtype=dtype, device=device,
                    requires_grad=requires_grad)


@_export(function=False)
def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` whose values are not to be relied on, by default of this tensor's
    dtype and device (lazyt fills it with zeros, so reading it is deterministic)."""
    return new_full(self, shape_args(size), 0, dtype=dtype, device=device,
                    requires_grad=requires_grad)


@_export(function=False)
def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Ones of `size`, by default of this tensor's dtype and device."""
    return new_full(self, shape_args(size), 1, dtype=dtype, device=device,
                    requires_grad=requires_grad)


@_export(function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A copy of `data` as a tensor, by default of this tensor's dtype and device."""
    d, dev = _like(self, dtype, device)
    if isinstance(data, DispatchTensor):
        data = tensor_arg("new_tensor", data).detach().numpy()
    return _tensor(np.asarray(data), dtype=d, device=dev, requires_grad=requires_grad)
