"""Reductions: `reduce(op, x, dims, keepdim)` (sum, mean, prod, max, min, argmax, argmin)
and the composite `var`. Compute-bound: under balanced checkpointing outputs are saved."""
from __future__ import annotations

from .. import dtype as dt
from .. import shape as sh
from ..errors import IndexOutOfRangeError, ShapeError
from ..shape import numel
from .codes import ARG_REDUCTIONS, BinaryOp, ReduceOp
from .declare import Grad, OpDef, declare, static, tensor
from .meta import Out

R, Bi = ReduceOp, BinaryOp


def reduce_out_dtype(op: ReduceOp, d):
    """Arg reductions give int64; sums and products of integers (and bools) give int64."""
    if op in ARG_REDUCTIONS:
        return dt.int64
    if op in (ReduceOp.SUM, ReduceOp.PROD) and not d.is_float:
        return dt.int64
    return d


def check_dims(op: str, shape: tuple, dims) -> tuple:
    """Normalized dims (non-negative, unique) as the layers below the Tensor API take them."""
    dims = tuple(dims)
    nd = len(shape)
    for d in dims:
        if not isinstance(d, int) or not 0 <= d < max(nd, 1):
            raise IndexOutOfRangeError(f"{op}: dim {d!r} is out of range for shape "
                                       f"{tuple(shape)}")
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: repeated dim in {dims} for shape {tuple(shape)}")
    return dims


def _reduce_meta(op, x, dims, keepdim):
    dims = check_dims(op.value, x.shape, dims)
    if op in ARG_REDUCTIONS and len(dims) != 1:
        raise ShapeError(f"{op.value}: expects exactly one dim, got {dims} for shape "
                         f"{tuple(x.shape)}")
    keepdim = bool(keepdim)
    return Out(sh.reduce(x.shape, dims, keepdim), reduce_out_dtype(op, x.dtype),
               (op, x, dims, keepdim))


def _extremum_grad(B, op, x, dims, g):
    """max/min: the gradient goes to the positions holding the extremum, split evenly on ties."""
    out = B.reduce(op, x, dims, True)
    hit = B.binary(Bi.EQ, x, out)
    count = B.reduce(R.SUM, B.cast(hit, B.dtype_of(g)), dims, True)
    return B.where(hit, B.binary(Bi.DIV, g, count), 0)


def _prod_grad(B, x, dims, g):
    """prod: the product of the other elements of the slice, exact where x has zeros."""
    zero = B.binary(Bi.EQ, x, 0)
    n_zero = B.reduce(R.SUM, B.cast(zero, B.dtype_of(g)), dims, True)
    safe = B.where(zero, 1, x)
    p = B.reduce(R.PROD, safe, dims, True)  # product of the non-zero elements
    others = B.where(B.binary(Bi.EQ, n_zero, 0), B.binary(Bi.DIV, p, safe),
                     B.where(B.binary(Bi.AND, zero, B.binary(Bi.EQ, n_zero, 1)), p, 0))
    return B.binary(Bi.MUL, g, others)


def _reduce_grad(B, g, ctx):
    op, dims, keepdim = ctx.args.op, tuple(ctx.args.dims), ctx.args.keepdim
    shape = ctx.shape("x")
    keep = sh.reduce(shape, dims, True)
    if not keepdim and B.shape_of(g) != keep:
        g = B.reshape(g, keep)
    if op is R.SUM:
        gx = B.expand(g, shape)
    elif op is R.MEAN:
        gx = B.expand(B.binary(Bi.DIV, g, float(numel(shape[d] for d in dims))), shape)
    elif op is R.PROD:
        gx = _prod_grad(B, ctx.saved("x"), dims, g)
    else:
        gx = _extremum_grad(B, op, ctx.saved("x"), dims, g)
    return {"x": gx}


reduce = declare(OpDef(
    "reduce", (static("op"), tensor("x"), static("dims"), static("keepdim")), _reduce_meta,
    normalizes=True,
    grad=Grad(_reduce_grad, reads=lambda ctx: () if ctx.args.op in (R.SUM, R.MEAN) else ("x",)),
    doc="`op` over the normalized `dims` of `x` (arg reductions take exactly one dim; "
        "indices carry no gradient)."))


# ---------------------------------------------------------------------------- var
def _var_meta(x, dims, keepdim, correction):
    return sh.reduce(x.shape, check_dims("var", x.shape, dims), bool(keepdim)), x.dtype


def _var(B, x, dims, keepdim, correction):
    shape = B.shape_of(x)
    n = 1
    for d in dims:
        n *= shape[d]
    centered = B.binary(Bi.SUB, x, B.reduce(R.MEAN, x, dims, True))
    sq = B.reduce(R.SUM, B.binary(Bi.MUL, centered, centered), dims, keepdim)
    # as numpy and torch: a denominator below zero counts as zero (inf, or nan for 0/0)
    return B.binary(Bi.DIV, sq, float(max(n - correction, 0)))


var = declare(OpDef(
    "var", (tensor("x"), static("dims"), static("keepdim"), static("correction")), _var_meta,
    decompose=_var, doc="Variance over `dims` with `n - correction` in the denominator."))
