"""The backend protocol: a small, orthogonal primitive op set plus Burn-style named helpers.

Every backend and every layer (Autodiff, Fusion) is a `Backend` with the same op set, so layers
compose. A kernel backend implements only the primitives marked "core" below; the helpers are
written once here on top of them (through `self`, so on a layer they go through that layer: on
Autodiff a `softmax` helper records the backward of each primitive it uses).

Conventions every implementation may rely on (the Tensor API and Dispatch check them first):
- `x`, `lhs`, ... are primitives of this backend (for numpy: `np.ndarray`).
- `binary` operands have the same dtype; one of them may be a Python scalar, meant in the
  tensor's dtype. Comparisons and logical ops return bool, everything else the operand dtype.
- dims are normalized (non-negative, sorted, unique); shapes are valid for the op.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtype as dt
from ..dtype import DType
from ..ops import ARG_REDUCTIONS, COMPARISONS, BinaryOp, ReduceOp, UnaryOp

Primitive = Any
Scalar = bool | int | float


def binary_out_dtype(op: BinaryOp, d: DType) -> DType:
    return dt.bool_ if op in COMPARISONS else d


def reduce_out_dtype(op: ReduceOp, d: DType) -> DType:
    if op in ARG_REDUCTIONS:
        return dt.int64
    if op in (ReduceOp.SUM, ReduceOp.PROD) and not d.is_float:
        return dt.int64
    return d


class Backend:
    """Base class of backends and layers. Subclasses implement the core primitives."""

    name = "backend"
    #: True for layers (Autodiff, Fusion) that wrap an `inner` backend.
    is_layer = False

    # ---------------------------------------------------------------- core: creation/transfer
    def from_numpy(self, array: np.ndarray) -> Primitive:
        """Upload a host array (its dtype is already one of lazyt's)."""
        raise NotImplementedError

    def to_numpy(self, x: Primitive) -> np.ndarray:
        """Read a primitive back to the host (a drain point for lazy layers)."""
        raise NotImplementedError

    def transfer(self, x: Primitive, target: "Backend") -> Primitive:
        """Move `x` to another backend stack (through the host unless a layer knows better)."""
        return target.from_numpy(self.to_numpy(x))

    def shape_of(self, x: Primitive) -> tuple:
        return tuple(x.shape)

    def dtype_of(self, x: Primitive) -> DType:
        raise NotImplementedError

    def empty(self, shape: tuple, dtype: DType) -> Primitive:
        return self.full(shape, 0, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> Primitive:
        return self.full(shape, 0, dtype)

    def full(self, shape: tuple, value: Scalar, dtype: DType) -> Primitive:
        raise NotImplementedError

    # ---------------------------------------------------------------- core: elementwise
    def unary(self, op: UnaryOp, x: Primitive) -> Primitive:
        raise NotImplementedError

    def binary(self, op: BinaryOp, lhs: Primitive | Scalar, rhs: Primitive | Scalar) -> Primitive:
        raise NotImplementedError

    def where(self, cond: Primitive, lhs: Primitive | Scalar, rhs: Primitive | Scalar) -> Primitive:
        """`cond` is bool; `lhs`/`rhs` share a dtype (either may be a scalar); broadcasting."""
        raise NotImplementedError

    def cast(self, x: Primitive, dtype: DType) -> Primitive:
        raise NotImplementedError

    # ---------------------------------------------------------------- core: reductions, matmul
    def reduce(self, op: ReduceOp, x: Primitive, dims: tuple, keepdim: bool) -> Primitive:
        """Arg reductions get exactly one dim. SUM/PROD of ints give int64."""
        raise NotImplementedError

    def matmul(self, lhs: Primitive, rhs: Primitive) -> Primitive:
        """Operands of one dtype and one rank >= 2; batch dims broadcast (size 1 against n)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- core: movement
    def reshape(self, x: Primitive, shape: tuple) -> Primitive:
        raise NotImplementedError

    def permute(self, x: Primitive, axes: tuple) -> Primitive:
        raise NotImplementedError

    def expand(self, x: Primitive, shape: tuple) -> Primitive:
        """Broadcast to `shape`, which has the same rank as `x`."""
        raise NotImplementedError

    def slice(self, x: Primitive, slices: tuple) -> Primitive:
        """`slices` holds one normalized `(start, stop, step)` per dim (step may be negative)."""
        raise NotImplementedError

    def cat(self, xs: Sequence[Primitive], dim: int) -> Primitive:
        raise NotImplementedError

    def contiguous(self, x: Primitive) -> Primitive:
        raise NotImplementedError

    # ---------------------------------------------------------------- core: indexing
    def gather(self, x: Primitive, dim: int, index: Primitive) -> Primitive:
        """torch.gather: `out[i][j][k] = x[i][index[i][j][k]][k]` for dim 1; index is int64."""
        raise NotImplementedError

    def scatter_add(self, x: Primitive, dim: int, index: Primitive, src: Primitive) -> Primitive:
        """A copy of `x` with `src` added at `index` along `dim` (torch.scatter_add)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- layer hooks
    # Autodiff and Fusion override these; a stack without those layers answers as below.
    def require_grad(self, x: Primitive) -> Primitive:
        from ..errors import GradError
        raise GradError("require_grad: this device has no autodiff layer "
                        "(create it with lazyt.device(..., autodiff=True))")

    def is_tracked(self, x: Primitive) -> bool:
        return False

    def detach(self, x: Primitive) -> Primitive:
        return x

    def backward(self, x: Primitive, grad: Primitive | None):
        from ..errors import GradError
        raise GradError("backward: this device has no autodiff layer")

    def grad(self, x: Primitive, grads) -> Primitive | None:
        return None

    def sync(self) -> None:
        """Execute everything pending (lazy layers drain; eager backends have nothing to do)."""

    def run_fused(self, block, inputs: Sequence[Primitive], scalars: Sequence[Scalar]) -> list:
        """Run a fused elementwise block (`lazyt.backends.fused.FusedBlock`) on this backend's
        primitives and return its outputs. Kernel backends override it with one generated
        kernel per block; this default replays the block op by op through the primitives."""
        from .fused import run_generic
        return run_generic(self, block, inputs, scalars)

    # ================================================================ named helpers
    # Indexing helpers: overridable by a backend that has a faster direct kernel.
    def index_select(self, x: Primitive, dim: int, index: Primitive) -> Primitive:
        """Rows of `x` along `dim` picked by the 1-D int64 `index` (an embedding lookup)."""
        shape = self.shape_of(x)
        n = self.shape_of(index)[0]
        view = [1] * len(shape)
        view[dim] = n
        out_shape = shape[:dim] + (n,) + shape[dim + 1:]
        idx = self.expand(self.reshape(index, tuple(view)), out_shape)
        return self.gather(x, dim, idx)

    def index_add(self, x: Primitive, dim: int, index: Primitive, src: Primitive) -> Primitive:
        """A copy of `x` with the slices of `src` along `dim` added at rows `index` (1-D int64)."""
        src_shape = self.shape_of(src)
        view = [1] * len(src_shape)
        view[dim] = src_shape[dim]
        idx = self.expand(self.reshape(index, tuple(view)), src_shape)
        return self.scatter_add(x, dim, idx, src)

    # Burn-style float helpers.
    def float_add(self, lhs, rhs):
        return self.binary(BinaryOp.ADD, lhs, rhs)

    def float_sub(self, lhs, rhs):
        return self.binary(BinaryOp.SUB, lhs, rhs)

    def float_mul(self, lhs, rhs):
        return self.binary(BinaryOp.MUL, lhs, rhs)

    def float_div(self, lhs, rhs):
        return self.binary(BinaryOp.DIV, lhs, rhs)

    def float_neg(self, x):
        return self.unary(UnaryOp.NEG, x)

    def float_exp(self, x):
        return self.unary(UnaryOp.EXP, x)

    def float_log(self, x):
        return self.unary(UnaryOp.LOG, x)

    def float_matmul(self, lhs, rhs):
        return self.matmul(lhs, rhs)

    def float_transpose(self, x):
        """Swap the last two dims."""
        nd = len(self.shape_of(x))
        return self.swap_dims(x, nd - 2, nd - 1)

    def swap_dims(self, x, dim0: int, dim1: int):
        axes = list(range(len(self.shape_of(x))))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return self.permute(x, tuple(axes))

    def float_sum(self, x):
        return self.reduce(ReduceOp.SUM, x, tuple(range(len(self.shape_of(x)))), False)

    def float_sum_dim(self, x, dim: int):
        return self.reduce(ReduceOp.SUM, x, (dim,), True)

    def float_mean_dim(self, x, dim: int):
        return self.reduce(ReduceOp.MEAN, x, (dim,), True)

    def float_zeros_like(self, x):
        return self.zeros(self.shape_of(x), self.dtype_of(x))

    def float_ones_like(self, x):
        return self.full(self.shape_of(x), 1, self.dtype_of(x))

    # Activations and their backward helpers.
    def relu(self, x):
        return self.unary(UnaryOp.RELU, x)

    def relu_backward(self, output, grad):
        """Gradient of relu given its output: `grad` where the output is positive, else 0."""
        return self.where(self.binary(BinaryOp.GT, output, 0), grad, 0)

    def sigmoid(self, x):
        return self.unary(UnaryOp.SIGMOID, x)

    def gelu(self, x, approximate: str = "none"):
        """Exact gelu `x * (1 + erf(x / sqrt 2)) / 2`, or the tanh approximation."""
        if approximate == "tanh":
            inner = self.binary(BinaryOp.MUL, self.binary(BinaryOp.MUL, self.binary(
                BinaryOp.MUL, x, x), x), 0.044715)
            inner = self.binary(BinaryOp.MUL, self.binary(BinaryOp.ADD, x, inner),
                                0.7978845608028654)  # sqrt(2 / pi)
            t = self.binary(BinaryOp.ADD, self.unary(UnaryOp.TANH, inner), 1)
        else:
            t = self.binary(BinaryOp.ADD, self.unary(
                UnaryOp.ERF, self.binary(BinaryOp.MUL, x, 0.7071067811865476)), 1)
        return self.binary(BinaryOp.MUL, self.binary(BinaryOp.MUL, x, t), 0.5)

    def silu(self, x):
        return self.binary(BinaryOp.MUL, x, self.unary(UnaryOp.SIGMOID, x))

    def softmax(self, x, dim: int):
        if self.dtype_of(x) is dt.float16:  # a float16 sum of many terms overflows
            return self.cast(self.softmax(self.cast(x, dt.float32), dim), dt.float16)
        shifted = self.binary(BinaryOp.SUB, x, self.reduce(ReduceOp.MAX, x, (dim,), True))
        e = self.unary(UnaryOp.EXP, shifted)
        return self.binary(BinaryOp.DIV, e, self.reduce(ReduceOp.SUM, e, (dim,), True))

    #: Whether `linear` adds the bias inside its matmul (else it is a separate add, which the
    #: Fusion layer records as such so that it fuses with what follows).
    linear_bias_in_kernel = False

    def linear(self, x, weight, bias=None):
        """`x @ weight^T (+ bias)` for `x` [..., in] (rank >= 1), a 2-D `weight` [out, in]
        and an optional `bias` [out], all of one dtype (nn.Linear): one matmul with a
        transposed view, then the bias add."""
        shape = self.shape_of(x)
        wt = self.permute(weight, (1, 0))
        if len(shape) == 1:
            y = self.matmul(self.reshape(x, (1,) + shape), wt)
            y = self.reshape(y, self.shape_of(y)[1:])
        else:
            if len(shape) > 2:
                wt = self.reshape(wt, (1,) * (len(shape) - 2) + self.shape_of(wt))
            y = self.matmul(x, wt)
        return y if bias is None else self.binary(BinaryOp.ADD, y, bias)

    def layer_norm(self, x, n_dims: int, eps: float, weight=None, bias=None):
        """`(x - mean) / sqrt(var + eps) * weight + bias` over the trailing `n_dims` dims
        (biased variance, as torch); `weight` and `bias` (optional) have those dims' shape and
        x's dtype."""
        nd = len(self.shape_of(x))
        if not 0 <= n_dims <= nd:
            from ..errors import ShapeError
            raise ShapeError(f"layer_norm: cannot normalize {n_dims} trailing dims of shape "
                             f"{self.shape_of(x)}")
        dims = tuple(range(nd - n_dims, nd))
        centered = self.binary(BinaryOp.SUB, x, self.reduce(ReduceOp.MEAN, x, dims, True))
        var = self.reduce(ReduceOp.MEAN, self.binary(BinaryOp.MUL, centered, centered), dims,
                          True)
        y = self.binary(BinaryOp.MUL, centered,
                        self.unary(UnaryOp.RSQRT, self.binary(BinaryOp.ADD, var, eps)))
        if weight is not None:
            y = self.binary(BinaryOp.MUL, y, weight)
        if bias is not None:
            y = self.binary(BinaryOp.ADD, y, bias)
        return y

    def attention(self, q, k, v, mask=None, scale: float = 1.0):
        """`softmax(q @ k^T * scale + mask) @ v` for q [..., L, E], k [..., S, E] and v
        [..., S, Ev] of one float dtype and rank (batch dims broadcast as in matmul); `mask`
        is an additive bias of q's dtype and rank that broadcasts to the scores [..., L, S],
        or None. A query whose scores are all -inf gives zeros (torch's rule), not NaN.
        float16 is computed in float32."""
        if self.dtype_of(q) is dt.float16:
            up = [None if t is None else self.cast(t, dt.float32) for t in (q, k, v, mask)]
            return self.cast(self.attention(*up, scale), dt.float16)
        nd = len(self.shape_of(k))
        scores = self.matmul(q, self.swap_dims(k, nd - 2, nd - 1))
        if scale != 1.0:
            scores = self.binary(BinaryOp.MUL, scores, scale)
        if mask is None:
            return self.matmul(self.softmax(scores, nd - 1), v)
        scores = self.binary(BinaryOp.ADD, scores, mask)
        # queries that see no key: softmax over zeros (finite, so no NaN reaches a
        # gradient), then weights of zero
        dead = self.binary(BinaryOp.EQ, self.reduce(ReduceOp.MAX, scores, (nd - 1,), True),
                           float("-inf"))
        probs = self.softmax(self.where(dead, 0, scores), nd - 1)
        return self.matmul(self.where(dead, 0, probs), v)

    def log_softmax(self, x, dim: int):
        if self.dtype_of(x) is dt.float16:
            return self.cast(self.log_softmax(self.cast(x, dt.float32), dim), dt.float16)
        shifted = self.binary(BinaryOp.SUB, x, self.reduce(ReduceOp.MAX, x, (dim,), True))
        lse = self.unary(UnaryOp.LOG, self.reduce(
            ReduceOp.SUM, self.unary(UnaryOp.EXP, shifted), (dim,), True))
        return self.binary(BinaryOp.SUB, shifted, lse)

    def var(self, x, dims: tuple, keepdim: bool, correction: float):
        """Variance over `dims` with `n - correction` in the denominator (float input)."""
        shape = self.shape_of(x)
        n = 1
        for d in dims:
            n *= shape[d]
        centered = self.binary(BinaryOp.SUB, x, self.reduce(ReduceOp.MEAN, x, dims, True))
        sq = self.reduce(ReduceOp.SUM, self.binary(BinaryOp.MUL, centered, centered), dims, keepdim)
        # as numpy and torch: a denominator below zero counts as zero (inf, or nan for 0/0)
        return self.binary(BinaryOp.DIV, sq, float(max(n - correction, 0)))
