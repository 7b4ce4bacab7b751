"""torch's elementwise math that lazyt's primitive op set lacks (rounding, the inverse and
hyperbolic trig functions, fmod, lerp, logaddexp, NaN/inf tests, isclose, rounding division),
as composites of the differentiable ops: every backend runs them, fused like any elementwise
chain, and autodiff differentiates them.

dtypes follow torch: integer and bool input of a float-only op is computed in the default
float, float16 in float32 and rounded once. Where a formula has branches, each branch is fed
only the elements it computes (`_piecewise`), so a branch not taken puts no NaN into the
gradient. atan (and asin/acos through it) is Cephes' rational approximation: float64 values
are within a few ulp of numpy's, their derivatives within ~1e-15 relative.
"""
from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from . import dtype as dt
from . import promotion as pr
from . import shape as sh
from .creation import full
from .dispatch import DispatchTensor, common_device
from .errors import DivisionByZeroError, DTypeError, InvalidArgumentError
from .functional import METHODS, as_tensor, binary, floating, method, to, where
from .ops import BinaryOp
from .tensor import Tensor

__all__ = [
    "trunc", "round", "log2", "log10", "exp2", "tan", "sinh", "cosh", "asin", "acos", "atan",
    "asinh", "acosh", "atanh", "copysign", "fmod", "lerp", "logaddexp", "isnan", "isinf",
    "isfinite", "isclose", "allclose", "div", "floor_divide",
]

_B = BinaryOp
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_INF = math.inf
_BIG = 1e8  # above this, asinh/acosh are log(2x): x*x would overflow, the rest is < 1e-16


# ---------------------------------------------------------------------- shared machinery
def tensor_arg(op: str, x) -> Tensor:
    """`x` as a `Tensor` (a `DispatchTensor` is wrapped); `DTypeError` for anything else."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, DispatchTensor):
        return Tensor.from_dispatch(x)
    raise DTypeError(f"{op}: expected a lazyt.Tensor, got {type(x).__name__}")


def float_pair(op: str, a, b) -> tuple:
    """`a` and `b` (tensors or Python numbers, at least one tensor) as tensors of one float
    dtype (integers compute in the default float), on one device, broadcastable."""
    d = promoted(op, a, b)
    if not d.is_float:
        d = dt.DEFAULT_FLOAT
    tensors = [tensor_arg(op, v) for v in (a, b) if isinstance(v, DispatchTensor)]
    if len(tensors) == 2:
        common_device(op, tensors)
        sh.broadcast(op, tensors[0].shape, tensors[1].shape)
    like = tensors[0]
    return tuple(to(tensor_arg(op, v), d) if isinstance(v, DispatchTensor)
                 else as_tensor(float(v), like, d) for v in (a, b))


def promoted(op: str, a, b) -> dt.DType:
    """The dtype `binary` computes `a op b` in (tensors promote, Python numbers are weak)."""
    for v in (a, b):
        if not isinstance(v, (DispatchTensor, bool, int, float, np.generic)):
            raise DTypeError(f"{op}: expected a tensor or a Python number, got "
                             f"{type(v).__name__}")
    if isinstance(a, DispatchTensor) and isinstance(b, DispatchTensor):
        return pr.result_type(a, b)   # (0-d tensors count by category, as torch)
    t, s = (a, b) if isinstance(a, DispatchTensor) else (b, a)
    if not isinstance(t, DispatchTensor):
        raise DTypeError(f"{op}: expected at least one lazyt.Tensor, got "
                         f"{type(a).__name__} and {type(b).__name__}")
    return dt.promote_scalar(t.dtype, dt.scalar_kind(s.item() if isinstance(s, np.generic)
                                                     else s))


def const(like: Tensor, value) -> Tensor:
    """A tensor of `like`'s shape, dtype and device filled with `value` (so a constant keeps
    the precision of float64, which a Python-scalar `where` branch pair would not)."""
    return full(like.shape, value, dtype=like.dtype, device=like.device)


def _piecewise(cond: Tensor, x: Tensor, if_true, if_false, safe_true=1.0,
               safe_false=1.0) -> Tensor:
    """`where(cond, if_true(x), if_false(x))`, each branch computed on `x` only where it is
    taken (elsewhere on a safe value), so the other branch adds no NaN to the gradient."""
    return where(cond, if_true(where(cond, x, safe_true)),
                 if_false(where(cond, safe_false, x)))


def _odd(f, x: Tensor) -> Tensor:
    """An odd function from `f` on x >= 0: -f(-x) for x < 0. The gradient at 0 is f'(0)."""
    neg = x < 0
    r = f(where(neg, -x, x))
    return where(neg, -r, r)


def _log1p(y: Tensor) -> Tensor:
    """log(1 + y), accurate near 0: log(u) for u = 1 + y rounded, plus the rounding error
    `(y - (u - 1)) / u` to first order. Its gradient is 1 / u."""
    u = y + 1.0
    ok = (u != 0) & (u < _INF)
    return u.log() + where(ok, y - (u - 1.0), 0.0) / where(ok, u, 1.0)


def _polevl(z: Tensor, coefs) -> Tensor:
    """c0 * z^n + ... + cn by Horner's rule."""
    out = z * coefs[0] + coefs[1]
    for c in coefs[2:]:
        out = out * z + c
    return out


def _float_math(fn):
    """Register `fn(x)`, written for float32/float64 input, as `lazyt.<name>` and
    `Tensor.<name>` with torch's dtype rules: integers and bools are computed in the default
    float, float16 in float32 rounded once."""
    name = fn.__name__

    def op(x):
        x = floating(tensor_arg(name, x))
        if x.dtype is dt.float16:
            return fn(x.to(dt.float32)).to(dt.float16)
        return fn(x)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    op.__module__ = __name__
    return method(function=False)(op)


# ---------------------------------------------------------------------- rounding
@method(function=False)
def trunc(x) -> Tensor:
    """Round toward zero (integers unchanged); the gradient is zero, as torch's."""
    x = tensor_arg("trunc", x)
    if not x.dtype.is_float:
        return x
    return where(x < 0, x.ceil(), x.floor())


def _round_half_even(x: Tensor) -> Tensor:
    f = x.floor()
    d = x - f  # exact; 0.5 only at a tie (or for x in (-0.5, 0), where f + 1 = 0 is right)
    up = (d > 0.5) | ((d == 0.5) & (f % 2.0 == 1.0))
    r = where(up, f + 1.0, f)
    return where(r == 0, x * 0.0, r)  # -0.3 rounds to -0.0, as in torch


@method(function=False)
def round(x, decimals: int = 0) -> Tensor:  # noqa: A001 - torch's name
    """Round to the nearest integer, ties to even (torch's `round`); `decimals` rounds
    `x * 10**decimals` and scales back, as torch does. Integers are returned unchanged."""
    x = tensor_arg("round", x)
    decimals = int(decimals)
    if not x.dtype.is_float:
        if decimals:
            raise DTypeError(f"round: decimals={decimals} needs a floating-point tensor, got "
                             f"{x.dtype.name} of shape {x.shape}")
        return x
    if x.dtype is dt.float16:
        return round(x.to(dt.float32), decimals).to(dt.float16)
    if decimals == 0:
        return _round_half_even(x)
    scale = 10.0 ** builtins.abs(decimals)
    if decimals > 0:
        return _round_half_even(x * scale) / scale
    return _round_half_even(x / scale) * scale


# ---------------------------------------------------------------------- exp / log
@_float_math
def log2(x):
    """Base-2 logarithm."""
    return x.log() / _LN2


@_float_math
def log10(x):
    """Base-10 logarithm."""
    return x.log() / _LN10


@_float_math
def exp2(x):
    """`2 ** x`."""
    return binary(_B.POW, 2.0, x)


# ---------------------------------------------------------------------- trig
@_float_math
def tan(x):
    """Tangent, `sin(x) / cos(x)`."""
    return x.sin() / x.cos()


def _sinh_far(x: Tensor) -> Tensor:
    # e^a / 2 as h * (h / 2) with h = e^(a/2): finite wherever sinh is (e^a overflows first)
    def f(a):
        h = (a * 0.5).exp()
        return h * (h * 0.5) - (-a).exp() * 0.5
    return _odd(f, x)


def _sinh_near(x: Tensor) -> Tensor:
    t = (x * 0.5).tanh()  # sinh x = 2t / (1 - t^2): no cancellation near 0
    return t * 2.0 / (1.0 - t * t)


@_float_math
def sinh(x):
    """Hyperbolic sine."""
    return _piecewise(x.abs() < 1.0, x, _sinh_near, _sinh_far, 0.0, 1.0)


@_float_math
def cosh(x):
    """Hyperbolic cosine."""
    a = where(x < 0, -x, x)
    h = (a * 0.5).exp()
    return h * (h * 0.5) + (-a).exp() * 0.5


# Cephes' atan: |x| is reduced to [0, 0.66] (through pi/2 - atan(1/x) above tan(3pi/8),
# pi/4 + atan((x-1)/(x+1)) in between), then x + x z P(z)/Q(z) with z = x^2.
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1,
           -7.500855792314704667340e1, -1.228866684490136173410e2,
           -6.485021904942025371773e1)
_ATAN_Q = (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2,
           4.328810604912902668951e2, 4.853903996359136964868e2,
           1.945506571482613964425e2)
_T3P8 = 2.41421356237309504880
_MOREBITS = 6.123233995736765886130e-17


def _atan_nonneg(a: Tensor) -> Tensor:
    hi = a > _T3P8
    mid = (a > 0.66) & ~hi
    a_hi = where(hi, a, 1.0)
    a_mid = where(mid, a, 1.0)
    a_lo = where(hi | mid, 0.0, a)
    r = where(hi, -1.0 / a_hi, where(mid, (a_mid - 1.0) / (a_mid + 1.0), a_lo))
    z = r * r
    poly = r + r * (z * _polevl(z, _ATAN_P) / _polevl(z, _ATAN_Q))
    extra = where(hi, _MOREBITS, where(mid, 0.5 * _MOREBITS, const(a, 0.0)))
    base = where(hi, math.pi / 2, where(mid, math.pi / 4, const(a, 0.0)))
    return base + (poly + extra)


@_float_math
def atan(x):
    """Inverse tangent, in (-pi/2, pi/2)."""
    return _odd(_atan_nonneg, x)


@_float_math
def asin(x):
    """Inverse sine, `atan(x / sqrt(1 - x^2))`; NaN outside [-1, 1]."""
    return atan(x / ((1.0 - x) * (1.0 + x)).sqrt())


@_float_math
def acos(x):
    """Inverse cosine, `2 atan(sqrt((1 - x) / (1 + x)))` (accurate near both ends)."""
    return atan(((1.0 - x) / (1.0 + x)).sqrt()) * 2.0


@_float_math
def asinh(x):
    """Inverse hyperbolic sine."""
    def f(a):
        return _piecewise(a > _BIG, a, lambda b: b.log() + _LN2,
                          lambda s: _log1p(s + s * s / (1.0 + (1.0 + s * s).sqrt())), 2.0, 0.0)
    return _odd(f, x)


@_float_math
def acosh(x):
    """Inverse hyperbolic cosine; NaN below 1."""
    def near(v):
        t = v - 1.0  # exact near 1, where log(x + sqrt(x^2 - 1)) would cancel
        return _log1p(t + (t * 2.0 + t * t).sqrt())
    out = _piecewise(x > _BIG, x, lambda b: b.log() + _LN2, near, 2.0, 1.0)
    return where(x < 1.0, math.nan, out)


@_float_math
def atanh(x):
    """Inverse hyperbolic tangent, `log1p(2x / (1 - x)) / 2`; +-inf at +-1, NaN beyond."""
    return _odd(lambda a: _log1p(a * 2.0 / (1.0 - a)) * 0.5, x)


# ---------------------------------------------------------------------- two operands
@method(function=False)
def copysign(input, other) -> Tensor:  # noqa: A002 - torch's name
    """`|input|` with the sign of `other` (-0.0 counts as negative); always floating point.
    The gradient reaches `input` only, as in torch."""
    a, b = float_pair("copysign", input, other)
    neg = (b < 0) | ((b == 0) & ((1.0 / b) < 0))
    m = a.abs()
    return where(neg, -m, m)


@method(function=False)
def fmod(input, other) -> Tensor:  # noqa: A002 - torch's name
    """C's fmod: the remainder of truncated division, with the dividend's sign (`%` follows
    the divisor's). Exact: `sign(a) * (|a| mod |b|)`, a mod of non-negative operands."""
    a = tensor_arg("fmod", input)
    d = promoted("fmod", a, other)
    if d is dt.bool_:
        raise DTypeError(f"fmod: not supported for bool tensors (shape {a.shape})")
    a = to(a, d)
    b = to(tensor_arg("fmod", other), d) if isinstance(other, DispatchTensor) else other
    neg = a < 0
    r = binary(_B.MOD, where(neg, -a, a), b.abs() if isinstance(b, Tensor) else builtins.abs(b))
    return where(neg, -r, r)


@method(function=False)
def lerp(input, end, weight) -> Tensor:  # noqa: A002 - torch's name
    """`input + weight * (end - input)`, computed from `end`'s side for |weight| >= 0.5 as torch
    does (so weight 1 gives `end` exactly); `weight` is a number or a tensor."""
    start, stop = float_pair("lerp", input, end)
    diff = stop - start
    if isinstance(weight, DispatchTensor):
        w = tensor_arg("lerp", weight)
        common_device("lerp", (start, w))
        w = to(w, start.dtype) if w.dtype.is_float else to(w, dt.DEFAULT_FLOAT)
        return where(w.abs() < 0.5, start + w * diff, stop - diff * (1.0 - w))
    if not isinstance(weight, numbers.Real):
        raise DTypeError(f"lerp: weight must be a number or a tensor, got "
                         f"{type(weight).__name__}")
    w = float(weight)
    return start + diff * w if builtins.abs(w) < 0.5 else stop - diff * (1.0 - w)


@method(function=False)
def logaddexp(input, other) -> Tensor:  # noqa: A002 - torch's name
    """`log(exp(input) + exp(other))` without overflow: `max + log1p(exp(-|input - other|))`."""
    a, b = float_pair("logaddexp", input, other)
    if a.dtype is dt.float16:
        return logaddexp(a.to(dt.float32), b.to(dt.float32)).to(dt.float16)
    same = a == b  # equal infinities: a - b would be NaN
    m = binary(_B.MAXIMUM, a, b)  # ties split the gradient evenly, as sigmoid(0) = 1/2
    d = where(same, 0.0, a - b)
    return m + _log1p((-d.abs()).exp())


# ---------------------------------------------------------------------- tests on values
@method(function=False)
def isnan(x) -> Tensor:
    """True where `x` is NaN."""
    x = tensor_arg("isnan", x)
    return x != x if x.dtype.is_float else binary(_B.NE, x, x)


@method(function=False)
def isinf(x) -> Tensor:
    """True where `x` is +inf or -inf."""
    x = tensor_arg("isinf", x)
    if not x.dtype.is_float:
        return binary(_B.NE, x, x)
    return x.abs() == _INF


@method(function=False)
def isfinite(x) -> Tensor:
    """True where `x` is neither NaN nor infinite."""
    x = tensor_arg("isfinite", x)
    if not x.dtype.is_float:
        return binary(_B.EQ, x, x)
    return x.abs() < _INF


def _check_tolerances(op: str, rtol, atol) -> None:
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, numbers.Real) or v < 0:
            raise InvalidArgumentError(f"{op}: {name} must be a non-negative number, got {v!r}")


@method(function=False)
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """`|input - other| <= atol + rtol * |other|` elementwise (equal infinities are close;
    NaNs are close to each other only with `equal_nan`), as torch.isclose."""
    _check_tolerances("isclose", rtol, atol)
    d = promoted("isclose", input, other)
    a, b = float_pair("isclose", input, other)
    if d.is_int:  # integers: the difference is exact in their dtype, then compared in float
        like = a
        ia, ib = (to(tensor_arg("isclose", v), d) if isinstance(v, DispatchTensor)
                  else as_tensor(v, like, d) for v in (input, other))
        same, err = ia == ib, to((ia - ib).abs(), a.dtype)
    else:
        same, err = a == b, (a - b).abs()
    close = same | ((err <= b.abs() * float(rtol) + float(atol)) & (err < _INF))
    if equal_nan:
        close = close | ((a != a) & (b != b))
    return close


@method(function=False)
def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """Whether every element pair is `isclose`: a Python bool, so it reads the values."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


# ---------------------------------------------------------------------- division
_ROUNDING_MODES = (None, "trunc", "floor")


def div(a, b, *, rounding_mode: str | None = None) -> Tensor:
    """`a / b`: true division (integers give float32) or, with `rounding_mode`, the quotient
    rounded toward zero (`"trunc"`) or down (`"floor"`, as `//`), integers staying integers.
    A rounded quotient has a zero gradient, as in torch."""
    if rounding_mode not in _ROUNDING_MODES:
        raise InvalidArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                                   f"{rounding_mode!r}")
    if rounding_mode is None:
        return binary(_B.DIV, a, b)
    if rounding_mode == "floor":
        return binary(_B.FLOOR_DIV, a, b)
    d = promoted("div", a, b)
    if d.is_float:
        return trunc(binary(_B.DIV, a, b))
    # integers: the floor quotient of the magnitudes, negated where the signs differ
    like = a if isinstance(a, DispatchTensor) else b
    if not isinstance(b, DispatchTensor) and b == 0:
        raise DivisionByZeroError(f"div: integer division of a {d.name} tensor (shape "
                                  f"{like.shape}) by zero (rounding_mode='trunc')")
    a, b = (to(v, d) if isinstance(v, DispatchTensor) else as_tensor(v, like, d) for v in (a, b))
    q = binary(_B.FLOOR_DIV, a.abs(), b.abs())
    return where((a < 0) != (b < 0), -q, q)


def _div_method(self, o, *, rounding_mode: str | None = None) -> Tensor:
    """`x.div(o, rounding_mode=None)`: see `lazyt.div`."""
    return div(self, o, rounding_mode=rounding_mode)


_div_method.__name__ = _div_method.__qualname__ = "div"
METHODS["div"] = _div_method


def floor_divide(input, other) -> Tensor:  # noqa: A002 - torch's name
    """`input // other`: the quotient rounded down (integers stay integers)."""
    return binary(_B.FLOOR_DIV, input, other)


METHODS["floor_divide"] = floor_divide


# ---------------------------------------------------------------------- Tensor methods
def install_methods(module: str) -> None:
    """Give `Tensor` the methods `module` registered in `functional.METHODS` (Tensor took the
    methods registered when it was defined, before this module's)."""
    for name, fn in METHODS.items():
        if getattr(fn, "__module__", None) == module:
            setattr(Tensor, name, fn)


install_methods(__name__)
