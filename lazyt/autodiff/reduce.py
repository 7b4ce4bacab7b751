"""Tracked reductions, backward next to forward. Compute-bound: under balanced checkpointing
their outputs are saved, not recomputed."""
from __future__ import annotations

from ..ops import ARG_REDUCTIONS, BinaryOp, ReduceOp
from ..shape import numel
from .ops import AutodiffTensor, Backward, Tracked, UnTracked

R, Bi = ReduceOp, BinaryOp


def _keepdim_shape(shape: tuple, dims: tuple) -> tuple:
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


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


class ReduceBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grad = grads.consume(ops.node)
        op, dims, keepdim, shape, x_id = ops.state
        B = ops.backend
        keep = _keepdim_shape(shape, dims)
        if not keepdim and B.shape_of(grad) != keep:
            grad = B.reshape(grad, keep)
        if op is R.SUM:
            gx = B.expand(grad, shape)
        elif op is R.MEAN:
            n = numel(shape[d] for d in dims)
            gx = B.expand(B.binary(Bi.DIV, grad, float(n)), shape)
        elif op is R.PROD:
            gx = _prod_grad(B, checkpointer.retrieve_node_output(x_id), dims, grad)
        else:
            gx = _extremum_grad(B, op, checkpointer.retrieve_node_output(x_id), dims, grad)
        grads.register(node, gx)


def reduce(ad, op: ReduceOp, x: AutodiffTensor, dims: tuple, keepdim: bool):
    B = ad.inner
    if op in ARG_REDUCTIONS:  # indices carry no gradient
        return B.reduce(op, x.primitive, dims, keepdim)
    match ReduceBackward().prepare(ad.ckpt, [x.node]).compute_bound().stateful():
        case Tracked(prep):
            x_id = None if op in (R.SUM, R.MEAN) else prep.checkpoint(x)
            state = (op, tuple(dims), keepdim, B.shape_of(x.primitive), x_id)
            return prep.finish(state, B.reduce(op, x.primitive, dims, keepdim))
        case UnTracked(prep):
            return prep.finish(B.reduce(op, x.primitive, dims, keepdim))
