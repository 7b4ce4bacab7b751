"""The numpy backend: the embedded default. Primitives are plain `np.ndarray`s, so extension
authors write their numpy impls with ordinary numpy code."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import dtype as dt
from ..dtype import DType
from ..errors import IndexOutOfRangeError
from ..ops import BinaryOp, ReduceOp, UnaryOp
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


def _erf_keep(x):
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
        out = REDUCE[op](x, axis=dims, keepdims=keepdim)
        if out.dtype != x.dtype:  # mean of float16 accumulates wider
            out = out.astype(x.dtype)
        return _as_array(out)

    def matmul(self, lhs, rhs):
        if lhs.ndim > 2 and all(s == 1 for s in rhs.shape[:-2]):
            # one large GEMM instead of numpy's loop of small ones over the batch
            out = np.matmul(lhs.reshape(-1, lhs.shape[-1]), rhs.reshape(rhs.shape[-2:]))
            return out.reshape(lhs.shape[:-1] + (rhs.shape[-1],))
        return np.matmul(lhs, rhs)

    def reshape(self, x, shape):
        return x.reshape(shape)

    def permute(self, x, axes):
        return x.transpose(axes)

    def expand(self, x, shape):
        return np.broadcast_to(x, shape)

    def slice(self, x, slices):
        return x[tuple(slice(a, b if b >= 0 or c > 0 else None, c) for a, b, c in slices)]

    def cat(self, xs: Sequence[np.ndarray], dim: int):
        return np.concatenate(xs, axis=dim)

    def contiguous(self, x):
        return x if x.flags.c_contiguous else x.copy(order="C")

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

    def run_fused(self, block, inputs, scalars):
        """A fused elementwise block without per-op temporaries (see numpy_fused)."""
        run = _RUN_BLOCK[0]
        if run is None:
            from .numpy_fused import run_block as run
            _RUN_BLOCK[0] = run
        return run(block, inputs, scalars)


_RUN_BLOCK = [None]  # numpy_fused imports this module, so it is imported on first use
