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

Results match the numpy form to a few ulp, not bit for bit: the exponential is `jitmath`'s
float32 polynomial (within 2 ulp of numpy's) and the row sums are reassociated into vector
lanes. Rows whose every score is -inf (and no NaN) give zeros, as the numpy form's; a NaN
score makes its row NaN. `jit` imports this module only when numba and SciPy are installed.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jitmath import exp_f32, fdiv
from .jitrows import _row_sum

f32 = np.float32
_FLAGS = dict(nogil=True, cache=True, error_model="python")


@njit(**_FLAGS)
def _scale_mask_max(row, mrow, has_mask, scale, acc):
    """row = row * scale (+ mrow) in place; returns the row's largest value, kept in eight
    running maxima (`acc`: eight float32s) so that the loop is vector code. A NaN is passed
    over here; the exponentials make its row NaN."""
    n = row.shape[0]
    if has_mask:
        for j in range(n):
            row[j] = row[j] * scale + mrow[j]
    else:
        for j in range(n):
            row[j] = row[j] * scale
    n8 = n - n % 8
    for k in range(8):
        acc[k] = f32(-np.inf)
    for j in range(0, n8, 8):
        for k in range(8):
            v = row[j + k]
            acc[k] = v if v > acc[k] else acc[k]
    m = f32(-np.inf)
    for k in range(8):
        m = acc[k] if acc[k] > m else m
    for j in range(n8, n):
        v = row[j]
        m = v if v > m else m
    return m


@njit(**_FLAGS)
def _softmax_row(s, i, mrow, has_mask, scale, acc):
    """s[i] = softmax(s[i] * scale (+ mrow)) in place; a row of -inf only (no NaN) becomes
    zeros. `acc`: scratch of eight float32s."""
    row = s[i]
    n = row.shape[0]
    m = _scale_mask_max(row, mrow, has_mask, scale, acc)
    if m == f32(-np.inf):
        dead = True
        for j in range(n):
            if row[j] != row[j]:
                dead = False
                break
        if dead:
            for j in range(n):
                row[j] = f32(0.0)
            return
    for j in range(n):
        # weights below exp(-87) (masked keys) are 0: their exponentials would be subnormal,
        # which costs microcode assists on x86 (3x the kernel's time with BERT's mask), and
        # next to the row's largest weight, 1, they vanish in the sum anyway; NaN stays NaN
        d = row[j] - m
        low = d < f32(-87.0)
        e = exp_f32(f32(-87.0) if low else d)
        row[j] = f32(0.0) if low else e
    inv = fdiv(f32(1.0), _row_sum(s, i))
    for j in range(n):
        row[j] = row[j] * inv


@njit(**_FLAGS)
def attention_heads(q, k, v, table, ids, has_mask, scale, rows, out, lo, hi):
    """out[b, h] = softmax(q[b, h] @ k[b, h]^T * scale + mask) @ v[b, h] for the heads
    t = b * H + h in [lo, hi). q [B, H, n_q, d], k [B, H, n_k, d], v [B, H, n_k, dv] and
    out [B, H, n_q, dv] float32 of any strides; the mask row of query r of head (b, h) is
    table[ids[b, h, r]] (when `has_mask`); `rows` query rows go to BLAS at a time."""
    H, n_q, d = q.shape[1], q.shape[2], q.shape[3]
    n_k, dv = k.shape[2], v.shape[3]
    qh = np.empty((n_q, d), np.float32)
    kh = np.empty((n_k, d), np.float32)
    vh = np.empty((n_k, dv), np.float32)
    s = np.empty((rows, n_k), np.float32)
    o = np.empty((rows, dv), np.float32)
    empty = np.empty(0, np.float32)
    acc = np.empty(8, np.float32)
    for t in range(lo, hi):
        b = t // H
        h = t - b * H
        for j in range(n_k):
            for c in range(d):
                kh[j, c] = k[b, h, j, c]
            for c in range(dv):
                vh[j, c] = v[b, h, j, c]
        for r in range(n_q):
            for c in range(d):
                qh[r, c] = q[b, h, r, c]
        for r0 in range(0, n_q, rows):
            m = min(rows, n_q - r0)
            sb = s[:m]
            ob = o[:m]
            np.dot(qh[r0:r0 + m], kh.T, sb)
            for i in range(m):
                mrow = table[ids[b, h, r0 + i]] if has_mask else empty
                _softmax_row(sb, i, mrow, has_mask, scale, acc)
            np.dot(sb, vh, ob)
            for i in range(m):
                for c in range(dv):
                    out[b, h, r0 + i, c] = ob[i, c]
