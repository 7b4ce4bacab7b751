"""The numpy backend: the embedded default. Primitives are plain `np.ndarray`s, so extension
authors write their numpy impls with ordinary numpy code."""
from __future__ import annotations

import math
import sys
import time
from typing import Sequence

import numpy as np

from ... import dtype as dt
from ... import shape as sh
from ...dtype import DType
from ...ops import BinaryOp, ReduceOp, UnaryOp, kernel
from ..base import Backend
from . import jit, memory
from ..fused import summed_inputs
from .fused import run_block
from ...config import max_threads
from .pool import TILE_BYTES, _nd_tiles, _threads, parallel_for
from .ufuncs import (BINARY, REDUCE, UNARY, _DIVIDING, _DOMAIN_OPS, _as_array, _check_index,
                     where_into)


class NumpyBackend(Backend):
    """Executes every primitive with numpy on the host."""

    name = "numpy"

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_numpy(self, x: np.ndarray) -> np.ndarray:
        return x

    def host_value(self, x: np.ndarray) -> np.ndarray:
        return x

    def dtype_of(self, x: np.ndarray) -> DType:
        return dt.from_numpy(x.dtype)

    def empty(self, shape, dtype: DType):
        return memory.empty(shape, dtype.np)

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
        return where_into(cond, lhs, rhs, memory.empty(shape, dtype))

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
            fn = REDUCE[op]
            out = memory.empty(sh.reduce(x.shape, dims, keepdim), x.dtype)
            parallel_for(lambda lo, hi: fn(x[lo:hi], axis=dims, keepdims=keepdim,
                                           out=out[lo:hi]),
                         x.shape[0], _grain(x.size // x.shape[0]))
            return out
        out = REDUCE[op](x, axis=dims, keepdims=keepdim)
        if out.dtype != x.dtype:  # mean of float16 accumulates wider
            out = out.astype(x.dtype)
        return _as_array(out)

    def cumsum(self, x, dim: int):
        """Running sums along `dim` in x's own dtype (float32 accumulates in float32, as torch
        on the CPU)."""
        return np.cumsum(x, axis=dim, dtype=x.dtype)

    def matmul(self, lhs, rhs):
        if lhs.ndim > 2 and all(s == 1 for s in rhs.shape[:-2]):
            # one large GEMM instead of numpy's loop of small ones over the batch
            a, b = lhs.reshape(-1, lhs.shape[-1]), rhs.reshape(rhs.shape[-2:])
            out = np.matmul(a, b, out=_matmul_out(a, b, (a.shape[0], b.shape[1])))
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
                out = memory.empty(lhs.shape[:-1] + rhs.shape[-1:], lhs.dtype)
                parallel_for(lambda lo, hi: np.matmul(
                    np.ascontiguousarray(lhs[lo:hi]), np.ascontiguousarray(rhs[lo:hi]),
                    out=out[lo:hi]), lhs.shape[0], max(1, -(-_GEMM_GRAIN // item)))
                return out
        if lhs.ndim >= 2 and rhs.ndim >= 2:
            return np.matmul(lhs, rhs, out=_matmul_out(lhs, rhs, sh.matmul(lhs.shape, rhs.shape)))
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
        out = memory.empty(rows.shape, x.dtype)
        kernels = jit.rows_for(x)
        if kernels is not None:
            jit.run_rows(kernels.softmax_rows, rows.shape[0], n, rows, out)
            return out.reshape(x.shape)

        def work(lo, hi):
            r, o = rows[lo:hi], out[lo:hi]
            np.subtract(r, r.max(axis=-1, keepdims=True), out=o)
            np.exp(o, out=o)
            np.divide(o, o.sum(axis=-1, keepdims=True), out=o)

        _row_blocks(work, rows.shape[0], n * x.itemsize)
        return out.reshape(x.shape)

    @kernel(when=lambda x, dim: jit.rows_wanted(x.shape, x.dtype, dim))
    def log_softmax(self, x, dim: int):
        """float32 along the last dim, large enough for a numba kernel: one row pass (the
        Fusion layer records it as one op only then; elsewhere the composite's primitives
        fuse with their neighbours)."""
        kernels = jit.rows_for(x) if x.ndim and dim in (-1, x.ndim - 1) else None
        if kernels is None:
            return super().log_softmax(x, dim)
        n = x.shape[-1]
        rows = np.ascontiguousarray(x).reshape(-1, n)
        out = memory.empty(rows.shape, x.dtype)
        jit.run_rows(kernels.log_softmax_rows, rows.shape[0], n, rows, out)
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
        whole batch never exist), blocks spread over the fused executor's threads. The result
        is laid out heads last (see below). Other cases use the generic helper."""
        lead = q.shape[:-2]
        d = q.dtype
        if (d not in (np.float32, np.float64) or q.ndim < 3 or k.dtype != d or v.dtype != d
                or k.shape[:-2] != lead or v.shape[:-2] != lead
                or (mask is not None and mask.dtype != d)
                or 0 in q.shape or 0 in k.shape or 0 in v.shape):
            return super().attention(q, k, v, mask, scale)
        n_q, n_k = q.shape[-2], k.shape[-2]
        # heads last in memory ([b, n_q, h, d] for [b, h, n_q, d]), as the cuda backend: the
        # usual next step, merging the heads back into [b, n_q, h*d], is then a free view
        # instead of a copy (4.9 ms of MiniLM's b32 s128 forward on 2 cores)
        out = memory.empty(lead[:-1] + (n_q, lead[-1], v.shape[-1]), d).swapaxes(-3, -2)
        mask_in = mask
        if mask is not None:
            mask = np.broadcast_to(mask, lead + (n_q, n_k))
        scale = d.type(scale)
        kernel = jit.attention_for(q) if max_threads() >= ATTENTION_KERNEL_MIN_THREADS else None
        if kernel is not None and _attention_kernel(kernel, q, k, v, mask_in, lead, out, scale):
            return out
        # blocks of query rows small enough that BLAS runs each GEMM on the calling thread
        # (its own threads would fight the pool's), and of as many heads as fill a tile
        rows = max(1, min(n_q, _BLAS_ONE_THREAD // (n_k * max(q.shape[-1], v.shape[-1], 1))))
        heads = _nd_tiles(lead, max(1, TILE_BYTES // (rows * n_k * d.itemsize)))
        blocks = [(idx, r) for idx in heads for r in range(0, n_q, rows)]
        fast = _softmax_passes(q, mask_in, lead, n_q, n_k)

        def work(lo, hi):
            for idx, r in blocks[lo:hi]:
                at = (Ellipsis, slice(r, r + rows), slice(None))
                s = np.matmul(q[idx][at], k[idx].swapaxes(-1, -2))
                if fast is not None:   # numba pass, numpy's exp, numba pass
                    dead = fast(s, idx, r, rows, scale)  # scale, mask, max, shift
                    np.exp(s, out=s)
                    fast.normalize(s, dead)              # sum, divide, dead rows zeroed
                else:
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
        if (x.dtype not in (np.float32, np.float64) or x.size == 0 or not 1 <= n_dims <= x.ndim
                or any(v is not None and v.dtype != x.dtype for v in (weight, bias))):
            return super().layer_norm(x, n_dims, eps, weight, bias)
        inner = x.shape[x.ndim - n_dims:]
        n = math.prod(inner)
        rows = np.ascontiguousarray(x).reshape((-1,) + inner)
        out = memory.empty(rows.shape, x.dtype)
        axes = tuple(range(1, n_dims + 1))
        one = x.dtype.type(1)
        kernels = jit.rows_for(x)
        if kernels is not None:
            w, b = _affine_rows(weight, bias, x.dtype)
            r2, o2 = rows.reshape(-1, n), out.reshape(-1, n)
            jit.run_rows(kernels.layer_norm_rows, r2.shape[0], n, r2, o2, w, b,
                         x.dtype.type(eps))
            return out.reshape(x.shape)

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

    @kernel(when=lambda x, n_dims, eps, weight=None: n_dims >= 1 and jit.rows_wanted(
        x.shape, x.dtype, -1) and (weight is None or weight.dtype is x.dtype))
    def rms_norm(self, x, n_dims: int, eps: float, weight=None):
        """float32, large enough for a numba kernel: one row pass (`jitrows.rms_norm_rows`:
        the mean square, then the output). The Fusion layer records it as one op only then;
        elsewhere the composite's primitives fuse with their neighbours."""
        kernels = jit.rows_for(x) if 1 <= n_dims <= x.ndim else None
        if kernels is None or (weight is not None and weight.dtype != x.dtype):
            return super().rms_norm(x, n_dims, eps, weight)
        n = math.prod(x.shape[x.ndim - n_dims:])
        rows = np.ascontiguousarray(x).reshape(-1, n)
        out = memory.empty(rows.shape, x.dtype)
        w, _ = _affine_rows(weight, None, x.dtype)
        jit.run_rows(kernels.rms_norm_rows, rows.shape[0], n, rows, out, w, x.dtype.type(eps))
        return out.reshape(x.shape)

    def run_fused(self, block, inputs, scalars):
        """A fused elementwise block without per-op temporaries (see `fused`)."""
        return run_block(block, inputs, scalars)

    #: `layer_norm` takes a block that sums two or three float32 tensors (a residual add, a
    #: bias) in front of its input, `reduce` a float32 block it sums or averages over trailing
    #: dims: see `run_prologue`.
    prologue_ops = frozenset({"layer_norm", "reduce"})

    def takes_prologue(self, name, block, op_code, args) -> bool:
        """`reduce`: where `jit.try_reduce` can run (from metadata, and the block compiles),
        unless a subclass replaces `run_fused` or `reduce` (it then gets both calls);
        elsewhere the block keeps its own step (and its in-place reuse)."""
        if name != "reduce":
            return True
        return self._own_reduce() and jit.reduce_applies(block, op_code, args[0])

    def _own_reduce(self) -> bool:
        cls = type(self)
        return cls.run_fused is NumpyBackend.run_fused and cls.reduce is NumpyBackend.reduce

    def run_prologue(self, name, block, inputs, scalars, args):
        """`layer_norm` of a float32 sum `(a + b) [+ c]` of whole tensors and rows broadcast
        over them, as one numba row pass (`jitrows.sum_layer_norm_rows`) that forms the sum
        a row at a time: the same bits as the block then the norm. Anything else runs the
        block, then the op.

        `reduce`: a float32 sum or mean over the block's trailing dims (or all of them) as one
        numba pass that never writes the block's value (`jit.try_reduce`); the block's
        values keep their bits, the sum is reassociated (as the row kernels' sums)."""
        if name == "layer_norm":
            out = self._sum_layer_norm(block, inputs, *args)
            if out is not None:
                return out
        elif name == "reduce" and self._own_reduce():
            out = jit.try_reduce(block, inputs, scalars, *args)
            if out is not None:
                return out
        return super().run_prologue(name, block, inputs, scalars, args)

    def _sum_layer_norm(self, block, inputs, n_dims: int, eps: float, weight=None,
                        bias=None):
        order = summed_inputs(block)
        shape = tuple(block.shape)
        if order is None or not 1 <= n_dims <= len(shape) or \
                any(v is not None and v.dtype != np.float32 for v in (weight, bias)):
            return None
        inner = shape[len(shape) - n_dims:]
        n = math.prod(inner)
        if n == 0:
            return None
        rows = math.prod(shape) // n
        terms = []
        for k in order:
            x = inputs[k]
            if x.dtype != np.float32:
                return None
            padded = (1,) * (len(shape) - x.ndim) + tuple(x.shape)
            if padded == shape:
                terms.append(x.reshape(rows, n))
            elif math.prod(padded) == n and padded[len(shape) - n_dims:] == inner:
                terms.append(x.reshape(1, n))
            else:
                return None
        out = memory.empty(shape, np.float32)
        kernels = jit.rows_for(out)
        if kernels is None:
            return None
        w, b = _affine_rows(weight, bias, np.float32)
        c = terms[2] if len(terms) == 3 else terms[1]
        jit.run_rows(kernels.sum_layer_norm_rows, rows, n, terms[0], terms[1], c,
                     len(terms) == 3, out.reshape(rows, n), w, b, np.float32(eps))
        return out


def _affine_rows(weight, bias, dtype) -> tuple:
    """A layer norm's weight and bias as the row kernels take them: 1-D, or empty for none."""
    empty = np.zeros(0, dtype)
    return (empty if weight is None else np.ascontiguousarray(weight).reshape(-1),
            empty if bias is None else np.ascontiguousarray(bias).reshape(-1))


def _matmul_out(lhs: np.ndarray, rhs: np.ndarray, shape: tuple):
    """A pooled output for a float product of one dtype (numpy's own otherwise: None)."""
    if lhs.dtype != rhs.dtype or lhs.dtype.kind not in "fc":
        return None
    return memory.empty(shape, lhs.dtype)


class _SoftmaxPasses:
    """For float32 attention with numba: `f(s, idx, r, rows, scale)` scales, masks and shifts
    the scores block `s` (heads `idx`, query rows `r:r + rows`) by its row maxima in place,
    in one numba pass, and returns the rows' dead flags (every key masked); after numpy's
    exp, `f.normalize(s, dead)` divides each row by its sum in a second pass, zeros for
    dead rows. The bits are those of numpy's seven passes. The mask is read as its distinct
    rows plus, per score row, the number of its mask row (a mask broadcast along heads and
    queries, BERT's [b, 1, 1, n_k], is read without being expanded)."""

    def __init__(self, kernels, mask, lead: tuple, n_q: int, n_k: int):
        self.shift, self.norm = kernels.scale_mask_shift_rows, kernels.normalize_rows
        self.n_k = n_k
        self.no_rows = np.zeros(0, np.intp)
        if mask is None:
            self.table = np.zeros((0, n_k), np.float32)
            self.ids = None
        else:
            self.table = np.ascontiguousarray(mask).reshape(-1, n_k)
            self.ids = np.broadcast_to(np.arange(self.table.shape[0], dtype=np.intp)
                                       .reshape(mask.shape[:-1]), lead + (n_q,))
        if not self.shift.signatures or not self.norm.signatures:
            t0 = time.perf_counter()  # compile (or load numba's cache) once, on this thread
            one, flag = np.zeros((1, n_k), np.float32), np.zeros(1, np.uint8)
            self.shift(one, self.table, np.zeros(1 if self.ids is not None else 0, np.intp),
                       np.float32(1), flag, 0, 0)
            self.norm(one, flag, 0, 0)
            jit.STATS["compile_s"] += time.perf_counter() - t0

    def __call__(self, s, idx, r, rows, scale):
        flat = s.reshape(-1, self.n_k)
        dead = np.empty(flat.shape[0], np.uint8)
        ridx = self.no_rows if self.ids is None else \
            np.ascontiguousarray(self.ids[idx][..., r:r + rows]).reshape(-1)
        self.shift(flat, self.table, ridx, scale, dead, 0, flat.shape[0])
        return dead

    def normalize(self, s, dead):
        flat = s.reshape(-1, self.n_k)
        self.norm(flat, dead, 0, flat.shape[0])


#: Pools of at least this many threads run float32 attention as one numba kernel per thread
#: (`jitattn`). MiniLM's b32 s128 heads: 5.8 against 13.6 ms for the numpy form on a 16-core
#: host (torch's SDPA 3.5 ms in that process); on a 2-core host the numpy form was faster
#: (58 against 74 ms), its GIL waits being few there.
ATTENTION_KERNEL_MIN_THREADS = 8


def _view(x: np.ndarray, shape: tuple):
    """`x` reshaped to `shape` as a view, or None when its strides do not allow one."""
    try:
        return np.reshape(x, shape, copy=False)
    except (ValueError, TypeError):
        return None


def _flat_heads(x: np.ndarray, copy: bool = True):
    """A 4-D array as (a 1-D view from its first element, the element strides of its first
    three dims) for `jitattn.attention_heads`, which reads and writes its last dim as dense.
    Where the last dim is not dense or a stride is negative: that of a copy, or (None, None)
    when `copy` is false (an output, which must be written where it is)."""
    item = x.itemsize
    st = x.strides
    if st[3] != item or any(t < 0 or t % item for t in st[:3]):
        if not copy:
            return None, None
        x = np.ascontiguousarray(x)
        st = x.strides
    extent = 1 + sum((n - 1) * (t // item) for n, t in zip(x.shape, st))
    flat = np.lib.stride_tricks.as_strided(x, shape=(extent,), strides=(item,))
    return flat, (st[0] // item, st[1] // item, st[2] // item)


def _attention_kernel(kernel, q, k, v, mask, lead: tuple, out, scale) -> bool:
    """float32 attention as `jitattn.attention_heads`: one call per thread of the pool for its
    share of the heads, into `out` (heads last in memory, as `attention` lays it out). False
    (nothing written) where the heads cannot be viewed as [b, h, ...] without a copy or the
    mask is broadcast along the keys: the numpy form runs then."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    b, h = math.prod(lead[:-1]), lead[-1]
    q4, k4, v4, o4 = (_view(x, (b, h) + x.shape[-2:]) for x in (q, k, v, out))
    if q4 is None or k4 is None or v4 is None or o4 is None:
        return False
    if mask is None:
        table, ids = np.zeros((0, n_k), np.float32), np.zeros((0, 0, 0), np.intp)
    else:
        if mask.ndim == 0 or mask.shape[-1] != n_k:
            return False
        # the mask's distinct rows, and per query row the number of its mask row (BERT's
        # [b, 1, 1, n_k] is read without being expanded)
        table = np.ascontiguousarray(mask).reshape(-1, n_k)
        ids = np.broadcast_to(np.arange(table.shape[0], dtype=np.intp).reshape(mask.shape[:-1]),
                              lead + (n_q,))
        ids3 = _view(ids, (b, h, n_q))
        ids = ids3 if ids3 is not None else np.ascontiguousarray(ids).reshape(b, h, n_q)
    rows = max(1, min(n_q, _BLAS_ONE_THREAD // (n_k * max(q.shape[-1], v.shape[-1], 1))))
    (qf, qs), (kf, ks), (vf, vs) = (_flat_heads(x) for x in (q4, k4, v4))
    of, os_ = _flat_heads(o4, copy=False)
    if of is None:
        return False
    dims = (h, n_q, n_k, q.shape[-1], v.shape[-1])
    args = (qf, qs, kf, ks, vf, vs, of, os_, dims, table, ids, mask is not None, scale, rows)
    compiled = len(kernel.signatures)
    t0 = time.perf_counter()
    kernel(*args, 0, 0)  # an empty range: compiles (or loads numba's cache) new argument types
    if len(kernel.signatures) != compiled:
        dt = time.perf_counter() - t0
        jit.STATS["compile_s"] += dt
        if dt > jit.SLOW_COMPILE_S:
            print(f"lazyt: compiled the numba attention kernel in {dt:.1f} s (numba caches "
                  "it for later runs)", file=sys.stderr, flush=True)
    jit.launch(kernel, args, b * h, 1, "the attention kernel")
    jit.STATS["attention_kernel_runs"] += 1
    return True


def _softmax_passes(q: np.ndarray, mask, lead: tuple, n_q: int, n_k: int):
    """The numba passes of float32 attention's softmax (`_SoftmaxPasses`), or None when the
    numpy passes run instead: no numba, not float32, too small, or a mask broadcast along the
    keys."""
    kernels = jit.rows_for(q)
    if kernels is None or (mask is not None and (mask.ndim == 0 or mask.shape[-1] != n_k)):
        return None
    return _SoftmaxPasses(kernels, mask, lead, n_q, n_k)


#: Eager ops on at least this many elements (copies, reductions) use the thread pool.
_PARALLEL_MIN = 1 << 20


def _grain(row_elems: int) -> int:
    """Rows of `row_elems` elements per thread-pool piece: at least a 256K-element tile."""
    return max(1, -(-(1 << 18) // max(row_elems, 1)))


def _row_blocks(work, n_rows: int, row_bytes: int) -> None:
    """`work(lo, hi)` over row blocks of about one fused tile each (in cache), the blocks
    spread over the thread pool."""
    block = max(1, TILE_BYTES // max(row_bytes, 1))

    def blocks(lo, hi):
        for a in range(lo, hi, block):
            work(a, min(a + block, hi))

    parallel_for(blocks, n_rows, block)


def _copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy; large ones are split over the thread pool along axis 0 (a
    single thread's memory bandwidth is a fraction of the machine's)."""
    out = memory.empty(x.shape, x.dtype)
    if x.size < _PARALLEL_MIN or x.ndim == 0 or x.shape[0] < 2:
        np.copyto(out, x)
        return out
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
    return _threads()
