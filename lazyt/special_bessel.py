"""torch.special's Bessel, Airy and Hurwitz zeta functions as composites of lazyt's elementwise
ops (`lazyt.special.bessel_j0`, ...): fixed op graphs (no host reads, no data-dependent loops)
that every backend runs, in float32 and float64 (integers compute in the default float,
float16 in float32).

How each is computed (the Chebyshev coefficients below were fitted for this module: Chebyshev
interpolation at 40 nodes of the stated smooth function, in 40-digit mpmath arithmetic, cut
where the terms fall below 1e-17 of the largest; float32 drops the terms below 3e-9):
- `bessel_j0/j1/y0/y1`, |x| <= 8: `J0 = (x^2 - j1^2)(x^2 - j2^2) P(x^2)` and `J1 = x (...)
  P(x^2)`, the first two zeros split in a high and a low part so that `x - j` is exact near
  them (relative accuracy there too); `Y0 = 2/pi log(x) J0(x) + R(x^2)`, `Y1 = 2/pi (log(x)
  J1(x) - 1/x) + x R(x^2)`. |x| > 8: Hankel's form `sqrt(2 / (pi x)) (P cos(chi) - Q sin(chi))`
  with P, Q fitted in 64 / x^2 and cos/sin(x - pi/4) from sin x and cos x (no rounding of the
  shifted argument, so huge x keeps its phase).
- `i1`, `i1e` (and `modified_bessel_i1`): the power series (64 terms) for |x| <= 25, the
  asymptotic expansion (20 terms) beyond, as lazyt's `i0`.
- `modified_bessel_k0/k1` and the scaled forms: the series of A&S 9.6.13 / 9.6.11 (20 terms)
  for x <= 2; beyond, `exp(-x) / sqrt(x) * F(2 / x)` with F fitted.
- `spherical_bessel_j0`: `sin(x) / x`, its Taylor series for |x| < 0.5.
- `airy_ai`: the Maclaurin series (16 terms) for |x| <= 2; above, `exp(-zeta) / (2 sqrt(pi)
  x^(1/4)) F(zeta)` with zeta = 2/3 x^(3/2); below, `(P sin(zeta + pi/4) - Q cos(zeta + pi/4)) /
  (sqrt(pi) |x|^(1/4))`; F, P and Q fitted in 1 / zeta.
- `zeta(x, q)` (Hurwitz): Euler-Maclaurin, 11 direct terms and 12 Bernoulli terms, as Cephes;
  q < 0 (integer x only, else NaN as torch) by `zeta(n, q) = zeta(n, 1 - f) + (-1)^n (zeta(n,
  f) - zeta(n, 1 - q))`, f = frac(-q), which needs no loop over |q|.
Edge values follow torch (J(+-inf) and Ai(+-inf) are NaN, Y and K of negative x NaN, ...).

Gradients as torch: `i1`, `i1e` and `zeta`'s `q` (the derivative of the composite is the
derivative's own expansion) are differentiable; zeta's `x` raises `GradError` when a backward
pass reaches it ("not implemented" in torch); the other functions return a tensor that does not
require grad, as torch's outputs have no grad_fn.
"""
from __future__ import annotations

import math

from . import dtype as dt
from .errors import GradError
from .functional import where
from .mathops import float_pair
from .moreops import exporter
from .special_fns import _clenshaw, _done, _float, i0
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

# ---------------------------------------------------------------------- fitted coefficients
_J0_SMALL = (
    0.0019903555001601486, -0.002620939138497025, 0.0008687721472062577,
    -0.00017040584951557357, 2.204908639454817e-05, -2.0248894980012834e-06,
    1.3898025173428905e-07, -7.406701254344167e-09, 3.1559927583611334e-10,
    -1.1003860827939697e-11, 3.1989232970233477e-13, -7.875041254709154e-15,
    1.6632588015211278e-16, -3.0475993756698376e-18, 4.8912290055811176e-20,)

_J1_SMALL = (
    0.00027895709887613106, -0.0003115684036643562, 8.553646588540538e-05,
    -1.4149356425623485e-05, 1.576470099225889e-06, -1.269075502369425e-07,
    7.747614077073057e-09, -3.716577146675772e-10, 1.4395417669312554e-11,
    -4.60007822413452e-13, 1.2341465589619718e-14, -2.8205466239524856e-16,
    5.558821065951572e-18, -9.546930865755219e-20,)

_Y0_SMALL = (
    -0.03314611320328494, -0.2744743055297453, 0.17903431407718265, 0.26156734625504663,
    -0.17730201278114358, 0.04719668959576339, -0.007287962479552079, 0.0007531135932577742,
    -5.632079141056987e-05, 3.206532537654801e-06, -1.44072332740187e-07,
    5.248794787330516e-09, -1.5837552541812015e-10, 4.02633081830612e-12,
    -8.747341203310769e-14, 1.6434898714919468e-15, -2.6977881152566837e-17,)

_Y1_SMALL = (
    0.0025380132357417816, -0.01608717304766875, -0.09591204536083074, 0.08445197259652346,
    -0.028328123944594365, 0.005289897544167113, -0.0006414551451326356, 5.505982873338744e-05,
    -3.53808001868935e-06, 1.7707804556154404e-07, -7.11055004989928e-09,
    2.344337905911516e-10, -6.4651518414115946e-12, 1.51429151205002e-13,
    -3.0511859694473254e-15, 5.34668038572867e-17,)

_P0 = (
    0.9994603493475187, -0.0005365220468132117, 3.0751847875194745e-06,
    -5.1705945376060975e-08, 1.6306464635151382e-09, -7.86409137723707e-11,
    5.168262387349193e-12, -4.3045788699253914e-13, 4.3265957431549404e-14,
    -5.069034095935236e-15, 6.748072215733873e-16, -1.0011513723467786e-16,
    1.6305919233744186e-17,)

_Q0 = (
    -0.015555854605337009, 6.838519942611649e-05, -7.414498411060647e-07,
    1.7972457247968992e-08, -7.27191593686632e-10, 4.2201219046687385e-11,
    -3.206747420996635e-12, 3.006145125351706e-13, -3.336328185322427e-14,
    4.255225040245461e-15, -6.09993013164005e-16, 9.662128970303257e-17,
    -1.6686065214378146e-17, 3.1082440486738143e-18, -6.191115787358145e-19,)

_P1 = (
    1.0009030408600137, 0.0008989898330859408, -3.987284300488908e-06, 6.177633960644299e-08,
    -1.8718907491063067e-09, 8.816898659582339e-11, -5.704863640395645e-12,
    4.699195515230542e-13, -4.6842237839904895e-14, 5.452674896044717e-15,
    -7.221180842274018e-16, 1.0667689114335412e-16, -1.7312313216116335e-17,)

_Q1 = (
    0.04677778706953532, -9.62772354915708e-05, 9.138615257955454e-07, -2.0959781384083424e-08,
    8.229193327650554e-10, -4.686363688176945e-11, 3.5152187949686082e-12,
    -3.2643156743279e-13, 3.5967765829165294e-14, -4.5612523950772974e-15,
    6.508282957783384e-16, -1.0269147531823243e-16, 1.767635548776479e-17,
    -3.2834519872981614e-18, 6.524081149589261e-19,)

_K0_LARGE = (
    1.2201515410329777, -0.0314481013119645, 0.0015698838857300533, -0.00012849549581627802,
    1.39498137188765e-05, -1.8317555227191195e-06, 2.766813639445015e-07,
    -4.660489897687948e-08, 8.574034017414225e-09, -1.6975345093890614e-09,
    3.5773972814003283e-10, -7.957489244477396e-11, 1.8559491149549264e-11,
    -4.514597883374519e-12, 1.1403405882073441e-12, -2.9800969231481784e-13,
    8.032890775068375e-14, -2.2275133267462965e-14, 6.340076476276646e-15,
    -1.848593377920907e-15, 5.5120559994043335e-16, -1.6782311257549003e-16,
    5.210391777643549e-17, -1.6475805939842515e-17,)

_K1_LARGE = (
    1.3603130952422213, 0.10392373657681724, -0.002857816859622779, 0.00019521551847135162,
    -1.936197974166083e-05, 2.406484947837217e-06, -3.5019606030878126e-07,
    5.7410841254500495e-08, -1.0345762465678097e-08, 2.0150497551970347e-09,
    -4.1903547593419254e-10, 9.218315187605315e-11, -2.129967838427791e-11,
    5.139639673482343e-12, -1.2891739609498229e-12, 3.348419666052243e-13,
    -8.976705182010146e-14, 2.4771544242195988e-14, -7.0198370892147685e-15,
    2.038703166239861e-15, -6.057047270643018e-16, 1.8380935752430452e-16,
    -5.689462849193643e-17, 1.7940510478863452e-17,)

_AI_POS = (
    0.9844053049171552, -0.014792784850104199, 0.0007327177465426715, -6.12595423417825e-05,
    6.83476697557269e-06, -9.237229735403982e-07, 1.436225340438052e-07,
    -2.489319422322096e-08, 4.709793440054328e-09, -9.583863708112733e-10,
    2.0745855483677591e-10, -4.737267332192277e-11, 1.1336099808224236e-11,
    -2.827706782319351e-12, 7.320712095125598e-13, -1.9599793911089723e-13,
    5.4101162570683925e-14, -1.5356466802223836e-14, 4.472340393300025e-15,
    -1.3338094674756681e-15, 4.066582046456231e-16, -1.2655832256452886e-16,
    4.0151263340158635e-17, -1.2969972135960766e-17,)

_AI_NEG_P = (
    0.9967891298446905, -0.004130128828703613, -0.0008239390724262582, 9.509829158181971e-05,
    -2.33653044311871e-06, -1.6116779859977746e-06, 4.4871807267181985e-07,
    -6.185570986179107e-08, -1.5012061118205146e-09, 3.875169006522936e-09,
    -1.3699662181035864e-09, 2.892451570668314e-10, -2.1339590327825322e-11,
    -1.4017215305078637e-11, 8.591549662340324e-12, -2.9687360440169015e-12,
    6.812795307398657e-13, -5.27220083668579e-14, -4.633120472933447e-14,
    3.261095614883201e-14, -1.3546464150142988e-14, 4.054293518787202e-15,
    -7.314298253378712e-16, -8.655096500444006e-17, 1.575891539597365e-16,
    -9.084968957672261e-17, 3.7342513663029013e-17, -1.1561423112544898e-17,)

_AI_NEG_Q = (
    0.06661095195327266, -0.0035463814329226915, -0.0005761728034720765,
    0.00012919633325408304, -1.0447491601030998e-05, -1.78627079724632e-06,
    9.306118788660983e-07, -2.0494991611468615e-07, 1.791730560330283e-08,
    6.614563849172961e-09, -4.033099107752123e-09, 1.2395712295920085e-09,
    -2.2479760155444758e-10, -5.950704732197059e-12, 2.52685664665128e-11,
    -1.2695570312457181e-11, 4.1405389506668666e-12, -8.636790411499601e-13,
    4.799046434010325e-16, 1.0839193382723206e-13, -6.624969084786099e-14,
    2.673294654459146e-14, -7.806913075503306e-15, 1.2325333720683607e-15,
    3.3978574749623765e-16, -4.1732082789660415e-16, 2.334987639422625e-16,
    -9.606494618536713e-17, 2.9754756701706226e-17, -5.2742353717554616e-18,
    -1.2522110086655558e-18, 1.8443672351323375e-18, -1.1540775779683374e-18,)

_ZEROS = {  # order -> ((hi64, lo64, hi32, lo32) of its first two zeros)
    0: ((2.404825557695773, -1.176691651530894e-16, 2.404825448989868, 1.0870590460455913e-07), (5.520078110286311, 8.088597146146722e-17, 5.520078182220459, -7.19341483347784e-08)),
    1: ((3.8317059702075125, -1.5269184090088067e-16, 3.8317060470581055, -7.685059315313556e-08), (7.015586669815619, -9.414165653410389e-17, 7.015586853027344, -1.8321172499646294e-07)),
}


# ---------------------------------------------------------------------- shared pieces
_F32_CUT = 3e-9
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_TWO_PI_INV = 2.0 / math.pi


def _f64(x: Tensor) -> bool:
    return x.dtype is dt.float64


def _cheb(u: Tensor, coef: tuple) -> Tensor:
    """sum_k coef[k] T_k(u); float32 leaves out the trailing terms below 3e-9 of the
    largest."""
    if not _f64(u):
        top = max(abs(c) for c in coef)
        n = len(coef)
        while n > 2 and abs(coef[n - 1]) < _F32_CUT * top:
            n -= 1
        coef = coef[:n]
    return _clenshaw(u, coef)


def _horner(z: Tensor, coef: tuple) -> Tensor:
    """sum_k coef[k] z^k."""
    acc = z * 0.0 + coef[-1]
    for c in coef[-2::-1]:
        acc = acc * z + c
    return acc


def _real(op: str, input) -> tuple:  # noqa: A002 - torch's name
    """`_float`, detached: torch gives these functions no derivative (their results have no
    grad_fn), so neither does lazyt."""
    x, out = _float(op, input)
    return x.detach(), out


# ---------------------------------------------------------------------- J0, J1, Y0, Y1
_SMALL = 8.0   # power-series-like fits below, Hankel's form above


def _zero_factor(a: Tensor, order: int) -> Tensor:
    """(a^2 - j1^2)(a^2 - j2^2) over the first two zeros of J_order, `a - j` exact near j."""
    out = None
    for hi64, lo64, hi32, lo32 in _ZEROS[order]:
        hi, lo = (hi64, lo64) if _f64(a) else (hi32, lo32)
        f = (a - hi - lo) * (a + (hi + lo))
        out = f if out is None else out * f
    return out


def _j_small(a: Tensor, order: int) -> Tensor:
    """J0(a), or J1(a) / a, for |a| <= 8."""
    u = a * a * (2.0 / (_SMALL * _SMALL)) - 1.0
    return _zero_factor(a, order) * _cheb(u, _J0_SMALL if order == 0 else _J1_SMALL)


def _jy_large(a: Tensor, order: int) -> tuple:
    """(J, Y) of order 0 or 1 at a > 8, by Hankel's form with fitted P and Q."""
    u = (_SMALL * _SMALL * 2.0) / (a * a) - 1.0
    p = _cheb(u, _P0 if order == 0 else _P1)
    q = _cheb(u, _Q0 if order == 0 else _Q1) * _SMALL / a
    s, c = a.sin(), a.cos()
    r = a.rsqrt() * _INV_SQRT_PI       # sqrt(2 / (pi a)) / sqrt(2)
    if order == 0:          # chi = a - pi/4: cos chi = (c + s)/sqrt2, sin chi = (s - c)/sqrt2
        return (p * (c + s) - q * (s - c)) * r, (p * (s - c) + q * (c + s)) * r
    # chi = a - 3 pi/4: cos chi = (s - c)/sqrt2, sin chi = -(s + c)/sqrt2
    return (p * (s - c) + q * (s + c)) * r, (q * (s - c) - p * (s + c)) * r


def _bessel_j(op: str, input, order: int) -> Tensor:  # noqa: A002 - torch's name
    x, out = _real(op, input)
    a = x.abs()
    small = a <= _SMALL
    js = _j_small(where(small, a, 1.0), order)
    jl = _jy_large(where(small, _SMALL + 1.0, a), order)[0]
    if order == 0:
        return _done(where(small, js, jl), out)
    return _done(where(small, js * where(small, x, 1.0), where(x < 0, -jl, jl)), out)


def _bessel_y(op: str, input, order: int) -> Tensor:  # noqa: A002 - torch's name
    x, out = _real(op, input)
    small = x <= _SMALL
    xs = where(small & (x > 0), x, 1.0)
    u = xs * xs * (2.0 / (_SMALL * _SMALL)) - 1.0
    log = xs.log()
    if order == 0:
        ys = _j_small(xs, 0) * log * _TWO_PI_INV + _cheb(u, _Y0_SMALL)
    else:
        ys = (_j_small(xs, 1) * xs * log - 1.0 / xs) * _TWO_PI_INV + xs * _cheb(u, _Y1_SMALL)
    yl = _jy_large(where(small, _SMALL + 1.0, x), order)[1]
    y = where(small, ys, yl)
    return _done(where(x == 0, -math.inf, where(x < 0, math.nan, y)), out)


@_export(method=False)
def bessel_j0(input) -> Tensor:  # noqa: A002 - torch's name
    """The Bessel function of the first kind of order 0 (no gradient, as torch)."""
    return _bessel_j("bessel_j0", input, 0)


@_export(method=False)
def bessel_j1(input) -> Tensor:  # noqa: A002 - torch's name
    """The Bessel function of the first kind of order 1 (no gradient, as torch)."""
    return _bessel_j("bessel_j1", input, 1)


@_export(method=False)
def bessel_y0(input) -> Tensor:  # noqa: A002 - torch's name
    """The Bessel function of the second kind of order 0: -inf at 0, NaN below (no
    gradient, as torch)."""
    return _bessel_y("bessel_y0", input, 0)


@_export(method=False)
def bessel_y1(input) -> Tensor:  # noqa: A002 - torch's name
    """The Bessel function of the second kind of order 1: -inf at 0, NaN below (no
    gradient, as torch)."""
    return _bessel_y("bessel_y1", input, 1)


# ---------------------------------------------------------------------- I1
_NEAR = 25.0


def _asym_i(af: Tensor, order: int) -> Tensor:
    """I_order(af) * exp(-af) for af > 25: Hankel's asymptotic series, 20 terms."""
    mu = 4.0 * order * order
    coef, c = [1.0], 1.0
    for k in range(1, 20):
        c = c * -(mu - (2 * k - 1) ** 2) / (k * 8.0)
        coef.append(c)
    return _horner(1.0 / af, tuple(coef)) * (af * (2.0 * math.pi)).rsqrt()


def _i1_parts(x: Tensor) -> tuple:
    """(I1 by its power series, I1 * exp(-|x|) by the asymptotic series, |x| <= 25)."""
    a = x.abs()
    near = a <= _NEAR
    q = where(near, x, 0.0) * 0.5
    q2 = q * q
    term = q2 * 0.0 + 1.0
    s = term
    for k in range(1, 44 if _f64(x) else 36):
        term = term * q2 / float(k * (k + 1))
        s = s + term
    af = where(near, _NEAR + 1.0, a)
    asym = _asym_i(af, 1)
    return s * q, where(x < 0, -asym, asym), near


@_export(method=False)
def i1(input) -> Tensor:  # noqa: A002 - torch's name
    """The modified Bessel function of the first kind of order 1 (differentiable)."""
    x, out = _float("i1", input)
    series, asym, near = _i1_parts(x)
    y = where(near, series, asym * where(near, 0.0, x.abs()).exp())
    return _done(where(x == math.inf, math.inf, y), out)


@_export(method=False)
def i1e(input) -> Tensor:  # noqa: A002 - torch's name
    """`exp(-|x|) * i1(x)`, without overflow (differentiable)."""
    x, out = _float("i1e", input)
    series, asym, near = _i1_parts(x)
    return _done(where(near, series * (-where(near, x, 0.0).abs()).exp(), asym), out)


@_export(method=False)
def modified_bessel_i0(input) -> Tensor:  # noqa: A002 - torch's name
    """`i0` without a gradient (torch.special.modified_bessel_i0 has none)."""
    x, out = _real("modified_bessel_i0", input)
    return _done(i0(x), out)


@_export(method=False)
def modified_bessel_i1(input) -> Tensor:  # noqa: A002 - torch's name
    """`i1` without a gradient (torch.special.modified_bessel_i1 has none)."""
    x, out = _real("modified_bessel_i1", input)
    return _done(i1(x), out)


# ---------------------------------------------------------------------- K0, K1
_EULER = 0.57721566490153286061
_K_SPLIT = 2.0


def _k_series() -> tuple:
    """Power-series coefficients in z = x^2 / 4 (A&S 9.6.13, 9.6.11): I0's 1 / k!^2 and
    H_k / k!^2; I1's 1 / (k! (k+1)!) and (psi(k+1) + psi(k+2)) / (k! (k+1)!)."""
    i0c, k0c, i1c, k1c = [], [], [], []
    h = 0.0
    for k in range(20):
        if k:
            h += 1.0 / k
        f = float(math.factorial(k))
        i0c.append(1.0 / (f * f))
        k0c.append(h / (f * f))
        g = 1.0 / (f * math.factorial(k + 1))
        i1c.append(g)
        k1c.append((2.0 * h + 1.0 / (k + 1) - 2.0 * _EULER) * g)
    return tuple(i0c), tuple(k0c), tuple(i1c), tuple(k1c)


_I0_Z, _K0_Z, _I1_Z, _K1_Z = _k_series()


def _k_small(x: Tensor, order: int) -> Tensor:
    """K_order(x) for 0 < x <= 2."""
    z = x * x * 0.25
    n = 14 if _f64(x) else 9
    lg = x.log() - math.log(2.0)   # (not log(x / 2): x / 2 underflows for the least x)
    if order == 0:
        return _horner(z, _K0_Z[:n]) - (lg + _EULER) * _horner(z, _I0_Z[:n])
    return 1.0 / x + x * 0.5 * (lg * _horner(z, _I1_Z[:n]) - 0.5 * _horner(z, _K1_Z[:n]))


def _bessel_k(op: str, input, order: int, scaled: bool) -> Tensor:  # noqa: A002
    x, out = _real(op, input)
    small = x <= _K_SPLIT
    xs = where(small & (x > 0), x, 1.0)
    ks = _k_small(xs, order)
    if scaled:
        ks = ks * xs.exp()
    xl = where(small, _K_SPLIT + 1.0, x)
    kl = _cheb((2.0 * _K_SPLIT) / xl - 1.0, _K0_LARGE if order == 0 else _K1_LARGE) * xl.rsqrt()
    if not scaled:
        kl = kl * (-xl).exp()
    y = where(small, ks, kl)
    return _done(where(x == 0, math.inf, where(x < 0, math.nan, y)), out)


@_export(method=False)
def modified_bessel_k0(input) -> Tensor:  # noqa: A002 - torch's name
    """The modified Bessel function of the second kind of order 0: inf at 0, NaN below."""
    return _bessel_k("modified_bessel_k0", input, 0, False)


@_export(method=False)
def modified_bessel_k1(input) -> Tensor:  # noqa: A002 - torch's name
    """The modified Bessel function of the second kind of order 1: inf at 0, NaN below."""
    return _bessel_k("modified_bessel_k1", input, 1, False)


@_export(method=False)
def scaled_modified_bessel_k0(input) -> Tensor:  # noqa: A002 - torch's name
    """`exp(x) * modified_bessel_k0(x)`, without underflow."""
    return _bessel_k("scaled_modified_bessel_k0", input, 0, True)


@_export(method=False)
def scaled_modified_bessel_k1(input) -> Tensor:  # noqa: A002 - torch's name
    """`exp(x) * modified_bessel_k1(x)`, without underflow."""
    return _bessel_k("scaled_modified_bessel_k1", input, 1, True)


# ---------------------------------------------------------------------- spherical j0
_SINC_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(9))


@_export(method=False)
def spherical_bessel_j0(input) -> Tensor:  # noqa: A002 - torch's name
    """`sin(x) / x` (1 at 0, 0 at +-inf; no gradient, as torch)."""
    x, out = _real("spherical_bessel_j0", input)
    a = x.abs()
    small = a < 0.5
    xs = where(small, x, 0.0)
    xl = where(small, 1.0, x)
    y = where(small, _horner(xs * xs, _SINC_TAYLOR), xl.sin() / xl)
    return _done(where(a == math.inf, 0.0, y), out)


# ---------------------------------------------------------------------- Airy Ai
_AIRY_MID = 2.0
_AIRY_ZETA0 = 2.0 / 3.0 * _AIRY_MID ** 1.5
_AI0 = 0.35502805388781723926       # Ai(0) = 3^(-2/3) / Gamma(2/3)
_AIP0 = 0.25881940379280679840      # -Ai'(0) = 3^(-1/3) / Gamma(1/3)


def _airy_series() -> tuple:
    f, g = [1.0], [1.0]
    for k in range(1, 16):
        f.append(f[-1] / ((3 * k - 1) * (3 * k)))
        g.append(g[-1] / ((3 * k) * (3 * k + 1)))
    return tuple(f), tuple(g)


_AIRY_F, _AIRY_G = _airy_series()


@_export(method=False)
def airy_ai(input) -> Tensor:  # noqa: A002 - torch's name
    """The Airy function Ai (NaN at +-inf, as torch; no gradient, as torch)."""
    x, out = _real("airy_ai", input)
    mid = x.abs() <= _AIRY_MID
    xm = where(mid, x, 0.0)
    c = xm * xm * xm
    ai_mid = _horner(c, _AIRY_F) * _AI0 - xm * _horner(c, _AIRY_G) * _AIP0
    pos = x > _AIRY_MID
    xp = where(pos, x, _AIRY_MID + 1.0)
    sp = xp.sqrt()
    zeta = xp * sp * (2.0 / 3.0)
    fp = _cheb(_AIRY_ZETA0 * 2.0 / zeta - 1.0, _AI_POS)
    ai_pos = (-zeta).exp() * fp / (sp.sqrt() * (2.0 * math.sqrt(math.pi)))
    xn = where(pos | mid, _AIRY_MID + 1.0, -x)
    sn = xn.sqrt()
    zeta = xn * sn * (2.0 / 3.0)
    u = _AIRY_ZETA0 * 2.0 / zeta - 1.0
    p, q = _cheb(u, _AI_NEG_P), _cheb(u, _AI_NEG_Q) / zeta
    s, co = zeta.sin(), zeta.cos()     # zeta + pi/4: sin = (s + co)/sqrt2, cos = (co - s)/sqrt2
    ai_neg = (p * (s + co) - q * (co - s)) / (sn.sqrt() * math.sqrt(2.0 * math.pi))
    y = where(mid, ai_mid, where(pos, ai_pos, ai_neg))
    return _done(where((x != x) | (x == math.inf), math.nan, y), out)


# ---------------------------------------------------------------------- Hurwitz zeta
def _em_constants() -> tuple:
    """(2j)! / B_2j, j = 1..12: the Euler-Maclaurin divisors."""
    from fractions import Fraction as Fr
    b = (Fr(1, 6), Fr(-1, 30), Fr(1, 42), Fr(-1, 30), Fr(5, 66), Fr(-691, 2730), Fr(7, 6),
         Fr(-3617, 510), Fr(43867, 798), Fr(-174611, 330), Fr(854513, 138),
         Fr(-236364091, 2730))
    return tuple(float(math.factorial(2 * j + 2) / bj) for j, bj in enumerate(b))


_EM = _em_constants()
_DIRECT = 10   # (q + k)^-x summed for k = 0..10; the expansion at w = q + 10 >= 10


def _zeta_pos(x: Tensor, q: Tensor) -> Tensor:
    """zeta(x, q) for x > 1 (finite), q > 0: Euler-Maclaurin at w = q + 10."""
    nx = -x
    s = q ** nx
    b = s
    for k in range(1, _DIRECT + 1):
        b = (q + float(k)) ** nx
        s = s + b
    w = q + float(_DIRECT)
    # once w^-x is below rounding of the sum the expansion is too (and it may overflow for
    # huge x): leave it out there, as torch's early return does
    done = b <= (1.1e-16 if _f64(x) else 6e-8) * s
    xe = where(done, 2.0, x)
    b = where(done, 0.0, b)
    tail = b * w / (xe - 1.0) - b * 0.5
    a = None
    for j, div in enumerate(_EM):
        a = xe + float(2 * j) if a is None else a * (xe + float(2 * j))
        b = b / w
        tail = tail + a * b / div
        a = a * (xe + float(2 * j + 1))
        b = b / w
    return s + tail


def _no_grad_for_x(x: Tensor) -> Tensor:
    """Zero, with a gradient path to `x` that raises GradError when a backward pass reaches
    it (torch: "the derivative for 'zeta' is not implemented")."""
    xu = where(x.detach().abs() < math.inf, x, 0.0)

    def refuse(_grad):
        raise GradError(f"zeta: the derivative with respect to `input` (x), shape "
                        f"{tuple(x.shape)}, is not implemented (as in torch); detach it or "
                        "differentiate with respect to `other` (q) only")

    xu.register_hook(refuse)
    return (xu - xu.detach()) * 0.0


@_export(method=False)
def zeta(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The Hurwitz zeta function sum_k (q + k)^-x (torch.special.zeta(x, q)); x = 1 gives
    inf, x < 1 NaN, q a non-positive integer inf, q < 0 with x not an integer NaN, as torch.
    Differentiable with respect to q only, as torch."""
    x, q = float_pair("zeta", input, other)
    out = x.dtype
    if out is dt.float16:
        x, q = x.to(dt.float32), q.to(dt.float32)
    xd, qd = x.detach(), q.detach()
    inf, nan = math.inf, math.nan
    xint = xd == xd.floor()
    qint = qd == qd.floor()
    finite = (xd < inf) & (qd < inf)
    pos = (xd > 1) & (qd > 0) & finite
    neg = (xd > 1) & (qd < 0) & ~qint & xint & finite
    xs = where(pos | neg, xd, 2.0)
    # q < 0: zeta(n, q) = zeta(n, 1 - f) + (-1)^n (zeta(n, f) - zeta(n, 1 - q)), f = frac(-q)
    nq = -where(neg, q, -0.5)
    f = nq - nq.detach().floor()
    first = where(neg, 1.0 - f, where(pos, q, 1.0))
    y = _zeta_pos(xs, first)
    odd = (xs * 0.5).floor() * 2.0 != xs
    diff = _zeta_pos(xs, where(neg, f, 1.0)) - _zeta_pos(xs, where(neg, 1.0 + nq, 1.0))
    y = y + where(odd, -diff, diff)
    # x = inf: torch's (Cephes') values, NaN for q > 1 (its expansion meets inf * 0)
    at_inf = where(qd == 1, 1.0, where(qd > 1, nan, inf))
    y = where(xd == inf, at_inf, where(qd == inf, nan, y))
    y = where((xd != xd) | (qd != qd), nan, y)
    y = where(qd <= 0, where(qint, inf, where(xint, y, nan)), y)
    y = where(xd == 1, inf, where(xd < 1, nan, y))
    if x.requires_grad:
        y = y + _no_grad_for_x(x)
    return y if out is y.dtype else y.to(out)
