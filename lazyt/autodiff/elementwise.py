"""Tracked elementwise ops (unary, binary, where, cast), each backward next to its forward.

All are memory-bound: under balanced checkpointing their outputs are recomputed in backward
from the retro-forward (the same inner op) instead of being saved.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..ops import COMPARISONS, BinaryOp, UnaryOp
from .node import Requirement
from .ops import AutodiffTensor, Backward, Tracked, UnTracked, broadcast_shape, untracked_view

AT = AutodiffTensor
U, Bi = UnaryOp, BinaryOp
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _view(B, x):
    return x if type(x) is AT else untracked_view(B, x)


def _plain(x):
    return x.primitive if type(x) is AT else x


_SCALARS = (float, int, bool, np.generic)


def _is_scalar(x) -> bool:
    return isinstance(x, _SCALARS)


# ---------------------------------------------------------------------------- unary
def _zeros_like(B, g):
    return B.zeros(B.shape_of(g), B.dtype_of(g))


def _mul(B, a, b):
    return B.binary(Bi.MUL, a, b)


def _tanh_grad(B, x, g):
    t = B.unary(U.TANH, x)
    return _mul(B, g, B.binary(Bi.SUB, 1, _mul(B, t, t)))


def _sigmoid_grad(B, x, g):
    s = B.unary(U.SIGMOID, x)
    return _mul(B, g, _mul(B, s, B.binary(Bi.SUB, 1, s)))


def _erf_grad(B, x, g):
    e = B.unary(U.EXP, B.unary(U.NEG, _mul(B, x, x)))
    return _mul(B, g, _mul(B, e, _TWO_OVER_SQRT_PI))


# op -> fn(B, x, grad) giving the input's gradient; x is None for ops that do not read it.
UNARY_GRAD = {
    U.NEG: lambda B, x, g: B.unary(U.NEG, g),
    U.ABS: lambda B, x, g: _mul(B, g, B.unary(U.SIGN, x)),
    U.EXP: lambda B, x, g: _mul(B, g, B.unary(U.EXP, x)),
    U.LOG: lambda B, x, g: B.binary(Bi.DIV, g, x),
    U.SQRT: lambda B, x, g: B.binary(Bi.DIV, _mul(B, g, 0.5), B.unary(U.SQRT, x)),
    U.RSQRT: lambda B, x, g: _mul(B, _mul(B, g, B.binary(Bi.DIV, B.unary(U.RSQRT, x), x)), -0.5),
    U.TANH: _tanh_grad,
    U.SIGMOID: _sigmoid_grad,
    U.SIN: lambda B, x, g: _mul(B, g, B.unary(U.COS, x)),
    U.COS: lambda B, x, g: _mul(B, g, B.unary(U.NEG, B.unary(U.SIN, x))),
    U.ERF: _erf_grad,
    U.RELU: lambda B, x, g: B.where(B.binary(Bi.GT, x, 0), g, 0),
    U.SIGN: lambda B, x, g: _zeros_like(B, g),
    U.FLOOR: lambda B, x, g: _zeros_like(B, g),
    U.CEIL: lambda B, x, g: _zeros_like(B, g),
    U.RECIPROCAL: lambda B, x, g: B.unary(U.NEG, B.binary(Bi.DIV, g, _mul(B, x, x))),
}
_UNARY_NO_INPUT = frozenset({U.NEG, U.SIGN, U.FLOOR, U.CEIL})


class UnaryBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grad = grads.consume(ops.node)
        op, x_id = ops.state
        x = None if x_id is None else checkpointer.retrieve_node_output(x_id)
        grads.register(node, UNARY_GRAD[op](ops.backend, x, grad))


def unary(ad, op: UnaryOp, x: AT):
    B = ad.inner
    if op not in UNARY_GRAD:  # logical_not: a bool result carries no gradient
        return B.unary(op, x.primitive)
    match (UnaryBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(partial(B.unary, op)).parents([x]).stateful()):
        case Tracked(prep):
            x_id = None if op in _UNARY_NO_INPUT else prep.checkpoint(x)
            return prep.finish((op, x_id), B.unary(op, x.primitive))
        case UnTracked(prep):
            return prep.finish(B.unary(op, x.primitive))


# ---------------------------------------------------------------------------- binary
def _where_half(B, win, l, r, g):
    """`g` where `win`, `g / 2` where `l == r` (maximum/minimum split ties evenly), else 0."""
    return B.where(win, g, B.where(B.binary(Bi.EQ, l, r), _mul(B, g, 0.5), 0))


def _pow_lhs_grad(B, g, l, r):
    if _is_scalar(r):
        if r == 0:
            return B.zeros(B.shape_of(g), B.dtype_of(g))
        return _mul(B, g, _mul(B, B.binary(Bi.POW, l, r - 1), r))
    d = _mul(B, r, B.binary(Bi.POW, l, B.binary(Bi.SUB, r, 1)))
    return _mul(B, g, B.where(B.binary(Bi.EQ, r, 0), 0, d))


def _pow_rhs_grad(B, g, l, r):
    if _is_scalar(l):
        if l == 0:
            return B.zeros(B.shape_of(g), B.dtype_of(g))
        log_l = float(np.log(l)) if l > 0 else float("nan")
        return _mul(B, g, _mul(B, B.binary(Bi.POW, l, r), log_l))
    d = _mul(B, B.binary(Bi.POW, l, r), B.unary(U.LOG, l))
    return _mul(B, g, B.where(B.binary(Bi.EQ, l, 0), 0, d))


# op -> (needs (lhs, rhs) for the lhs grad, needs for the rhs grad, lhs grad, rhs grad);
# each grad is fn(B, g, l, r) with l, r the operand values (None when not needed).
BINARY_GRAD = {
    Bi.ADD: ((0, 0), (0, 0), lambda B, g, l, r: g, lambda B, g, l, r: g),
    Bi.SUB: ((0, 0), (0, 0), lambda B, g, l, r: g, lambda B, g, l, r: B.unary(U.NEG, g)),
    Bi.MUL: ((0, 1), (1, 0), lambda B, g, l, r: _mul(B, g, r), lambda B, g, l, r: _mul(B, g, l)),
    Bi.DIV: ((0, 1), (1, 1), lambda B, g, l, r: B.binary(Bi.DIV, g, r),
             lambda B, g, l, r: B.unary(U.NEG, B.binary(Bi.DIV, _mul(B, g, l), _mul(B, r, r)))),
    Bi.POW: ((1, 1), (1, 1), _pow_lhs_grad, _pow_rhs_grad),
    Bi.MAXIMUM: ((1, 1), (1, 1),
                 lambda B, g, l, r: _where_half(B, B.binary(Bi.GT, l, r), l, r, g),
                 lambda B, g, l, r: _where_half(B, B.binary(Bi.LT, l, r), l, r, g)),
    Bi.MINIMUM: ((1, 1), (1, 1),
                 lambda B, g, l, r: _where_half(B, B.binary(Bi.LT, l, r), l, r, g),
                 lambda B, g, l, r: _where_half(B, B.binary(Bi.GT, l, r), l, r, g)),
    Bi.FLOOR_DIV: ((0, 0), (0, 0), lambda B, g, l, r: _zeros_like(B, g),
                   lambda B, g, l, r: _zeros_like(B, g)),
    Bi.MOD: ((0, 0), (1, 1), lambda B, g, l, r: g,
             lambda B, g, l, r: B.unary(U.NEG, _mul(B, g, B.binary(Bi.FLOOR_DIV, l, r)))),
}


class BinaryBackward(Backward):
    """Parents: one per tensor operand (a scalar operand has none)."""

    def backward(self, ops, grads, checkpointer):
        grad = grads.consume(ops.node)
        op, (l, l_shape), (r, r_shape) = ops.state
        B = ops.backend
        # state entries: a scalar value (shape None), a checkpointed NodeId, or None
        if l_shape is not None and l is not None:
            l = checkpointer.retrieve_node_output(l)
        if r_shape is not None and r is not None:
            r = checkpointer.retrieve_node_output(r)
        parents = ops.parents
        l_node = parents[0] if l_shape is not None else None
        r_node = parents[-1] if r_shape is not None else None
        _, _, lhs_grad, rhs_grad = BINARY_GRAD[op]
        if l_node is not None:
            grads.register(l_node, broadcast_shape(B, lhs_grad(B, grad, l, r), l_shape))
        if r_node is not None:
            grads.register(r_node, broadcast_shape(B, rhs_grad(B, grad, l, r), r_shape))


def _binary_retro(B, op, lhs, rhs, l_scalar: bool, r_scalar: bool):
    if l_scalar:
        return lambda r: B.binary(op, lhs, r)
    if r_scalar:
        return lambda l: B.binary(op, l, rhs)
    return partial(B.binary, op)


def binary(ad, op: BinaryOp, lhs, rhs):
    B = ad.inner
    if op in COMPARISONS:  # bool results carry no gradient
        return B.binary(op, _plain(lhs), _plain(rhs))
    l_scalar, r_scalar = _is_scalar(lhs), _is_scalar(rhs)
    lv = None if l_scalar else _view(B, lhs)
    rv = None if r_scalar else _view(B, rhs)
    views = [v for v in (lv, rv) if v is not None]
    lp = lhs if l_scalar else lv.primitive
    rp = rhs if r_scalar else rv.primitive
    match (BinaryBackward().prepare(ad.ckpt, [v.node for v in views]).memory_bound()
           .retro_forward(_binary_retro(B, op, lhs, rhs, l_scalar, r_scalar)).parents(views)
           .stateful()):
        case Tracked(prep):
            # each operand's gradient reads some operands: checkpoint only what is read
            need_l, need_r, _, _ = BINARY_GRAD[op]
            need = [0, 0]
            for v, req in ((lv, need_l), (rv, need_r)):
                if v is not None and v.node.requirement is not Requirement.NONE:
                    need[0] |= req[0]
                    need[1] |= req[1]
            state = (op, _operand_state(prep, lhs, lv, need[0], B),
                     _operand_state(prep, rhs, rv, need[1], B))
            return prep.finish(state, B.binary(op, lp, rp))
        case UnTracked(prep):
            return prep.finish(B.binary(op, lp, rp))


def _operand_state(prep, value, view, needed, B):
    """(scalar, None) | (NodeId or None, shape) for one operand of a tracked binary op."""
    if view is None:
        return (value, None)
    return (prep.checkpoint(view) if needed else None, B.shape_of(view.primitive))


# ---------------------------------------------------------------------------- where
class WhereBackward(Backward):
    """Parents: cond, then lhs and rhs where they are tensors."""

    def backward(self, ops, grads, checkpointer):
        grad = grads.consume(ops.node)
        cond_id, l_shape, r_shape = ops.state
        B = ops.backend
        cond = checkpointer.retrieve_node_output(cond_id)
        parents = ops.parents
        l_node = parents[1] if l_shape is not None else None
        r_node = parents[-1] if r_shape is not None else None
        if l_node is not None:
            grads.register(l_node, broadcast_shape(B, B.where(cond, grad, 0), l_shape))
        if r_node is not None:
            grads.register(r_node, broadcast_shape(B, B.where(cond, 0, grad), r_shape))


def _where_retro(B, lhs, rhs):
    if _is_scalar(lhs):
        if _is_scalar(rhs):
            return lambda c: B.where(c, lhs, rhs)
        return lambda c, r: B.where(c, lhs, r)
    if _is_scalar(rhs):
        return lambda c, l: B.where(c, l, rhs)
    return B.where


def where(ad, cond, lhs, rhs):
    B = ad.inner
    cond_v = _view(B, cond)
    views = [cond_v] + [_view(B, v) for v in (lhs, rhs) if not _is_scalar(v)]
    match (WhereBackward().prepare(ad.ckpt, [v.node for v in views]).memory_bound()
           .retro_forward(_where_retro(B, lhs, rhs)).parents(views).stateful()):
        case Tracked(prep):
            state = (prep.checkpoint(cond_v),
                     None if _is_scalar(lhs) else B.shape_of(_plain(lhs)),
                     None if _is_scalar(rhs) else B.shape_of(_plain(rhs)))
            return prep.finish(state, B.where(cond_v.primitive, _plain(lhs), _plain(rhs)))
        case UnTracked(prep):
            return prep.finish(B.where(cond_v.primitive, _plain(lhs), _plain(rhs)))


# ---------------------------------------------------------------------------- cast
class CastBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, ops.backend.cast(grads.consume(ops.node), ops.state))


def cast(ad, x: AT, dtype):
    B = ad.inner
    if not dtype.is_float:  # integer/bool results carry no gradient
        return B.cast(x.primitive, dtype)
    match (CastBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(lambda a: B.cast(a, dtype)).parents([x]).stateful()):
        case Tracked(prep):
            return prep.finish(B.dtype_of(x.primitive), B.cast(x.primitive, dtype))
        case UnTracked(prep):
            return prep.finish(B.cast(x.primitive, dtype))
