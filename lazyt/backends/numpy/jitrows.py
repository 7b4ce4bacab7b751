"""Row kernels of the numpy backend as numba functions: softmax, log_softmax, layer_norm and
rms_norm, each one pass over a row that stays in cache, float32 only (float64 and float16 keep
the numpy forms, whose transcendentals are already vector code). Attention's softmax keeps
numpy's exp (its blocks are already in cache between two GEMMs, and numba's exp is 8 lanes wide
where numpy's is 16: 5.5 against 2.6 ms for 6.3M floats on one core, and a whole numba softmax
there measured 1.7-2.3x slower on the 16-core host), with numba passes on either side of it:
`scale_mask_shift_rows` (scale, mask, row maximum and the shift by it; numpy's maximum along
rows of 128 is slow) and `normalize_rows` (the row sum in numpy's pairwise order, then the
division), the same bits as numpy's seven passes.

Every kernel takes the rows [lo, hi) of its arrays, so the backend's thread pool hands out the
work (numba's own threads stay unused: one pool, no oversubscription); all release the GIL.
Sums run in float32 with the additions reassociated into vector lanes (a tree-like order,
more accurate than numpy's sequential order within a row of 8 elements and about as accurate
as its pairwise sums beyond), except in `normalize_rows`, which follows numpy's order. `jit`
imports this module only when numba is installed.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jitmath import exp_f32, fdiv

f32 = np.float32
_FLAGS = dict(nogil=True, cache=True, error_model="python")


@njit(fastmath={"reassoc", "nsz"}, **_FLAGS)
def _row_sum(o, r):
    s = f32(0.0)
    for j in range(o.shape[1]):
        s += o[r, j]
    return s


@njit(fastmath={"nnan", "nsz"}, **_FLAGS)
def _row_max(x, r):
    """The row's largest value, as a vector reduction (told that there is no NaN: a NaN in
    the row makes its softmax NaN anyway, through the exponentials, as numpy's max would,
    whatever this returns)."""
    m = x[r, 0]
    for j in range(1, x.shape[1]):
        v = x[r, j]
        m = v if v > m else m
    return m


@njit(**_FLAGS)
def softmax_rows(x, o, lo, hi):
    """o[r] = exp(x[r] - max) / sum for the rows r in [lo, hi) of 2-D float32 arrays."""
    n = x.shape[1]
    for r in range(lo, hi):
        m = _row_max(x, r)
        for j in range(n):
            o[r, j] = exp_f32(x[r, j] - m)
        inv = fdiv(f32(1.0), _row_sum(o, r))
        for j in range(n):
            o[r, j] = o[r, j] * inv


@njit(**_FLAGS)
def log_softmax_rows(x, o, lo, hi):
    """o[r] = (x[r] - max) - log(sum(exp(x[r] - max))) for the rows [lo, hi): the composite's
    formula and order, one pass for the sum and one for the output."""
    n = x.shape[1]
    for r in range(lo, hi):
        m = _row_max(x, r)
        for j in range(n):
            o[r, j] = exp_f32(x[r, j] - m)
        lse = f32(np.log(_row_sum(o, r)))
        for j in range(n):  # (x - max) - lse: adding max to lse first would round it at
            o[r, j] = (x[r, j] - m) - lse  # max's scale (3e-5 at 1000)


@njit(fastmath={"reassoc", "nsz"}, **_FLAGS)
def _centered_sum_sq(x, r, mean):
    s = f32(0.0)
    for j in range(x.shape[1]):
        d = x[r, j] - mean
        s += d * d
    return s


@njit(fastmath={"reassoc", "nsz"}, **_FLAGS)
def _x_sum(x, r):
    s = f32(0.0)
    for j in range(x.shape[1]):
        s += x[r, j]
    return s


@njit(**_FLAGS)
def _norm_row(x, xr, o, r, w, b, eps):
    """o[r] = the layer norm of x[xr] (see `layer_norm_rows`)."""
    n = x.shape[1]
    has_w, has_b = w.shape[0] > 0, b.shape[0] > 0
    mean = fdiv(_x_sum(x, xr), f32(n))
    var = fdiv(_centered_sum_sq(x, xr, mean), f32(n))
    inv = fdiv(f32(1.0), np.sqrt(var + eps))
    if has_w and has_b:
        for j in range(n):
            o[r, j] = (x[xr, j] - mean) * inv * w[j] + b[j]
    elif has_w:
        for j in range(n):
            o[r, j] = (x[xr, j] - mean) * inv * w[j]
    elif has_b:
        for j in range(n):
            o[r, j] = (x[xr, j] - mean) * inv + b[j]
    else:
        for j in range(n):
            o[r, j] = (x[xr, j] - mean) * inv


@njit(**_FLAGS)
def layer_norm_rows(x, o, w, b, eps, lo, hi):
    """o[r] = (x[r] - mean) / sqrt(var + eps) * w + b for the rows [lo, hi) of 2-D float32
    arrays (biased variance, as torch); `w`/`b` are 1-D of the row's length, or empty for
    none."""
    for r in range(lo, hi):
        _norm_row(x, r, o, r, w, b, eps)


@njit(fastmath={"reassoc", "nsz"}, **_FLAGS)
def _sum_sq(x, r):
    s = f32(0.0)
    for j in range(x.shape[1]):
        v = x[r, j]
        s += v * v
    return s


@njit(**_FLAGS)
def rms_norm_rows(x, o, w, eps, lo, hi):
    """o[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for the rows [lo, hi) of 2-D float32
    arrays: one pass for the mean square, one for the output (the composite's formula: the
    reciprocal square root, then the products in its order); `w` is 1-D of the row's length,
    or empty for none."""
    n = x.shape[1]
    has_w = w.shape[0] > 0
    for r in range(lo, hi):
        inv = fdiv(f32(1.0), np.sqrt(fdiv(_sum_sq(x, r), f32(n)) + eps))
        if has_w:
            for j in range(n):
                o[r, j] = x[r, j] * inv * w[j]
        else:
            for j in range(n):
                o[r, j] = x[r, j] * inv


@njit(**_FLAGS)
def sum_layer_norm_rows(p, q, c, has_c, o, w, b, eps, lo, hi):
    """`layer_norm_rows` of (p + q) [+ c] (`has_c`), the sum formed a row at a time in a
    scratch row that stays in cache: the same bits as adding first, without the sum's pass
    through memory. Each addend is 2-D: a [1, n] one is one row broadcast over the rows."""
    n = o.shape[1]
    t = np.empty((1, n), np.float32)
    full_p, full_q, full_c = p.shape[0] > 1, q.shape[0] > 1, c.shape[0] > 1
    for r in range(lo, hi):
        rp, rq, rc = r if full_p else 0, r if full_q else 0, r if full_c else 0
        if has_c:
            for j in range(n):
                t[0, j] = (p[rp, j] + q[rq, j]) + c[rc, j]
        else:
            for j in range(n):
                t[0, j] = p[rp, j] + q[rq, j]
        _norm_row(t, 0, o, r, w, b, eps)


@njit(**_FLAGS)
def scale_mask_shift_rows(s, m, ridx, scale, dead, lo, hi):
    """For the rows r in [lo, hi) of the 2-D float32 scores `s` (in place):
    s[r] = s[r] * scale + m[ridx[r]] (`m`: the mask's distinct rows; an empty `ridx`: no mask,
    the scale only), then s[r] -= max(s[r]); dead[r] = 1 when the row's maximum is -inf and
    it holds no NaN (every key masked: the caller's weights of zero), else 0. The products,
    sums and differences round as numpy's separate passes do (no contraction), so the scores
    are the same bits. A NaN in a row is passed over by the maximum, where numpy's would be
    NaN: the row's softmax is NaN either way (NaN minus anything is NaN)."""
    n = s.shape[1]
    has_mask = ridx.shape[0] > 0
    acc = np.empty(8, np.float32)
    n8 = n - n % 8
    for r in range(lo, hi):
        if has_mask:
            mrow = m[ridx[r]]
            for j in range(n):
                s[r, j] = s[r, j] * scale + mrow[j]
        else:
            for j in range(n):
                s[r, j] = s[r, j] * scale
        for k in range(8):  # eight running maxima: independent chains the core overlaps
            acc[k] = f32(-np.inf)
        for j in range(0, n8, 8):
            for k in range(8):
                v = s[r, j + k]
                acc[k] = v if v > acc[k] else acc[k]
        mx = f32(-np.inf)
        for k in range(8):
            mx = acc[k] if acc[k] > mx else mx
        for j in range(n8, n):
            v = s[r, j]
            mx = v if v > mx else mx
        dead[r] = 0
        if mx == f32(-np.inf):
            dead[r] = 1
            for j in range(n):
                if s[r, j] != s[r, j]:
                    dead[r] = 0
                    break
        for j in range(n):
            s[r, j] = s[r, j] - mx


@njit(inline="always", **_FLAGS)
def _block_sum(s, r, lo, n, acc):
    """numpy's sum of s[r, lo:lo + n] for n <= 128: eight running sums (`acc`, 8 float32s:
    in an array, so that they become one vector register), combined as a tree, then the rest
    in order (one sequential loop below 8)."""
    if n < 8:
        t = f32(0.0)
        for i in range(lo, lo + n):
            t += s[r, i]
        return t
    for k in range(8):
        acc[k] = s[r, lo + k]
    end = lo + n - n % 8
    for i in range(lo + 8, end, 8):
        for k in range(8):
            acc[k] += s[r, i + k]
    t = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    for i in range(end, lo + n):
        t += s[r, i]
    return t


@njit(inline="always", **_FLAGS)
def _pairwise_sum(s, r, n, los, ns, right, left, acc):
    """The sum of the row s[r, :n] in numpy's order for a reduction along a contiguous row,
    so the same bits as `s.sum(axis=-1)`: its pairwise sum splits a range of more than 128
    elements in two halves (the first a multiple of 8) and adds their sums; ranges of at most
    128 are `_block_sum` (`acc`: its scratch). The recursion runs on explicit stacks, 64
    deep (numba's disk cache does not keep a recursive function): `los`/`ns` the ranges,
    `right` whether a range is its parent's second half, `left` the finished first half's
    sum beside it. Both helpers are inlined into `normalize_rows`, whose own scratch arrays
    LLVM then keeps in registers (a scratch passed in from a caller measured 1.5x slower)."""
    if n <= 128:
        return _block_sum(s, r, 0, n, acc)
    sp = 0
    los[0] = 0
    ns[0] = n
    while True:
        m = ns[sp]
        if m > 128:               # descend into the first half
            half = m // 2
            half -= half % 8
            los[sp + 1] = los[sp]
            ns[sp + 1] = half
            right[sp + 1] = False
            sp += 1
            continue
        v = _block_sum(s, r, los[sp], m, acc)
        while sp > 0:             # a finished range: hand its sum up
            if not right[sp]:     # a first half: keep its sum, go on with the second
                left[sp] = v
                right[sp] = True
                los[sp] = los[sp - 1] + m
                ns[sp] = ns[sp - 1] - m
                break
            v = left[sp] + v      # a second half: its parent's sum is done
            sp -= 1
            m = ns[sp]
        else:
            return v


@njit(**_FLAGS)
def normalize_rows(s, dead, lo, hi):
    """s[r] /= sum(s[r]) for the rows r in [lo, hi) of the 2-D float32 weights `s` (in
    place), the sum in numpy's order and the quotients as IEEE divisions, so the same bits as
    `np.divide(s, s.sum(axis=-1, keepdims=True))`; rows with dead[r] set become zeros."""
    n = s.shape[1]
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    right = np.empty(64, np.bool_)
    left = np.empty(64, np.float32)
    acc = np.empty(8, np.float32)
    for r in range(lo, hi):
        if dead[r]:
            for j in range(n):
                s[r, j] = f32(0.0)
            continue
        t = _pairwise_sum(s, r, n, los, ns, right, left, acc)
        for j in range(n):
            s[r, j] = fdiv(s[r, j], t)
