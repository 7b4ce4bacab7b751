"""The numpy backend's op tables: one numpy function per `UnaryOp`, `BinaryOp`, `ReduceOp`,
and the few ops numpy lacks or computes slowly (a float32 erf, a branch-free where)."""
from __future__ import annotations

import math
import threading

import numpy as np

from ...errors import IndexOutOfRangeError
from ...ops import BinaryOp, ReduceOp, UnaryOp

_SQRT_PI_INV2 = 2.0 / math.sqrt(math.pi)


def _erf_series_cf(x: np.ndarray) -> np.ndarray:
    """erf without scipy: Maclaurin series (Horner form) for |x| < 2.5, and the continued
    fraction of erfc beyond; accurate to about 1e-14 in float64."""
    a = np.abs(x.astype(np.float64))
    out = np.empty_like(a)
    small = a < 2.5
    s = a[small]
    z = s * s
    n_terms = 60
    acc = np.zeros_like(s)
    for n in range(n_terms, -1, -1):
        acc = acc * z + ((-1) ** n) / (math.factorial(n) * (2 * n + 1))
    out[small] = _SQRT_PI_INV2 * s * acc
    big = a[~small]
    # erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
    frac = big.copy()
    for k in range(60, 0, -1):
        frac = big + (k / 2.0) / frac
    out[~small] = 1.0 - np.exp(-big * big) / (math.sqrt(math.pi) * frac)
    return (np.sign(x) * out).astype(x.dtype, copy=False)


try:  # scipy's erf is exact and fast; it is optional
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover - depends on the environment
    _erf = _erf_series_cf


def _sigmoid(x):
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


def _reciprocal(x):
    return 1.0 / x


# erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (erf is 1 in float32 beyond): a rational fit to
# erf(x)/x in t = x^2 with minimal relative error (Lawson's iteration). Evaluated in float32
# it is within 7 ulp (4e-7 relative) of the exact erf, and ~7x faster than scipy's float32
# loop, which works in float64 per element.
# Constants as 0-d arrays and outputs passed positionally (numpy deprecates that for maximum
# and minimum only): a ufunc call then costs ~0.3 us of Python instead of ~0.85 (np.float32
# scalars, out=) or ~3 (np.clip). The calls hold the GIL,
# which the fused executor's threads share.
_ERF_P = tuple(np.array(c, np.float32) for c in (
    1.12837914374317, 0.19155109947630822, 0.052875478708733506, 0.00380817770784308,
    0.0002846851026551307, 2.0258620387902937e-06))
_ERF_Q = tuple(np.array(c, np.float32) for c in (
    1.0, 0.5030904176241651, 0.11455988506579563, 0.015055121730972532,
    0.0011707242428950718, 3.783118801601454e-05))
_ERF_HI, _ERF_LO = np.array(4.0, np.float32), np.array(-4.0, np.float32)
_ONE, _MINUS_ONE = np.array(1.0, np.float32), np.array(-1.0, np.float32)
#: Elements per step of `erf_f32_into` (a fused tile: pool.TILE_BYTES of float32).
#: Smaller steps were slower on a 16-core host: the threads then wait for the GIL.
_ERF_CHUNK = 1 << 18
_erf_local = threading.local()


def _erf_f32_chunk(a, o, t, u, mul=np.multiply, add=np.add, mx=np.maximum, mn=np.minimum):
    mx(a, _ERF_LO, out=o)  # NaN propagates; +-inf clamp to +-4
    mn(o, _ERF_HI, out=o)
    mul(o, o, t)
    P, Q = _ERF_P, _ERF_Q
    mul(t, P[5], u)
    for k in (4, 3, 2, 1):
        add(u, P[k], u)
        mul(u, t, u)
    add(u, P[0], u)
    mul(o, u, o)  # x P(t)
    mul(t, Q[5], u)
    for k in (4, 3, 2, 1):
        add(u, Q[k], u)
        mul(u, t, u)
    add(u, Q[0], u)
    np.divide(o, u, o)
    mn(o, _ONE, out=o)  # the fit overshoots 1 by an ulp near |x| = 4
    mx(o, _MINUS_ONE, out=o)


def erf_f32_into(a: np.ndarray, o: np.ndarray) -> None:
    """o = erf(a) for float32 arrays of one shape; `o` may be `a`. Contiguous arrays run in
    cache-sized chunks with per-thread scratch; any chunking gives the same bits."""
    if not (a.flags.c_contiguous and o.flags.c_contiguous and a.shape == o.shape):
        t, u = np.empty(o.shape, np.float32), np.empty(o.shape, np.float32)
        _erf_f32_chunk(np.broadcast_to(a, o.shape), o, t, u)
        return
    af, of = a.reshape(-1), o.reshape(-1)
    n = af.size
    scratch = getattr(_erf_local, "scratch", None)
    if scratch is None:
        scratch = _erf_local.scratch = (np.empty(_ERF_CHUNK, np.float32),
                                        np.empty(_ERF_CHUNK, np.float32))
    t, u = scratch
    for s in range(0, n, _ERF_CHUNK):
        m = min(_ERF_CHUNK, n - s)
        _erf_f32_chunk(af[s:s + m], of[s:s + m], t[:m], u[:m])


def _erf_keep(x):
    if x.dtype == np.float32 or x.dtype == np.float16:
        a = x.astype(np.float32)  # a copy: erf works in place on it
        erf_f32_into(a, a)
        return a if x.dtype == np.float32 else a.astype(np.float16)
    return np.asarray(_erf(x), dtype=x.dtype)


UNARY = {
    UnaryOp.NEG: np.negative, UnaryOp.ABS: np.abs, UnaryOp.EXP: np.exp, UnaryOp.LOG: np.log,
    UnaryOp.SQRT: np.sqrt, UnaryOp.RSQRT: _rsqrt, UnaryOp.TANH: np.tanh,
    UnaryOp.SIGMOID: _sigmoid, UnaryOp.SIN: np.sin, UnaryOp.COS: np.cos, UnaryOp.ERF: _erf_keep,
    UnaryOp.RELU: _relu, UnaryOp.SIGN: np.sign, UnaryOp.FLOOR: np.floor, UnaryOp.CEIL: np.ceil,
    UnaryOp.RECIPROCAL: _reciprocal, UnaryOp.NOT: np.logical_not,
}

_DOMAIN_OPS = frozenset({UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT, UnaryOp.RECIPROCAL,
                         UnaryOp.SIN, UnaryOp.COS, UnaryOp.EXP})
# ops whose inf/NaN results (x / 0, 0 ** -1, a float product past the dtype's range) torch
# gives silently: numpy's warnings are switched off for them
_DIVIDING = frozenset({BinaryOp.DIV, BinaryOp.FLOOR_DIV, BinaryOp.MOD, BinaryOp.POW,
                       BinaryOp.MUL, BinaryOp.ADD, BinaryOp.SUB})

BINARY = {
    BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.true_divide, BinaryOp.POW: np.power, BinaryOp.MAXIMUM: np.maximum,
    BinaryOp.MINIMUM: np.minimum, BinaryOp.FLOOR_DIV: np.floor_divide, BinaryOp.MOD: np.mod,
    BinaryOp.EQ: np.equal, BinaryOp.NE: np.not_equal, BinaryOp.LT: np.less,
    BinaryOp.LE: np.less_equal, BinaryOp.GT: np.greater, BinaryOp.GE: np.greater_equal,
    BinaryOp.AND: np.logical_and, BinaryOp.OR: np.logical_or,
    BinaryOp.BITAND: np.bitwise_and, BinaryOp.BITOR: np.bitwise_or,
    BinaryOp.BITXOR: np.bitwise_xor, BinaryOp.SHL: np.left_shift,
    BinaryOp.SHR: np.right_shift,
}

REDUCE = {
    ReduceOp.SUM: np.sum, ReduceOp.MEAN: np.mean, ReduceOp.PROD: np.prod, ReduceOp.MAX: np.max,
    ReduceOp.MIN: np.min,
}


def _check_index(op: str, index: np.ndarray, size: int, dim: int) -> None:
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)].flat[0]
        raise IndexOutOfRangeError(f"{op}: index {bad} is out of range for dim {dim} of size "
                                   f"{size}")


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def where_into(cond, lhs, rhs, out: np.ndarray) -> np.ndarray:
    """`out[...] = where(cond, lhs, rhs)` (broadcasting; scalars in out's dtype) on the bit
    patterns: `((lhs ^ rhs) * cond) ^ rhs`. Branch-free, so several times faster than
    `np.where` or a masked copy on unpredictable masks, and exact for every value (NaN too).
    `out` must not overlap `lhs` or `rhs`."""
    bits = _BITS[out.dtype.itemsize]
    o = out.view(bits)
    a = np.asarray(lhs, out.dtype).view(bits)
    b = np.asarray(rhs, out.dtype).view(bits)
    np.bitwise_xor(a, b, out=o)
    np.multiply(o, cond, out=o, casting="unsafe")
    np.bitwise_xor(o, b, out=o)
    return out


def _as_array(x) -> np.ndarray:
    # numpy returns scalars for 0-d results; primitives are always arrays
    return x if type(x) is np.ndarray else np.asarray(x)


