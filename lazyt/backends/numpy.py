"""The numpy backend: the embedded default. Primitives are plain `np.ndarray`s, so extension
authors write their numpy impls with ordinary numpy code."""
from __future__ import annotations

import math
import threading
from typing import Sequence

import numpy as np

from .. import dtype as dt
from ..dtype import DType
from ..errors import IndexOutOfRangeError, ShapeError
from ..ops import BinaryOp, ReduceOp, UnaryOp, kernel
from .base import Backend

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
#: Elements per step of `erf_f32_into` (a fused tile: numpy_fused.TILE_BYTES of float32).
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
_DIVIDING = frozenset({BinaryOp.DIV, BinaryOp.FLOOR_DIV, BinaryOp.MOD, BinaryOp.POW})

BINARY = {
    BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.true_divide, BinaryOp.POW: np.power, BinaryOp.MAXIMUM: np.maximum,
    BinaryOp.MINIMUM: np.minimum, BinaryOp.FLOOR_DIV: np.floor_divide, BinaryOp.MOD: np.mod,
    BinaryOp.EQ: np.equal, BinaryOp.NE: np.not_equal, BinaryOp.LT: np.less,
    BinaryOp.LE: np.less_equal, BinaryOp.GT: np.greater, BinaryOp.GE: np.greater_equal,
    BinaryOp.AND: np.logical_and, BinaryOp.OR: np.logical_or,
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


class NumpyBackend(Backend):
    """Executes every primitive with numpy on the host."""

    name = "numpy"

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_numpy(self, x: np.ndarray) -> np.ndarray:
        return x

    def dtype_of(self, x: np.ndarray) -> DType:
        return dt.from_numpy(x.dtype)

    def empty(self, shape, dtype: DType):
        return np.empty(shape, dtype.np)

    def zeros(self, shape, dtype: DType):
        return np.zeros(shape, dtype.np)

    def full(self, shape, value, dtype: DType):
        return np.full(shape, value, dtype.np)

    def unary(self, op: UnaryOp, x):
        if op in _DOMAIN_OPS:  # log(0) = -inf, sqrt(-1) = nan, as in torch: no warning
            with np.errstate(divide="ignore", invalid="ignore"):
                return _as_array(UNARY[op](x))
        return _as_array(UNARY[op](x))

    def binary(self, op: BinaryOp, lhs, rhs):
        if op in _DIVIDING:  # x / 0 = inf, 0 ** -1 = inf, as in torch: no warning
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return _as_array(BINARY[op](lhs, rhs))
        return _as_array(BINARY[op](lhs, rhs))

    def where(self, cond, lhs, rhs):
        dtype = lhs.dtype if isinstance(lhs, np.ndarray) else rhs.dtype \
            if isinstance(rhs, np.ndarray) else None
        if dtype is None:
            return np.where(cond, lhs, rhs)
        shape = np.broadcast_shapes(np.shape(cond), np.shape(lhs), np.shape(rhs))
        return where_into(cond, lhs, rhs, np.empty(shape, dtype))

    def cast(self, x, dtype: DType):
        return x.astype(dtype.np)

    def reduce(self, op: ReduceOp, x, dims: tuple, keepdim: bool):
        if op is ReduceOp.ARGMAX or op is ReduceOp.ARGMIN:
            fn = np.argmax if op is ReduceOp.ARGMAX else np.argmin
            return _as_array(fn(x, axis=dims[0], keepdims=keepdim).astype(np.int64))
        if op in (ReduceOp.SUM, ReduceOp.PROD) and x.dtype.kind in "biu":
            return _as_array(REDUCE[op](x, axis=dims, keepdims=keepdim, dtype=np.int64))
        if x.size >= _PARALLEL_MIN and x.ndim and dims:
            dims = tuple(sorted({d % x.ndim for d in dims}))
        if (x.size >= _PARALLEL_MIN and dims and dims[0] > 0 and x.shape[0] > 1
                and (x.dtype == np.float32 or x.dtype == np.float64)):
            # the rows of axis 0 are independent: reduce slices of them on the thread pool
            # (each output element sees the same values in the same order: the same bits)
            from .numpy_fused import parallel_for
            fn = REDUCE[op]
            out = np.empty(_reduced_shape(x.shape, dims, keepdim), x.dtype)
            parallel_for(lambda lo, hi: fn(x[lo:hi], axis=dims, keepdims=keepdim,
                                           out=out[lo:hi]),
                         x.shape[0], _grain(x.size // x.shape[0]))
            return out
        out = REDUCE[op](x, axis=dims, keepdims=keepdim)
        if out.dtype != x.dtype:  # mean of float16 accumulates wider
            out = out.astype(x.dtype)
        return _as_array(out)

    def matmul(self, lhs, rhs):
        if lhs.ndim > 2 and all(s == 1 for s in rhs.shape[:-2]):
            # one large GEMM instead of numpy's loop of small ones over the batch
            out = np.matmul(lhs.reshape(-1, lhs.shape[-1]), rhs.reshape(rhs.shape[-2:]))
            return out.reshape(lhs.shape[:-1] + (rhs.shape[-1],))
        if (lhs.ndim > 2 and lhs.shape[:-2] == rhs.shape[:-2] and lhs.shape[0] > 1
                and lhs.dtype.kind == "f" and lhs.dtype == rhs.dtype and lhs.size
                and rhs.size):
            m, k = lhs.shape[-2:]
            macs = m * k * rhs.shape[-1]  # of one matrix product
            item = macs * math.prod(lhs.shape[1:-2])  # of one row of axis 0
            if (macs <= _SMALL_GEMM and item * lhs.shape[0] >= _SPLIT_BATCH_MIN
                    and _pool_threads() >= _SPLIT_MIN_THREADS):
                # numpy runs a stack of small GEMMs one by one (and slowly on strided views,
                # such as k.mT in attention); split axis 0 over the thread pool, each slice
                # made contiguous first
                from .numpy_fused import parallel_for
                out = np.empty(lhs.shape[:-1] + rhs.shape[-1:], lhs.dtype)
                parallel_for(lambda lo, hi: np.matmul(
                    np.ascontiguousarray(lhs[lo:hi]), np.ascontiguousarray(rhs[lo:hi]),
                    out=out[lo:hi]), lhs.shape[0], max(1, -(-_GEMM_GRAIN // item)))
                return out
        return np.matmul(lhs, rhs)

    def reshape(self, x, shape):
        if x.flags.c_contiguous or x.size < _PARALLEL_MIN:
            return x.reshape(shape)
        try:  # a view when the strides allow it
            return np.reshape(x, shape, copy=False)
        except (ValueError, TypeError):  # needs a copy (TypeError: numpy < 2.1)
            return _copy(x).reshape(shape)

    def permute(self, x, axes):
        return x.transpose(axes)

    def expand(self, x, shape):
        return np.broadcast_to(x, shape)

    def slice(self, x, slices):
        return x[tuple(slice(a, b if b >= 0 or c > 0 else None, c) for a, b, c in slices)]

    def cat(self, xs: Sequence[np.ndarray], dim: int):
        return np.concatenate(xs, axis=dim)

    def contiguous(self, x):
        return x if x.flags.c_contiguous else _copy(x)

    def gather(self, x, dim, index):
        _check_index("gather", index, x.shape[dim], dim)
        view = tuple(slice(None) if i == dim else slice(0, s) for i, s in enumerate(index.shape))
        return np.take_along_axis(x[view], index, axis=dim)

    def scatter_add(self, x, dim, index, src):
        _check_index("scatter_add", index, x.shape[dim], dim)
        out = np.array(x, copy=True)
        idx = list(np.indices(index.shape, sparse=True))
        idx[dim] = index
        np.add.at(out, tuple(idx), src[tuple(slice(0, s) for s in index.shape)])
        return out

    def index_select(self, x, dim, index):
        _check_index("index_select", index, x.shape[dim], dim)
        return np.take(x, index, axis=dim)

    def index_add(self, x, dim, index, src):
        _check_index("index_add", index, x.shape[dim], dim)
        out = np.array(x, copy=True)
        np.add.at(np.moveaxis(out, dim, 0), index, np.moveaxis(src, dim, 0))
        return out

    def softmax(self, x, dim: int):
        """Along the last dim of a float32/float64 array: max, subtract, exp, sum and divide
        row block by row block (each block stays in cache), blocks spread over the fused
        executor's threads. The same ops in the same order as the generic helper, so the
        same bits on contiguous input (a strided one is copied first, and numpy's reductions
        may then sum in another order); other cases use the generic helper."""
        n = x.shape[-1] if x.ndim else 0
        if x.dtype not in (np.float32, np.float64) or dim != x.ndim - 1 or x.size == 0:
            return super().softmax(x, dim)
        rows = np.ascontiguousarray(x).reshape(-1, n)
        out = np.empty(rows.shape, x.dtype)

        def work(lo, hi):
            r, o = rows[lo:hi], out[lo:hi]
            np.subtract(r, r.max(axis=-1, keepdims=True), out=o)
            np.exp(o, out=o)
            np.divide(o, o.sum(axis=-1, keepdims=True), out=o)

        _row_blocks(work, rows.shape[0], n * x.itemsize)
        return out.reshape(x.shape)

    @kernel(when=lambda x, weight, bias=None: bias is None)
    def linear(self, x, weight, bias=None):
        """One GEMM on the 2-D view of `x` (the same call the generic helper ends in), the
        bias added in place. The Fusion layer records only `x @ weight^T` as this kernel: the
        bias add stays an elementwise op of its own, which fuses with what follows."""
        if x.ndim < 2:
            return super().linear(x, weight, bias)
        y = self.matmul(x, weight.T.reshape((1,) * (x.ndim - 2) + weight.T.shape))
        if bias is not None:
            y += bias
        return y

    def attention(self, q, k, v, mask=None, scale: float = 1.0):
        """float32/float64 with the same batch dims: the scores, scale, mask, softmax and
        the product with v of a few heads at a time, each block in cache (the scores of the
        whole batch never exist), blocks spread over the fused executor's threads. Other
        cases use the generic helper."""
        lead = q.shape[:-2]
        d = q.dtype
        if (d not in (np.float32, np.float64) or q.ndim < 3 or k.dtype != d or v.dtype != d
                or k.shape[:-2] != lead or v.shape[:-2] != lead
                or (mask is not None and mask.dtype != d)
                or 0 in q.shape or 0 in k.shape or 0 in v.shape):
            return super().attention(q, k, v, mask, scale)
        n_q, n_k = q.shape[-2], k.shape[-2]
        out = np.empty(lead + (n_q, v.shape[-1]), d)
        if mask is not None:
            mask = np.broadcast_to(mask, lead + (n_q, n_k))
        scale = d.type(scale)
        from .numpy_fused import TILE_BYTES, _nd_tiles, parallel_for
        # blocks of query rows small enough that BLAS runs each GEMM on the calling thread
        # (its own threads would fight the pool's), and of as many heads as fill a tile
        rows = max(1, min(n_q, _BLAS_ONE_THREAD // (n_k * max(q.shape[-1], v.shape[-1], 1))))
        heads = _nd_tiles(lead, max(1, TILE_BYTES // (rows * n_k * d.itemsize)))
        blocks = [(idx, r) for idx in heads for r in range(0, n_q, rows)]

        def work(lo, hi):
            for idx, r in blocks[lo:hi]:
                at = (Ellipsis, slice(r, r + rows), slice(None))
                s = np.matmul(q[idx][at], k[idx].swapaxes(-1, -2))
                if scale != 1:
                    np.multiply(s, scale, out=s)
                if mask is not None:
                    np.add(s, mask[idx][at], out=s)
                top = s.max(axis=-1, keepdims=True)
                dead = np.isneginf(top)  # every score -inf: weights of zero, as the generic
                np.subtract(s, top, out=s)
                np.exp(s, out=s)
                np.divide(s, s.sum(axis=-1, keepdims=True), out=s)
                if dead.any():
                    np.copyto(s, 0, where=dead)
                np.matmul(s, v[idx], out=out[idx][at])

        parallel_for(work, len(blocks), 1)
        return out

    def layer_norm(self, x, n_dims: int, eps: float, weight=None, bias=None):
        """float32/float64: the generic helper's ops in the same order (the same bits on
        contiguous input), row block by row block in cache, blocks spread over the fused
        executor's threads."""
        if not 0 <= n_dims <= x.ndim:
            raise ShapeError(f"layer_norm: cannot normalize {n_dims} trailing dims of shape "
                             f"{x.shape}")
        if (x.dtype not in (np.float32, np.float64) or x.size == 0 or n_dims < 1
                or any(v is not None and v.dtype != x.dtype for v in (weight, bias))):
            return super().layer_norm(x, n_dims, eps, weight, bias)
        inner = x.shape[x.ndim - n_dims:]
        n = math.prod(inner)
        rows = np.ascontiguousarray(x).reshape((-1,) + inner)
        out = np.empty(rows.shape, x.dtype)
        axes = tuple(range(1, n_dims + 1))
        one = x.dtype.type(1)

        def work(lo, hi):
            r, o = rows[lo:hi], out[lo:hi]
            np.subtract(r, np.mean(r, axis=axes, keepdims=True), out=o)
            var = np.mean(o * o, axis=axes, keepdims=True)
            np.add(var, eps, out=var)
            np.sqrt(var, out=var)
            np.multiply(o, np.divide(one, var, out=var), out=o)
            if weight is not None:
                np.multiply(o, weight, out=o)
            if bias is not None:
                np.add(o, bias, out=o)

        _row_blocks(work, rows.shape[0], n * x.itemsize)
        return out.reshape(x.shape)

    def run_fused(self, block, inputs, scalars):
        """A fused elementwise block without per-op temporaries (see numpy_fused)."""
        run = _RUN_BLOCK[0]
        if run is None:
            from .numpy_fused import run_block as run
            _RUN_BLOCK[0] = run
        return run(block, inputs, scalars)


_RUN_BLOCK = [None]
#: Eager ops on at least this many elements (copies, reductions) use the thread pool.
_PARALLEL_MIN = 1 << 20


def _grain(row_elems: int) -> int:
    """Rows of `row_elems` elements per thread-pool piece: at least a 256K-element tile."""
    return max(1, -(-(1 << 18) // max(row_elems, 1)))


def _reduced_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _row_blocks(work, n_rows: int, row_bytes: int) -> None:
    """`work(lo, hi)` over row blocks of about one fused tile each (in cache), the blocks
    spread over the thread pool."""
    from .numpy_fused import TILE_BYTES, parallel_for
    block = max(1, TILE_BYTES // max(row_bytes, 1))

    def blocks(lo, hi):
        for a in range(lo, hi, block):
            work(a, min(a + block, hi))

    parallel_for(blocks, n_rows, block)


def _copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy; large ones are split over the thread pool along axis 0 (a
    single thread's memory bandwidth is a fraction of the machine's)."""
    out = np.empty(x.shape, x.dtype)
    if x.size < _PARALLEL_MIN or x.ndim == 0 or x.shape[0] < 2:
        np.copyto(out, x)
        return out
    from .numpy_fused import parallel_for
    parallel_for(lambda lo, hi: np.copyto(out[lo:hi], x[lo:hi]), x.shape[0],
                 _grain(x.size // x.shape[0]))
    return out


#: Multiply-adds (m*n*k) of a GEMM that OpenBLAS runs on the calling thread (its threshold
#: for threading, 4 * 65536). Thread-pool work keeps its GEMMs at or below it: pool threads
#: that call larger ones queue for BLAS's own threads (attention ran 20x slower on 2 cores).
_BLAS_ONE_THREAD = 1 << 18

#: Batched matmuls whose matrices have at most this many multiply-adds (m*k*n) and whose batch
#: totals at least _SPLIT_BATCH_MIN are split over threads (BLAS threads each GEMM only when
#: it is large). Attention's [32, 12, 128, 32] @ [32, 12, 32, 128] ran 3.4x faster on 8
#: threads of a 16-core host.
_SMALL_GEMM = 1 << 22
_SPLIT_BATCH_MIN = 1 << 22
#: Multiply-adds per thread-pool piece of a split batched matmul.
_GEMM_GRAIN = 1 << 21
#: ... and only with this many pool threads: on 2 cores BLAS already spreads each small GEMM
#: over both, and splitting made a BERT forward 1.2x slower.
_SPLIT_MIN_THREADS = 4


def _pool_threads() -> int:
    from .numpy_fused import _threads
    return _threads()  # numpy_fused imports this module, so it is imported on first use
