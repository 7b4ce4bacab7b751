"""The numpy backend's float32 attention as one numba kernel per piece of heads.

`attention_heads` runs the scores, the scale, the mask, the softmax and the product with v of
every head in [lo, hi) without returning to Python: each thread of the backend's pool makes
one call for its share of the heads. The two products are BLAS calls made from inside the
kernel (numba's `np.dot`, which reaches BLAS through SciPy), on row blocks small enough that
BLAS runs them on the calling thread. Against the numpy form (a GEMM, two numba passes,
numpy's exp and a GEMM per block of heads, each a Python call that gives up and takes back
the GIL), this removes the GIL from the loop: on a 16-core host the numpy form's threads
spent most of an attention call waiting for the GIL (7.3 ms for MiniLM's b32 s128 heads
where its single-thread work is 18 ms).

Each head is copied in from a 1-D view of its tensor with unsigned offsets (numba checks a
signed index for wrap-around, a branch per element that kept the copies scalar: they took a
third of the kernel), and each weight row is normalized on its output row (`dv` values)
instead of on its `n_k` weights. On one core, MiniLM's b32 s128 heads went from 34-36 ms to
21 ms.

Results match the numpy form to a few ulp, not bit for bit: the exponential is `jitmath`'s
float32 polynomial (within 2 ulp of numpy's), the row sums are reassociated into vector
lanes, and the weights' normalization comes after the product with v. Rows whose every score is -inf (and no NaN) give zeros, as the numpy form's; a NaN
score makes its row NaN. `jit` imports this module only when numba and SciPy are installed.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64 as u64

from .jitmath import exp_shifted_f32, fdiv
from .jitrows import _row_max, _row_sum

f32 = np.float32
_FLAGS = dict(nogil=True, cache=True, error_model="python")


@njit(**_FLAGS)
def _scores_row(s, i, mrow, has_mask, scale, acc):
    """s[i] = exp(s[i] * scale (+ mrow) - its max) in place; returns 1 / the row's sum, the
    factor of its output row (the weights are normalized there, on `dv` values instead of
    `n_k`). A row of -inf only (no NaN) becomes zeros (factor 0); a NaN makes the row NaN,
    through the exponentials. `acc`: scratch of eight float32s."""
    row = s[i]
    n = row.shape[0]
    if has_mask:
        for j in range(n):
            row[j] = row[j] * scale + mrow[j]
    else:
        for j in range(n):
            row[j] = row[j] * scale
    m = _row_max(s, i)   # (a NaN may hide from it; the exponentials make its row NaN)
    if m == f32(-np.inf):
        dead = True
        for j in range(n):
            if row[j] != row[j]:
                dead = False
                break
        if dead:
            for j in range(n):
                row[j] = f32(0.0)
            return f32(0.0)
    for j in range(n):
        # weights below exp(-87) (masked keys) are 0: their exponentials would be subnormal,
        # which costs microcode assists on x86 (3x the kernel's time with BERT's mask), and
        # next to the row's largest weight, 1, they vanish in the sum anyway; NaN stays NaN
        d = row[j] - m
        low = d < f32(-87.0)
        e = exp_shifted_f32(f32(-87.0) if low else d)
        row[j] = f32(0.0) if low else e
    return fdiv(f32(1.0), _row_sum(s, i))


@njit(inline="always", **_FLAGS)
def _copy_head(dst, src, at, row_stride):
    """dst[j, c] = src[at + j * row_stride + c]: a head's rows from a 1-D view, at unsigned
    offsets (numba wraps negative indices, a branch per element that kept this loop scalar,
    8x slower)."""
    n = u64(dst.shape[1])
    for j in range(dst.shape[0]):
        base = u64(at + j * row_stride)
        for c in range(n):
            dst[j, c] = src[base + c]


@njit(**_FLAGS)
def attention_heads(qf, qs, kf, ks, vf, vs, of, os_, dims, table, ids, has_mask, scale, rows,
                    lo, hi):
    """out[b, h] = softmax(q[b, h] @ k[b, h]^T * scale + mask) @ v[b, h] for the heads
    t = b * H + h in [lo, hi). Each of q [B, H, n_q, d], k [B, H, n_k, d], v [B, H, n_k, dv]
    and out [B, H, n_q, dv] (float32) is a 1-D array from its first element and the element
    strides of its first three dims (`qs`...; its last dim dense): element (b, h, r, c) is
    at b * s0 + h * s1 + r * s2 + c, so that the copies in and out are vector loops.
    `dims` = (H, n_q, n_k, d, dv). The mask row of query r of head (b, h) is
    table[ids[b, h, r]] (when `has_mask`); `rows` query rows go to BLAS at a time."""
    H, n_q, n_k, d, dv = dims
    qh = np.empty((n_q, d), np.float32)
    kh = np.empty((n_k, d), np.float32)
    vh = np.empty((n_k, dv), np.float32)
    s = np.empty((rows, n_k), np.float32)
    o = np.empty((rows, dv), np.float32)
    inv = np.empty(rows, np.float32)
    empty = np.empty(0, np.float32)
    acc = np.empty(8, np.float32)
    udv = u64(dv)
    for t in range(lo, hi):
        b = t // H
        h = t - b * H
        _copy_head(kh, kf, b * ks[0] + h * ks[1], ks[2])
        _copy_head(vh, vf, b * vs[0] + h * vs[1], vs[2])
        _copy_head(qh, qf, b * qs[0] + h * qs[1], qs[2])
        at = u64(b * os_[0] + h * os_[1])
        for r0 in range(0, n_q, rows):
            m = min(rows, n_q - r0)
            sb = s[:m]
            ob = o[:m]
            np.dot(qh[r0:r0 + m], kh.T, sb)
            for i in range(m):
                mrow = table[ids[b, h, r0 + i]] if has_mask else empty
                inv[i] = _scores_row(sb, i, mrow, has_mask, scale, acc)
            np.dot(sb, vh, ob)
            for i in range(m):
                base = at + u64((r0 + i) * os_[2])
                f = inv[i]
                for c in range(udv):
                    of[base + c] = ob[i, c] * f
