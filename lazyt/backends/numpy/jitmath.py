"""Scalar math for the numba kernels of the numpy backend, in forms LLVM vectorizes.

numba's `math.exp`/`math.tanh` call the C library one element at a time, so a loop that uses
them never becomes SIMD code (a numba erf-GELU ran slower than numpy). The float32 functions
here are branch-free polynomials built from adds, multiplies, `min`/`max` and one bit cast,
which LLVM turns into vector instructions; float64 keeps the C library (its polynomials would
need more terms than they save). Accuracy against the exactly rounded result, measured over
every float32 in the stated ranges (tests/backends/numpy/test_numba.py checks them):

- `exp_f32`: Cody-Waite reduction by ln 2 and a degree-7 polynomial; at most 1 ulp.
- `exp_shifted_f32`: `exp_f32` for arguments in [-87, 88] (softmax weights), the same bits.
- `tanh_f32`: an odd polynomial below |x| = 0.625 and 1 - 2 / (exp(2|x|) + 1) above;
  at most 2 ulp.
- `erf_f32`: the backend's float32 rational fit (`ufuncs._ERF_P/_ERF_Q`), the same operations
  in the same order as its numpy form, so the same bits; within 7 ulp of the exact erf.

`sum_f32` sums a scratch row (in float64 lanes) for the reduction kernels
(`jit.try_reduce`), the one function here compiled with reassociation allowed, so the
elementwise code around it keeps its order.

This module imports numba: only `jit` imports it, and only when numba is installed.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .ufuncs import _ERF_P, _ERF_Q

f32 = np.float32

@intrinsic
def _bits_to_f32(typingctx, x):
    """The float32 whose bit pattern is the low 32 bits of the integer `x`."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        if v.type.width != 32:
            v = builder.trunc(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return types.float32(x), codegen

@intrinsic
def fdiv(typingctx, a, b):
    """a / b for two floats of one type, as IEEE division (inf or NaN for a zero divisor,
    as numpy): numba's `/` checks for zero first, and that branch stops vectorization."""
    if not (isinstance(a, types.Float) and a == b):
        return None

    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])

    return a(a, b), codegen

_LOG2E = f32(1.4426950408889634)
_LN2_HI = f32(0.693145751953125)       # ln 2 split so that n * _LN2_HI is exact
_LN2_LO = f32(1.428606765330187e-06)
_EXP_HI = f32(88.72283)                # beyond: +inf; below _EXP_LO: 0 (numpy's limits)
_EXP_LO = f32(-103.97208)

@njit(inline="always", cache=True)
def _exp_parts(c):
    """exp(c) = p * 2^n for a float32 c in exp's range: n (a float32 integer) and p, by
    Cody-Waite reduction by ln 2 and a degree-7 polynomial."""
    n = np.floor(c * _LOG2E + f32(0.5))  # np.floor keeps float32 (math.floor gives int64,
    # and int64 * float32 would make the whole polynomial float64)
    r = c - n * _LN2_HI
    r = r - n * _LN2_LO
    p = f32(1.9875691500e-4)
    p = p * r + f32(1.3981999507e-3)
    p = p * r + f32(8.3334519073e-3)
    p = p * r + f32(4.1665795894e-2)
    p = p * r + f32(1.6666665459e-1)
    p = p * r + f32(5.0000001201e-1)
    return p * r * r + r + f32(1.0), n

@njit(inline="always", cache=True)
def exp_f32(x):
    """exp of a float32 (NaN stays NaN; overflow gives inf, underflow 0 or a subnormal)."""
    c = min(max(x, f32(-104.0)), f32(89.0))  # NaN: both comparisons keep NaN below
    p, n = _exp_parts(c)
    # 2^n in two factors, so that n down to -149 (subnormal results) and up to 128 stay exact
    k = np.int64(n)
    h = k >> 1
    y = p * _bits_to_f32((h + 127) << 23) * _bits_to_f32((k - h + 127) << 23)
    y = f32(np.inf) if x > _EXP_HI else y
    y = f32(0.0) if x < _EXP_LO else y
    return x if x != x else y

@njit(inline="always", cache=True)
def exp_shifted_f32(x):
    """exp of a float32 in [-87, 88] (or NaN): `exp_f32` without its range handling (clamps,
    the split power of two, the inf / 0 selects), so the same bits in that range, in about
    three quarters of the instructions. For softmax weights, whose arguments are shifted by
    the row's largest value."""
    p, n = _exp_parts(x)
    return p * _bits_to_f32((np.int64(n) + 127) << 23)   # (NaN: p is NaN)

@njit(inline="always", cache=True)
def tanh_f32(x):
    """tanh of a float32 (odd; +-1 beyond |x| = 9; NaN stays NaN)."""
    a = abs(x)
    z = x * x
    small = ((((f32(-5.70498872745e-3) * z + f32(2.06390887954e-2)) * z
               - f32(5.37397155531e-2)) * z + f32(1.33314422036e-1)) * z
             - f32(3.33332819422e-1)) * z * x + x
    e = exp_f32(min(f32(2.0) * a, f32(40.0)))
    big = f32(1.0) - fdiv(f32(2.0), e + f32(1.0))
    big = -big if x < f32(0.0) else big
    return small if a < f32(0.625) else big if a == a else x

@njit(inline="always", cache=True)
def maximum(a, b):
    """numpy's maximum: NaN if either is NaN."""
    return b if (a < b) | (b != b) else a  # `|`, not `or`: no branch

@njit(inline="always", cache=True)
def minimum(a, b):
    """numpy's minimum: NaN if either is NaN."""
    return b if (a > b) | (b != b) else a

_P0, _P1, _P2, _P3, _P4, _P5 = (f32(c) for c in _ERF_P)
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5 = (f32(c) for c in _ERF_Q)

@njit(inline="always", cache=True)
def erf_f32(x):
    """erf of a float32 with the numpy backend's rational fit (same bits as its ufunc form)."""
    o = minimum(maximum(x, f32(-4.0)), f32(4.0))  # NaN propagates; +-inf clamp to +-4
    t = o * o
    u = t * _P5
    u = (u + _P4) * t
    u = (u + _P3) * t
    u = (u + _P2) * t
    u = (u + _P1) * t
    u = u + _P0
    o = o * u
    u = t * _Q5
    u = (u + _Q4) * t
    u = (u + _Q3) * t
    u = (u + _Q2) * t
    u = (u + _Q1) * t
    u = u + _Q0
    o = fdiv(o, u)
    return maximum(minimum(o, f32(1.0)), f32(-1.0))  # the fit overshoots 1 near |x| = 4

@njit(fastmath={"reassoc", "nsz"}, nogil=True, cache=True)
def sum_f32(v, n):
    """The sum of the float32 values v[:n] as a float64, reassociated into vector lanes.
    The lanes add in float64: in float32 their error depended on how many lanes LLVM chose
    for the host's CPU (a row of 0.1 + 1 averaged to 1.0999993 on a 16-core host, within
    2e-7 of 1.1 here); float64 lanes make it exact to float32's precision on every host."""
    s = 0.0
    for j in range(n):
        s += v[j]
    return s
