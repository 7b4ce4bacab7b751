"""More of torch's special functions as composites of lazyt's elementwise ops: the regularized
incomplete gamma functions `igamma` / `igammac` (torch.special.gammainc / gammaincc), the float
stepper `nextafter`, and the method `Tensor.polygamma(n)`. Every backend runs them (fixed
op graphs: no host reads, no data-dependent loops).

How `igamma(a, x)` = P(a, x) and `igammac(a, x)` = Q(a, x) are computed (DLMF 8.7, 8.9,
8.11, 8.12), each element by one of four formulas selected with `where`:
- the power series of P (DLMF 8.11.4), 56 terms in float64 (30 in float32), for x < a + 1
  (a <= 20) or x < a / 2 (a > 20), where it converges within them;
- the continued fraction of Q (DLMF 8.9.2, Legendre's), evaluated backwards from a fixed depth
  of 50 (28), for x >= max(a + 1, 2) outside Temme's region;
- Q by the series DLMF 8.7.3 (`-expm1(a log x - lgamma(a + 1))` less a 28-term (18) sum),
  for a < 1 and x < 2, where Q = 1 - P would cancel;
- Temme's uniform expansion (DLMF 8.12.3/8.12.4) for a > 20 and |x - a| <= a / 2, where the
  other two would need hundreds of terms: `erfc(+-eta sqrt(a / 2)) / 2` plus
  `exp(-a eta^2 / 2) / sqrt(2 pi a) * sum_k C_k(eta) a^-k`, with the Taylor coefficients of the
  C_k as tabulated by Cephes / SciPy (`igam.h`; terms below the dtype's precision dropped).
The factor `x^a e^-x / Gamma(a + 1)` comes from lazyt's lgamma for a <= 8 and, above, from
`a (log1p(s) - s)` with s = (x - a) / a and Stirling's series, so that the large, nearly equal
`a log x`, `x` and `lgamma(a)` never cancel. The other of P and Q is one minus it.
Edge values follow torch: a < 0 or x < 0 NaN, a = 0 gives P = 1 for x > 0 (NaN at x = 0),
x = 0 gives P = 0, a = inf gives P = 0 (NaN for x = inf), x = inf gives P = 1; NaN stays.

`nextafter(x, y)` steps x by one unit in the last place towards y: `x +- 2^(e - p)` from
`frexp`'s exponent e (p = 24 or 53; half that step towards zero from a power of two, never
less than the smallest subnormal); 0 gives the smallest subnormal with y's sign, inf the
largest finite number, x == y gives y, NaN propagates. Bit-exact against numpy.nextafter on
the numpy backend (subnormals included). A GPU backend that flushes subnormals is exact only
for |x| >= 2^-102 (float32), where the step is itself a normal number.
"""
from __future__ import annotations

import math

from . import dtype as dt
from .dispatch import DispatchTensor
from .errors import DTypeError, GradError
from .functional import where
from .mathops import const, float_pair, tensor_arg
from .moreops import exporter
from .special_fns import _STIRLING, erfc, lgamma, polygamma as _polygamma
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)

# ---------------------------------------------------------------------- incomplete gamma
# Taylor coefficients d[k][n] of Temme's C_k(eta) = sum_n d[k][n] eta^n (DLMF 8.12.4), rows
# k = 0..12 of the table in Cephes' igam.h (higher rows never matter for a > 20; the terms
# below a dtype's precision are dropped by `_temme_rows`).
_TEMME_D = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
     0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05,
     -2.1854485106799924e-06, -1.85406221071516e-06, 8.296711340953087e-07,
     -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
     -4.382036018453353e-09, 9.14769958223679e-10, -2.551419399494625e-11,
     -5.830772132550426e-11, 2.4361948020667415e-11, -5.0276692801141755e-12,
     1.1004392031956135e-13, 3.3717632624009856e-13, -1.392388722418162e-13,
     2.8534893807047445e-14, -5.139111834242572e-16, -1.9752288294349442e-15),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
     -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
     -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
     4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14,
     7.1624989648114856e-12, -2.933186643771437e-12, 5.996696365683689e-13,
     -2.1671786527323313e-16, -4.978339972369262e-14, 2.0291628823713425e-14,
     -4.13125571381061e-15),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
     2.0093878600823047e-06, -0.00010736653226365161, 5.2923448829120125e-05,
     -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062932e-06,
     -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617112e-09,
     9.428356159014678e-13, 1.2872252400089318e-10, -5.5645956134363323e-11,
     1.197593554636698e-11, -4.1689782251838634e-15, -1.0940640427884595e-12,
     4.662239946390136e-13, -9.905105763906907e-14, 1.8931876768373515e-17,
     8.859221872591127e-15),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
     0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
     1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
     -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
     -9.460496661855133e-10, 2.1541049775774907e-10, -1.388823336813903e-14,
     -2.1894761681963938e-11, 9.790998951171684e-12, -2.178219188018096e-12,
     6.208819573407901e-17, 2.126978363279737e-13, -9.344688791517433e-14,
     2.045367122678285e-14),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
     1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06,
     8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10, 1.86023389685045e-10,
     -4.356323005056618e-11, 1.278600101629623e-15, 4.67927502665792e-12,
     -2.149246470613483e-12, 4.908815614809652e-13, -6.33859148489156e-18,
     -5.045332069080094e-14),
    (-0.00033679855336635813, -6.972813758365858e-05, 0.0002772753244959392,
     -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07,
     -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06,
     -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.306194500013523e-09,
     3.162417628774568e-09, -7.840924253697429e-10, 5.192679165254041e-15,
     9.358944242306784e-11, -4.513426216163278e-11, 1.0799129993116828e-11,
     -3.661886712685252e-17, -1.210902069055155e-12, 5.680743584990564e-13,
     -1.3249659916340829e-13),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045,
     7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05,
     -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06,
     -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08, 4.7435958880408125e-08, -1.2545415020710382e-08,
     8.649648858010293e-14, 1.6846058979264062e-09, -8.575492823577594e-10,
     2.1598224929232125e-10, -7.613230520476153e-16, -2.6639822008536144e-11,
     1.3065700536611057e-11, -3.1799163902367977e-12, 4.710976121367431e-18,
     3.6902800842763465e-13),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234,
     0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07,
     2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
     4.93875893393627e-10, -1.0595367014026043e-06, 6.166714376110408e-07,
     -1.7562973359060463e-07, -1.297447328701544e-12, 2.695423606288966e-08,
     -1.4578352908731272e-08, 3.887645959386175e-09, -3.881002251019412e-17,
     -5.327994173877286e-10, 2.7437977643314844e-10, -6.995796092070568e-11,
     2.589986387486848e-17, 8.856689099669639e-12, -4.403168815871311e-12,
     1.0865561947091654e-12),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721,
     -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218,
     4.629953263691304e-05, 4.557909867922708e-09, -1.0595271125805195e-05,
     6.783342904865167e-06, -2.1075476666258803e-06, -1.7213731432817144e-11,
     3.773587741611098e-07, -2.1867506700122867e-07, 6.220228804018927e-08, 6.597703826733e-16,
     -9.590386497425686e-09, 5.213214492280807e-09, -1.3991589583935709e-09,
     5.382058999060575e-16, 1.9484714275467745e-10, -1.0127287556389682e-10,
     2.6077347197254926e-11, -5.090418699993299e-18, -3.3721464474854593e-12),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328,
     -0.0006401475260262758, 0.00027750107634328704, 1.819700838046515e-07,
     -8.479507117068503e-05, 6.105192082501531e-05, -2.1073920183404862e-05,
     -8.858589014125599e-10, 4.5284535953805374e-06, -2.8427815022504407e-06,
     8.708234177864641e-07, 3.6886101871706966e-12, -1.534469519070206e-07,
     8.862466778790695e-08, -2.5184812301826817e-08, -1.0225912098215092e-14,
     3.896947075815478e-09, -2.1267304792235634e-09, 5.737013552805138e-10,
     -1.887749850169741e-19, -8.093153869465787e-11, 4.23827232834492e-11,
     -1.1002224534207727e-11),
    (0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636, 9.9324041226423e-07,
     -0.0005087450129309319, 0.00042735056665392886, -0.000168588537679108,
     -8.1301893922785e-09, 4.5284402370562144e-05, -3.127053674781734e-05,
     1.044986828530338e-05, 4.8435226265680926e-11, -2.148256587345626e-06,
     1.329369701097492e-06, -4.029569309210103e-07, -1.756787766632329e-13,
     7.014504316366825e-08, -4.040787734999483e-08, 1.1474026743371962e-08,
     3.9642746853563326e-18, -1.7804938269892715e-09, 9.748026254873165e-10,
     -2.6405338676507616e-10, 5.794875163403742e-18, 3.764774955354384e-11),
    (0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276, 0.00213896861856891,
     -0.0010108559391263003, -3.99127055299192e-07, 0.0003623502508476469,
     -0.00028143901463712157, 0.00010449513336495887, 2.12114184918303e-09,
     -2.5779417251947842e-05, 1.7281818956040464e-05, -5.641377387290428e-06,
     -1.1024320105776174e-11, 1.1223224418895176e-06, -6.869339637952674e-07,
     2.0653236975414888e-07, 4.6714772409838506e-14, -3.5609886164949055e-08,
     2.0470855345905963e-08, -5.809173863328336e-09, -1.332821287582869e-16,
     9.035460439133513e-10, -4.959878251733084e-10, 1.3481607129399748e-10),
    (-0.004072512119514016, 0.00640336283380807, -0.004041016108167662, -2.183732802866233e-06,
     0.002174044180125464, -0.001970044051841889, 0.0008359546974796246,
     1.9445447567109655e-08, -0.000257793871204217, 0.00019009987368139304,
     -6.769649993743896e-05, -1.4440629666426571e-10, 1.5712512518742267e-05,
     -1.0304008744776892e-05, 3.304517767401387e-06, 7.982976024232571e-13,
     -6.4097794149313e-07, 3.8894624761300054e-07, -1.161834764494887e-07,
     -2.816808630596451e-15, 1.9878012911297094e-08, -1.1407719956357511e-08,
     3.2355857064185554e-09, 4.175946829345594e-20, -5.042311271810582e-10),
)

_TEMME_A = 20.0       # Temme's expansion for a above this ...
_TEMME_S = 0.5        # ... and |x - a| <= _TEMME_S * a
_STIRLING_A = 8.0    # the factor x^a e^-x / Gamma(a + 1) by Stirling's series above this
_LOG_2PI = math.log(2.0 * math.pi)
# terms: (P's series, Q's continued fraction, Q's small-x series, precision) per dtype
_TERMS = {"float64": (56, 50, 28, 1e-17), "float32": (30, 28, 18, 3e-9)}


def _temme_rows(f64: bool) -> tuple:
    """The rows of `_TEMME_D` cut to the terms that matter at a = 20, |eta| <= 0.62."""
    tol = _TERMS["float64" if f64 else "float32"][3]
    eta = 0.62     # |eta| at s = -1/2, the widest point of the region
    rows = []
    for k, row in enumerate(_TEMME_D):
        keep = [n for n, c in enumerate(row) if abs(c) * eta ** n / _TEMME_A ** k > tol * 1e-2]
        if not keep:
            break
        rows.append(row[:max(keep) + 1])
    return tuple(rows)


def _log1pmx(s: Tensor) -> Tensor:
    """log(1 + s) - s for s > -1, without the cancellation of the two for small s:
    `-s u + 2 u (u^2/3 + u^4/5 + ...)` with u = s / (2 + s) for |s| < 1/2."""
    near = s.abs() < 0.5
    sn = where(near, s, 0.0)
    u = sn / (sn + 2.0)
    u2 = u * u
    acc = None
    for j in range(20, 0, -1):      # |u| < 1/3: u^40 / 41 is far below float64's precision
        c = 1.0 / (2 * j + 1)
        acc = u2 * c if acc is None else (acc + c) * u2
    series = acc * u * 2.0 - sn * u
    sf = where(near, 0.0, s)
    return where(near, series, sf.log1p() - sf)


def _stirling_rest(a: Tensor) -> Tensor:
    """lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) for a >= 8 (Stirling's series, its
    first omitted term below 1e-16 there)."""
    zi = 1.0 / a
    zi2 = zi * zi
    s = None
    for c in reversed(_STIRLING):
        s = c if s is None else s * zi2 + c
    return s * zi


def _log_factor(a: Tensor, x: Tensor) -> Tensor:
    """log(x^a e^-x / Gamma(a + 1)) for a > 0, x > 0 (both finite)."""
    big = a > _STIRLING_A
    ab = where(big, a, 2.0 * _STIRLING_A)
    xb = where(big, x, ab)
    s = (xb - ab) / ab
    near = s.abs() < 0.5
    # log(1 + s) - s; far from s = 0 as log(x / a) - s (log1p of a rounded s near -1 is not)
    lmx = where(near, _log1pmx(where(near, s, 0.0)), (xb / ab).log() - s)
    large = ab * lmx - 0.5 * ab.log() - 0.5 * _LOG_2PI - _stirling_rest(ab)
    asml = where(big, 1.0, a)
    small = asml * x.log() - x - lgamma(asml + 1.0)
    return where(big, large, small)


def _p_series(a: Tensor, x: Tensor, n: int) -> Tensor:
    """sum_k x^k / ((a + 1) ... (a + k)), k < n (P = factor * this)."""
    t = x * 0.0 + 1.0
    s = t
    for k in range(1, n):
        t = t * x / (a + float(k))
        s = s + t
    return s


def _q_fraction(a: Tensor, x: Tensor, n: int) -> Tensor:
    """Legendre's continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)) of
    Q * Gamma(a) / (x^a e^-x), evaluated backwards from depth n."""
    b0 = x - a + 1.0
    t = None
    for k in range(n, 0, -1):
        num = a * float(k) - float(k * k)
        den = b0 + float(2 * k) if t is None else b0 + float(2 * k) + t
        t = num / den
    return 1.0 / (b0 + t)


# Taylor coefficients of lgamma(1 + a) / a at a = 1/2 (computed with mpmath; radius 3/2, the
# pole of Gamma at a = -1): lgamma(1 + a) with relative precision for 0 < a < 1, where lgamma's
# absolute error would swamp Q's small-x series
_LGAMMA1P = (
    -0.24156447527049044, 0.5561088984981339, -0.17741559645158855, 0.07856564482507043,
    -0.03970703681660444, 0.021509909855421793, -0.012148851370744984, 0.007052494883147395,
    -0.004173532147343155, 0.0025051233773504063, -0.0015201756031205525,
    0.0009305198185058411, -0.0005736336709353852, 0.00035572426257775476,
    -0.00022170614418962132, 0.000138780412093841, -8.720203093763026e-05,
    5.4976815150585104e-05, -3.476381176194582e-05, 2.2041252585472955e-05,
    -1.4008538354227476e-05, 8.922774324158578e-06, -5.694735699347777e-06,
    3.641167738676015e-06, -2.332046008492842e-06, 1.495912764391725e-06,
    -9.609437027783573e-07, 6.181123082937161e-07, -3.9808382581969954e-07,
    2.5667486138143655e-07, -1.6567664250849104e-07, 1.07048091786019e-07,
    -6.923242063017529e-08, 4.481554294598272e-08, -2.9034482257783342e-08,
    1.882545023080485e-08)


def _lgamma1p(a: Tensor, f64: bool) -> Tensor:
    """lgamma(1 + a) for 0 <= a <= 1, to the dtype's precision also near a = 0 (36 terms in
    float64, 18 in float32: |a - 1/2| / (3/2) <= 1/3)."""
    d = a - 0.5
    acc = None
    for c in reversed(_LGAMMA1P[:36 if f64 else 18]):
        acc = d * 0.0 + c if acc is None else acc * d + c
    return acc * a


def _q_small(a: Tensor, x: Tensor, n: int, f64: bool) -> Tensor:
    """Q for a < 1, x < 2 by DLMF 8.7.3: `-expm1(a log x - lgamma(a + 1))` less
    `x^a / Gamma(a) * sum_{k>=1} (-x)^k / (k! (a + k))`."""
    f = x * 0.0 + 1.0
    s = None
    for k in range(1, n):
        f = f * x * (-1.0 / k)
        term = f / (a + float(k))
        s = term if s is None else s + term
    la = a * x.log() - _lgamma1p(a, f64)
    return -la.expm1() - (la.exp() * a) * s


def _temme(a: Tensor, x: Tensor, f64: bool) -> tuple:
    """(P, Q) by Temme's uniform expansion (a > 20, |x - a| <= a / 2)."""
    s = (x - a) / a
    half_eta2 = -_log1pmx(s)                   # eta^2 / 2 = s - log(1 + s)
    eta = (half_eta2 * 2.0).sqrt() * s.sign()
    ai = 1.0 / a
    total = None
    for row in reversed(_temme_rows(f64)):     # sum_k a^-k C_k(eta), Horner in both
        ck = None
        for c in reversed(row):
            ck = eta * 0.0 + c if ck is None else ck * eta + c
        total = ck if total is None else total * ai + ck
    r = (-(a * half_eta2)).exp() * total / (a * (2.0 * math.pi)).sqrt()
    z = eta * (a * 0.5).sqrt()
    return erfc(-z) * 0.5 - r, erfc(z) * 0.5 + r


def _pq(a: Tensor, x: Tensor) -> tuple:
    """(P, Q) for finite a > 0, x > 0 (other elements: anything; the caller replaces them)."""
    f64 = a.dtype is dt.float64
    n_ser, n_cf, n_small, _ = _TERMS["float64" if f64 else "float32"]
    big = a > _TEMME_A
    temme = big & ((x - a).abs() <= a * _TEMME_S)
    frac = ~temme & (x >= a + 1.0) & (x >= 2.0)
    small = ~frac & (a < 1.0) & (x < 2.0)
    logf = _log_factor(a, x)
    fac = logf.exp()
    # each formula sees only its own elements (the others get a harmless stand-in)
    ser = _p_series(where(temme | frac, 1.0, a), where(temme | frac, 0.5, x), n_ser)
    p_ser = fac * ser
    af = where(frac, a, 1.0)
    xf = where(frac, x, 3.0)
    q_frac = fac * af * _q_fraction(af, xf, n_cf)
    q_small = _q_small(where(small, a, 0.5), where(small, x, 1.0), n_small, f64)
    p_tem, q_tem = _temme(where(temme, a, 2.0 * _TEMME_A), where(temme, x, 2.0 * _TEMME_A), f64)
    p = where(temme, p_tem, where(frac, 1.0 - q_frac, p_ser))
    q = where(temme, q_tem, where(frac, q_frac, where(small, q_small, 1.0 - p_ser)))
    return p, q, logf


def _igamma(op: str, input, other, upper: bool) -> Tensor:  # noqa: A002 - torch's names
    a, x = float_pair(op, input, other)
    out = a.dtype
    if out is dt.float16:
        a, x = a.to(dt.float32), x.to(dt.float32)
    ad, xd = a.detach(), x.detach()
    inside = (ad > 0) & (xd > 0) & (ad < math.inf) & (xd < math.inf)
    p, q, logf = _pq(where(inside, ad, 1.0), where(inside, xd, 1.0))
    y = q if upper else p
    # torch's edge rules, in the order of its calc_igamma / calc_igammac (so (nan, 0) gives
    # P = 0 and (inf, nan) P = 0, as there); NaN otherwise propagates
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    nan = math.nan
    rule = where((ad < 0) | (xd < 0), nan,
                 where(ad == 0, where(xd > 0, hi, nan),
                       where(xd == 0, lo,
                             where(ad == math.inf, where(xd == math.inf, nan, lo),
                                   where(xd == math.inf, hi, nan)))))
    y = where(inside, y, rule)
    if x.requires_grad:
        # d P / dx = x^(a-1) e^-x / Gamma(a) = factor * a / x, exact (not autodiff through the
        # fixed series); torch's own formula, so its inf at x = 0 for a < 1 becomes 0 here
        slope = (logf + where(inside, ad, 1.0).log() - where(inside, xd, 1.0).log()).exp()
        slope = where(inside, slope, 0.0)
        xs = where(inside, x, 0.0)
        term = (xs - xs.detach()) * slope
        y = y - term if upper else y + term
    if a.requires_grad:
        y = y + _no_grad_for(op, a, inside)
    return y if out is dt.float32 or out is dt.float64 else y.to(out)


def _no_grad_for(op: str, a: Tensor, inside: Tensor) -> Tensor:
    """Zero, with a gradient path to `a` that raises GradError when a backward pass reaches it
    (torch: "the derivative for 'igamma: input' is not implemented")."""
    au = where(inside, a, 0.0)

    def refuse(_grad):
        raise GradError(f"{op}: the derivative with respect to `input` (a), shape "
                        f"{tuple(a.shape)}, is not implemented (as in torch); detach it or "
                        f"differentiate with respect to `other` (x) only")

    au.register_hook(refuse)
    return (au - au.detach()) * 0.0


@_export()
def igamma(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The regularized lower incomplete gamma function P(input, other) (torch.igamma,
    torch.special.gammainc); differentiable with respect to `other` only, as torch."""
    return _igamma("igamma", input, other, upper=False)


@_export()
def igammac(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P (torch.igammac,
    torch.special.gammaincc)."""
    return _igamma("igammac", input, other, upper=True)


# ---------------------------------------------------------------------- nextafter
_PRECISION = {"float32": (24, 2.0 ** -149, 3.4028234663852886e38),
              "float64": (53, 2.0 ** -1074, 1.7976931348623157e308)}


@_export()
def nextafter(input, other) -> Tensor:  # noqa: A002 - torch's names
    """The next float after `input` in the direction of `other` (torch.nextafter,
    numpy.nextafter): float32 and float64 only, as torch."""
    x = tensor_arg("nextafter", input)
    y = other if isinstance(other, DispatchTensor) else None
    if y is not None:
        y = tensor_arg("nextafter", y)
    for t in (x, y):
        if t is not None and t.dtype not in (dt.float32, dt.float64):
            raise DTypeError(f"nextafter: needs float32 or float64 tensors, got "
                             f"{t.dtype.name} (shapes {tuple(x.shape)}"
                             f"{'' if y is None else ', ' + str(tuple(y.shape))})")
    if y is not None and y.dtype is not x.dtype:
        raise DTypeError(f"nextafter: both tensors must have one dtype, got {x.dtype.name} "
                         f"and {y.dtype.name}")
    x, y = float_pair("nextafter", x, y if y is not None else other)
    p, tiny, big = _PRECISION[x.dtype.name]
    a = x.abs()
    normal = (a > 0) & (a < math.inf)
    mant, expo = where(normal, x, 1.0).frexp()
    e = expo.to(x.dtype)
    up = y > x
    away = up == (x > 0)
    pow2 = mant.abs() == 0.5
    shift = where(away | ~pow2, e - float(p), e - float(p + 1))
    step = shift.exp2()
    step = where(step < tiny, tiny, step)   # (below the subnormals: the smallest one)
    stepped = x + where(up, step, -step)
    stepped = where(stepped == 0, x * 0.0, stepped)     # (-tiny up gives -0, as numpy)
    t, b = const(x, tiny), const(x, big)   # (as x's dtype: Python floats would be float32)
    zero = where(up, t, -t)
    inf = where(x > 0, b, -b)
    r = where(normal, stepped, where(a == 0, zero, inf))
    r = where(x == y, y, r)
    return where((x != x) | (y != y), x + y, r)


# ---------------------------------------------------------------------- method forms
def _polygamma_method(self, n: int) -> Tensor:
    """`polygamma(n, self)` (torch's `Tensor.polygamma(n)`)."""
    return _polygamma(n, self)


if not hasattr(Tensor, "polygamma"):
    _polygamma_method.__name__ = _polygamma_method.__qualname__ = "polygamma"
    Tensor.polygamma = _polygamma_method

