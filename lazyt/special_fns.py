"""torch's special functions as composites of lazyt's elementwise ops (`lazyt.special`, and
the common ones also as `lazyt.erfc`, `Tensor.lgamma`, ...): erfc, erfcx, erfinv, lgamma,
digamma, polygamma, multigammaln, i0, i0e, ndtr, ndtri, log_ndtr, and torch.special's other
names of existing ops. Every backend runs them (float32 and float64; float16 computes in
float32) and autodiff differentiates them.

How each is computed (all constants are mathematical ones or fitted here):
- `erfc(x)`: `1 - erf(x)` for |x| < 0.5; above, `exp(-x^2) * R(t)` with `t = 2 / (2 + x)` and
  R a Chebyshev fit of `erfcx(x) / t` on t in (0, 0.8] (degree 20 for float64, within 5e-15
  relative; degree 10 for float32, within 2e-7), `exp(-x^2)` split as `exp(-h^2) *
  exp(-(x - h)(x + h))` with h = x rounded to 1/16 so that the square loses nothing; for x < 0,
  `2 - erfc(-x)`.
- `erfinv(y)`: a closed-form first guess (relative error about 2e-3) and three Newton steps on
  `erf` (quadratic: 2e-3, 4e-6, 2e-11); +-1 give +-inf, |y| > 1 NaN.
- `lgamma(x)` = log|Gamma(x)|: Stirling's series (Bernoulli terms to x^-15) at x + 8, taken
  back with the product x (x + 1) ... (x + 7); below 0.5, the reflection formula. Poles give inf.
- `digamma(x)`: the asymptotic series at x + 8 less the sum of 1 / (x + k); below 0.5 the
  reflection formula; 0 gives -inf (as torch) and negative integers NaN.
- `polygamma(n, x)`, n >= 1: the asymptotic series at x + 24 + n plus the recurrence's sum;
  for x <= -(16 + n) (beyond the recurrence's reach) NaN.
- `i0(x)`: the power series for |x| <= 25 (64 terms), the asymptotic expansion (20 terms)
  beyond.
"""
from __future__ import annotations

import math
import numbers

from . import dtype as dt
from .errors import InvalidArgumentError
from .functional import floating, where
from .mathops import tensor_arg
from .moreops import exporter
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

_ERFCX_T_F32 = (
    0.4869974896610218,
    0.24101444861503216,
    0.03917158020138665,
    0.0028202013136843134,
    -0.0003190025846469771,
    -7.76245855208673e-05,
    3.90476227027697e-06,
    2.106498430856885e-06,
    -1.1718819427403435e-07,
    -6.458870422457384e-08,
    6.551295287718348e-09,
)

_ERFCX_T_F64 = (
    0.4869974896593386,
    0.24101444861760668,
    0.039171580198019376,
    0.0028202013162590103,
    -0.00031900258801429105,
    -7.762458294647156e-05,
    3.9047589030502206e-06,
    2.1065010053373874e-06,
    -1.171915615099164e-07,
    -6.458612979380737e-08,
    6.547928073400365e-09,
    2.017647073572883e-09,
    -3.9824014850718855e-10,
    -4.9761464519588154e-11,
    2.2139412781877863e-11,
    -1.736084308932051e-13,
    -1.0262399142674897e-12,
    1.444844152600408e-13,
    3.15727403261531e-14,
    -1.237075077362761e-14,
    3.0802671681622725e-16,
)


def _float(op: str, input) -> tuple:  # noqa: A002 - torch's name
    """(x in its compute dtype, the dtype of the result): integers compute in the default
    float, float16 in float32 (rounded once at the end)."""
    x = floating(tensor_arg(op, input))
    if x.dtype is dt.float16:
        return x.to(dt.float32), dt.float16
    return x, x.dtype


def _done(y: Tensor, out_dtype) -> Tensor:
    return y if y.dtype is out_dtype else y.to(out_dtype)


def _f64(x: Tensor) -> bool:
    return x.dtype is dt.float64


def _clenshaw(u: Tensor, coef) -> Tensor:
    """sum_k coef[k] T_k(u) (Chebyshev polynomials), by Clenshaw's recurrence."""
    b1 = b2 = None
    for c in coef[:0:-1]:
        b0 = (u * 2.0 * b1 - (b2 if b2 is not None else 0.0) + c) if b1 is not None else \
            u * 0.0 + c
        b1, b2 = b0, b1
    return u * b1 - (b2 if b2 is not None else 0.0) + coef[0]


def _erfc_tail(x: Tensor) -> Tensor:
    """erfc(x) for x >= 0.5 (other elements: any finite input; the caller discards them)."""
    coef = _ERFCX_T_F64 if _f64(x) else _ERFCX_T_F32
    t = 2.0 / (x + 2.0)
    r = _clenshaw(t / 0.4 - 1.0, coef) * t
    h = (x * 16.0).floor() / 16.0
    return (-(h * h)).exp() * (-((x - h) * (x + h))).exp() * r


@_export()
def erfc(input) -> Tensor:  # noqa: A002 - torch's name
    """The complementary error function `1 - erf(x)`, accurate in the tails (erfc(10) is
    2.1e-45, not 0 - 0)."""
    x, out = _float("erfc", input)
    a = x.abs()
    small = a < 0.5
    tail = _erfc_tail(where(small, 1.0, a))
    pos = where(small, 1.0 - where(small, x, 0.0).erf(), tail)
    neg = where(small, pos, 2.0 - tail)
    return _done(where(x < 0, neg, pos), out)


@_export()
def erfcx(input) -> Tensor:  # noqa: A002 - torch's name
    """The scaled complementary error function `exp(x^2) * erfc(x)`, without overflow for
    large x (it tends to 1 / (x sqrt(pi)))."""
    x, out = _float("erfcx", input)
    big = x >= 0.5
    xb = where(big, x, 1.0)
    coef = _ERFCX_T_F64 if _f64(x) else _ERFCX_T_F32
    t = 2.0 / (xb + 2.0)
    tail = _clenshaw(t / 0.4 - 1.0, coef) * t
    xs = where(big, 0.0, x)
    low = (xs * xs).exp() * erfc(xs)
    return _done(where(big, tail, low), out)


_SQRT_PI_2 = math.sqrt(math.pi) / 2.0


@_export()
def erfinv(input) -> Tensor:  # noqa: A002 - torch's name
    """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside)."""
    y, out = _float("erfinv", input)
    a = y.abs()
    inside = a < 1.0
    ys = where(inside, y, 0.0)
    # first guess: the closed form with a = 0.147 (relative error about 2e-3)
    w = (1.0 - ys * ys).log()
    k = 2.0 / (math.pi * 0.147) + w * 0.5
    g = ((k * k - w / 0.147).sqrt() - k).sqrt() * ys.sign()
    # Newton on erf(g) = y; for |y| >= 0.5 on erfc(|g|) = 1 - |y| instead (exact for y near
    # 1, where erf(g) - y would cancel)
    tail = a >= 0.5
    c = 1.0 - where(inside, a, 0.0)
    for _ in range(3):
        step_mid = (g.erf() - ys) * _SQRT_PI_2 * (g * g).exp()
        ga = g.abs()
        step_tail = (c - erfc(ga)) * _SQRT_PI_2 * (g * g).exp() * ys.sign()
        g = g - where(tail, step_tail, step_mid)
    edge = where(a == 1.0, y.sign() * math.inf, math.nan)
    if y.requires_grad:
        # the derivative in closed form, sqrt(pi)/2 exp(erfinv(y)^2), instead of autodiff
        # through the first guess and the Newton steps (whose square roots give 0 * inf = NaN
        # at y = 0)
        g = g.detach()
        slope = _SQRT_PI_2 * (g * g).exp()
        g = g + (ys - ys.detach()) * slope
    return _done(where(inside, g, edge), out)


# ---------------------------------------------------------------------- gamma family
_SHIFT = 8
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Stirling: lgamma(z) ~ (z - 1/2) log z - z + log(2 pi)/2 + sum B_2k / (2k (2k - 1) z^(2k-1))
_STIRLING = (1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360,
             1.0 / 156, -3617.0 / 122400)
# digamma: psi(z) ~ log z - 1/(2z) - sum B_2k / (2k z^(2k))
_DIGAMMA = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12)
# Bernoulli numbers B_2, B_4, ... for polygamma's series
_BERNOULLI = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
              -3617.0 / 510, 43867.0 / 798, -174611.0 / 330)


def _frac_near(x: Tensor) -> Tensor:
    """x less its nearest integer, in [-1/2, 1/2] (exact): sin(pi x) and tan(pi x) from it
    keep their precision far from 0, where pi * x would round away the fraction."""
    return x - (x + 0.5).floor()


def _lgamma_pos(x: Tensor) -> Tensor:
    """log Gamma(x) for x >= 0.5 (by the shift to x + 8)."""
    z = x + float(_SHIFT)
    prod = x
    for k in range(1, _SHIFT):
        prod = prod * (x + float(k))
    zi = 1.0 / z
    zi2 = zi * zi
    s = None
    for c in reversed(_STIRLING):
        s = c if s is None else s * zi2 + c
    series = s * zi
    return (z - 0.5) * z.log() - z + _HALF_LOG_2PI + series - prod.log()


@_export()
def lgamma(input) -> Tensor:  # noqa: A002 - torch's name
    """log |Gamma(x)| (inf at 0 and the negative integers)."""
    x, out = _float("lgamma", input)
    low = x < 0.5
    pos = _lgamma_pos(where(low, 1.0, x))
    xl = where(low, x, 0.0)
    r = _frac_near(xl)
    s = (r * math.pi).sin().abs()
    refl = math.log(math.pi) - where(s == 0, 1.0, s).log() - _lgamma_pos(1.0 - xl)
    pole = low & (r == 0)
    y = where(low, where(pole, math.inf, refl), pos)
    return _done(where(x == -math.inf, math.inf, y), out)


def _digamma_pos(x: Tensor) -> Tensor:
    """digamma(x) for x >= 0.5."""
    z = x + float(_SHIFT)
    acc = 1.0 / x
    for k in range(1, _SHIFT):
        acc = acc + 1.0 / (x + float(k))
    zi2 = 1.0 / (z * z)
    s = None
    for c in reversed(_DIGAMMA):
        s = c if s is None else s * zi2 + c
    return z.log() - 0.5 / z - s * zi2 - acc


@_export()
def digamma(input) -> Tensor:  # noqa: A002 - torch's name
    """The logarithmic derivative of Gamma (torch's: -inf at 0, NaN at negative integers)."""
    x, out = _float("digamma", input)
    low = x < 0.5
    pos = _digamma_pos(where(low, 1.0, x))
    xl = where(low, x, 0.5)
    r = _frac_near(xl)
    t = (r * math.pi).tan()
    refl = _digamma_pos(1.0 - xl) - math.pi / where(t == 0, 1.0, t)
    bad = low & (r == 0)
    y = where(low, where(bad, where(x == 0, -math.inf, math.nan), refl), pos)
    return _done(y, out)


@_export(method=False)
def psi(input) -> Tensor:  # noqa: A002 - torch's name
    """torch.special's other name of `digamma`."""
    return digamma(input)


_PG_REACH = 16   # polygamma's recurrence reaches down to x > -(16 + n)


@_export(method=False)
def polygamma(n: int, input) -> Tensor:  # noqa: A002 - torch's names
    """The n-th derivative of digamma (n = 0: digamma itself)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise InvalidArgumentError(f"polygamma: n must be a non-negative int, got {n!r}")
    n = int(n)
    if n == 0:
        return digamma(input)
    x, out = _float("polygamma", input)
    shift = _PG_REACH + _SHIFT + n
    sign = 1.0 if n % 2 else -1.0          # (-1)^(n+1)
    fact = float(math.factorial(n))
    reach = x > -float(_PG_REACH + n)
    xs = where(reach, x, 0.5)
    acc = None
    for k in range(shift):
        term = (xs + float(k)) ** float(-(n + 1))
        acc = term if acc is None else acc + term
    z = xs + float(shift)
    zi = 1.0 / z
    series = zi ** float(n) * (float(math.factorial(n - 1)) + fact * 0.5 * zi)
    zi2 = zi * zi
    p = zi ** float(n)
    for j, b in enumerate(_BERNOULLI, start=1):
        p = p * zi2
        coef = b * math.factorial(2 * j + n - 1) / math.factorial(2 * j)
        series = series + coef * p
    y = sign * (fact * acc + series)
    pole = (xs == xs.floor()) & (xs <= 0)
    y = where(pole, math.nan if n % 2 == 0 else math.inf, y)
    return _done(where(reach, y, math.nan), out)


@_export(method=False)
def multigammaln(input, p: int) -> Tensor:  # noqa: A002 - torch's names
    """The multivariate log-gamma of dimension p: `p (p - 1) / 4 log(pi) + sum_{j<p}
    lgamma(x - j / 2)` (every element must exceed (p - 1) / 2, as torch checks)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
        raise InvalidArgumentError(f"multigammaln: p must be a positive int, got {p!r}")
    x, out = _float("multigammaln", input)
    from . import capture_state
    if not capture_state.active() and x.numel() and \
            bool((x <= (p - 1) / 2.0).any().item()):
        raise InvalidArgumentError(f"multigammaln: all elements must be greater than "
                                   f"(p - 1) / 2 = {(p - 1) / 2}")
    total = None
    for j in range(p):
        term = lgamma(x - j / 2.0)
        total = term if total is None else total + term
    return _done(total + p * (p - 1) / 4.0 * math.log(math.pi), out)


# ---------------------------------------------------------------------- Bessel I0
def _i0_parts(x: Tensor) -> tuple:
    """(series, asymptotic / exp(|x|), |x| <= 25) for I0."""
    a = x.abs()
    near = a <= 25.0
    q = where(near, a, 0.0) * 0.5
    q2 = q * q
    term = q2 * 0.0 + 1.0
    s = term
    for k in range(1, 64):
        term = term * q2 / float(k * k)
        s = s + term
    af = where(near, 26.0, a)
    inv = 1.0 / (8.0 * af)
    c, series, t = 1.0, None, None
    for k in range(0, 20):
        if k:
            c = c * (2 * k - 1) ** 2 / k
        t = c * inv ** float(k) if k else inv * 0.0 + 1.0
        series = t if series is None else series + t
    asym = series / (2.0 * math.pi * af).sqrt()
    return s, asym, near


@_export()
def i0(input) -> Tensor:  # noqa: A002 - torch's name
    """The modified Bessel function of the first kind, order 0."""
    x, out = _float("i0", input)
    s, asym, near = _i0_parts(x)
    return _done(where(near, s, asym * x.abs().exp()), out)


@_export(method=False)
def i0e(input) -> Tensor:  # noqa: A002 - torch's name
    """`exp(-|x|) * i0(x)`, without overflow."""
    x, out = _float("i0e", input)
    s, asym, near = _i0_parts(x)
    return _done(where(near, s * (-x.abs()).exp(), asym), out)


# ---------------------------------------------------------------------- the normal law
_SQRT1_2 = math.sqrt(0.5)


@_export(method=False)
def ndtr(input) -> Tensor:  # noqa: A002 - torch's name
    """The standard normal CDF, `erfc(-x / sqrt 2) / 2` (accurate in the lower tail)."""
    x, out = _float("ndtr", input)
    return _done(erfc(x * -_SQRT1_2) * 0.5, out)


@_export(method=False)
def log_ndtr(input) -> Tensor:  # noqa: A002 - torch's name
    """log of the standard normal CDF, finite far into the lower tail (through erfcx)."""
    x, out = _float("log_ndtr", input)
    z = x * -_SQRT1_2
    big = z > 1.0
    zb = where(big, z, 0.0)
    tail = erfcx(zb).log() - zb * zb - math.log(2.0)
    zn = where(big, 0.0, z)
    near = (erfc(zn) * 0.5).log()
    upper = (erfc(-zn) * -0.5).log1p()   # x > 0: log(1 - ndtr(-x)), tiny and exact
    return _done(where(big, tail, where(x > 0, upper, near)), out)


@_export(method=False)
def ndtri(input) -> Tensor:  # noqa: A002 - torch's name
    """The inverse of the standard normal CDF on [0, 1] (+-inf at the ends)."""
    p, out = _float("ndtri", input)
    x = erfinv(p * 2.0 - 1.0) * math.sqrt(2.0)
    inside = (p > 0) & (p < 1)
    ps = where(inside, p, 0.5)
    # in the tails (q = min(p, 1 - p) < 0.02) start from the asymptotic inversion
    # x = -sqrt(L - log L - log 2 pi), L = -2 log q, as 2p - 1 rounds there
    lower = ps < 0.5
    q = where(lower, ps, 1.0 - ps)
    tails = q < 0.02
    big_l = where(tails, q, 0.01).log() * -2.0
    guess = (big_l - big_l.log() - math.log(2.0 * math.pi)).sqrt()
    xs = where(tails, where(lower, -guess, guess), where(inside, x, 0.0))
    # Newton steps on log ndtr(-|x|) = log q (accurate in both tails)
    logq = q.log()
    for _ in range(3):
        xa = -xs.abs()
        dens = (xa * xa * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        step = (log_ndtr(xa) - logq) * ndtr(xa) / dens
        xs = xs - where(xs < 0, step, -step)
    return _done(where(inside, xs, x), out)


@_export(method=False)
def xlog1py(input, other) -> Tensor:  # noqa: A002 - torch's names
    """`x * log1p(y)`, 0 where x is 0 (unless y is NaN), as torch.special.xlog1py."""
    from .mathops import float_pair
    x, y = float_pair("xlog1py", input, other)
    if x.dtype is dt.float16:
        return xlog1py(x.to(dt.float32), y.to(dt.float32)).to(dt.float16)
    zero = (x == 0) & ~(y != y)
    ys = where(zero, 0.0, y)
    return where(zero, 0.0, x * ys.log1p())


@_export(method=False)
def entr(input) -> Tensor:  # noqa: A002 - torch's name
    """`-x log x` for x > 0, 0 at 0, -inf below (torch.special.entr)."""
    x, out = _float("entr", input)
    pos = x > 0
    xs = where(pos, x, 1.0)
    y = where(pos, -xs * xs.log(), where(x == 0, 0.0, -math.inf))
    return _done(where(x != x, x, y), out)
