"""Elementwise primitives: `unary`, `binary`, `where`, `cast`, `full`.

Each is one family of fused-block instructions; the family's op code (`UnaryOp`, `BinaryOp`)
selects the entry of its tables: the gradient here, the numpy ufunc and the kernel expression
in each renderer. Operands of `binary`/`where` may be Python scalars, meant in the tensor
operand's dtype. All are memory-bound: under balanced checkpointing their outputs are
recomputed in backward instead of being saved.
"""
from __future__ import annotations

import numpy as np

from .. import dtype as dt
from .. import shape as sh
from ..errors import DTypeError, ShapeError
from .codes import COMPARISONS, BinaryOp, UnaryOp
from .declare import (Fuse, Grad, OpDef, declare, operand, static, tensor, value)
from .meta import Out, same_dtype

U, Bi = UnaryOp, BinaryOp
_SCALARS = (bool, int, float)
_TWO_OVER_SQRT_PI = 1.1283791670955126


def is_scalar(x) -> bool:
    return type(x) in _SCALARS or isinstance(x, (bool, int, float, np.generic))



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
# logical_not is absent: a bool result carries no gradient.
UNARY_GRAD = {
    U.NEG: lambda B, x, g: B.unary(U.NEG, g),
    # torch's: sgn(x) g, 0 at 0 and at NaN
    U.ABS: lambda B, x, g: B.where(B.binary(Bi.GT, x, 0), g,
                                   B.where(B.binary(Bi.LT, x, 0), B.unary(U.NEG, g), 0)),
    U.EXP: lambda B, x, g: _mul(B, g, B.unary(U.EXP, x)),
    U.LOG: lambda B, x, g: B.binary(Bi.DIV, g, x),
    U.SQRT: lambda B, x, g: B.binary(Bi.DIV, _mul(B, g, 0.5), B.unary(U.SQRT, x)),
    U.RSQRT: lambda B, x, g: _mul(B, _mul(B, g, B.binary(Bi.DIV, B.unary(U.RSQRT, x), x)), -0.5),
    U.TANH: _tanh_grad,
    U.SIGMOID: _sigmoid_grad,
    U.SIN: lambda B, x, g: _mul(B, g, B.unary(U.COS, x)),
    U.COS: lambda B, x, g: _mul(B, g, B.unary(U.NEG, B.unary(U.SIN, x))),
    U.ERF: _erf_grad,
    # torch's: the gradient passes where x is not <= 0 (so at NaN too)
    U.RELU: lambda B, x, g: B.where(B.binary(Bi.LE, x, 0), 0, g),
    U.SIGN: lambda B, x, g: _zeros_like(B, g),
    U.FLOOR: lambda B, x, g: _zeros_like(B, g),
    U.CEIL: lambda B, x, g: _zeros_like(B, g),
    # torch's: -g * (r * r) with r = 1/x
    U.RECIPROCAL: lambda B, x, g: _mul(B, B.unary(U.NEG, g),
                                       _mul(B, B.unary(U.RECIPROCAL, x), B.unary(U.RECIPROCAL, x))),
}
_UNARY_NO_INPUT = frozenset({U.NEG, U.SIGN, U.FLOOR, U.CEIL})


def _unary_meta(op, x):
    return x.shape, x.dtype


def _unary_grad(B, g, ctx):
    op = ctx.args.op
    x = None if op in _UNARY_NO_INPUT else ctx.saved("x")
    return {"x": UNARY_GRAD[op](B, x, g)}


unary = declare(OpDef(
    "unary", (static("op"), tensor("x")), _unary_meta, Fuse.ELEMENTWISE, instr="unary",
    recompute=True,
    grad=Grad(_unary_grad, reads=lambda ctx: () if ctx.args.op in _UNARY_NO_INPUT else ("x",)),
    doc="`op(x)` elementwise (`UnaryOp`)."))


# ---------------------------------------------------------------------------- binary
def _where_half(B, win, l, r, g):
    """`g` where `win`, `g / 2` where `l == r` (maximum/minimum split ties evenly), else 0."""
    return B.where(win, g, B.where(B.binary(Bi.EQ, l, r), _mul(B, g, 0.5), 0))


def _pow_lhs_grad(B, g, l, r):
    """d(l ** r)/dl = r * l ** (r - 1), and 0 where r == 0 (torch's pow_backward_self; at
    l = 0 and r < 0 that is +-inf)."""
    if is_scalar(r):
        if r == 0:
            return B.zeros(B.shape_of(g), B.dtype_of(g))
        return _mul(B, g, _mul(B, B.binary(Bi.POW, l, r - 1), r))
    flat = B.binary(Bi.EQ, r, 0)
    # l ** 0 where r == 0, whose 0 it is anyway: no 0 * inf computed at l == 0 there
    d = _mul(B, g, _mul(B, r, B.binary(Bi.POW, l, B.binary(Bi.SUB, B.where(flat, 1, r), 1))))
    return B.where(flat, 0, d)


def _pow_rhs_grad(B, g, l, r):
    """d(l ** r)/dr = l ** r * log(l), and 0 where l == 0 and r >= 0 (torch's
    pow_backward_exponent): at l = 0 and r < 0 it is inf * log(0) = -inf, not 0."""
    if is_scalar(l):
        if l == 0:  # -inf where r < 0, 0 where r >= 0, NaN where r is
            d = B.where(B.binary(Bi.LT, r, 0), float("-inf"), B.where(B.binary(Bi.GE, r, 0), 0, r))
            return _mul(B, g, d)
        log_l = float(np.log(l)) if l > 0 else float("nan")
        return _mul(B, g, _mul(B, B.binary(Bi.POW, l, r), log_l))
    flat = B.binary(Bi.AND, B.binary(Bi.EQ, l, 0), B.binary(Bi.GE, r, 0))
    # log of 1 where the result is 0 anyway: no 0 * -inf computed there
    d = _mul(B, B.binary(Bi.POW, l, r), B.unary(U.LOG, B.where(flat, 1, l)))
    return _mul(B, g, B.where(flat, 0, d))


# op -> (operands the lhs grad reads (lhs, rhs), those the rhs grad reads, lhs grad, rhs grad);
# each grad is fn(B, g, l, r) with l, r the operand values (None when not read). Comparisons
# and logical ops are absent: bool results carry no gradient.
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
    # bitwise ops take integers and bools only: nothing to differentiate
    **{op: ((0, 0), (0, 0), lambda B, g, l, r: _zeros_like(B, g),
            lambda B, g, l, r: _zeros_like(B, g))
       for op in (Bi.BITAND, Bi.BITOR, Bi.BITXOR, Bi.SHL, Bi.SHR)},
}


def binary_out_dtype(op: BinaryOp, d):
    return dt.bool_ if op in COMPARISONS else d


_CMP = frozenset(o._value_ for o in COMPARISONS)  # str keys: hashing an Enum is slow


def _binary_meta(op, lhs, rhs):
    if type(lhs) not in _SCALARS:
        d = lhs.dtype
        if type(rhs) not in _SCALARS:
            ls, rs = lhs.shape, rhs.shape
            shape = ls if ls == rs else sh.broadcast(op.value, ls, rs)
            if rhs.dtype is not d:
                same_dtype(op.value, lhs, rhs)
        else:
            shape = lhs.shape
    elif type(rhs) not in _SCALARS:
        d, shape = rhs.dtype, rhs.shape
    else:
        raise DTypeError(f"{op.value}: expected at least one tensor operand, got "
                         f"{type(lhs).__name__} and {type(rhs).__name__}")
    return shape, (dt.bool_ if op._value_ in _CMP else d)


_READS: dict = {}  # (op, lhs needs a gradient, rhs needs one) -> operands read


def _binary_reads(ctx):
    key = (ctx.args.op, ctx.needs("lhs"), ctx.needs("rhs"))
    names = _READS.get(key)
    if names is None:
        need_l, need_r, _, _ = BINARY_GRAD[key[0]]
        want = [0, 0]
        for req, on in ((need_l, key[1]), (need_r, key[2])):
            if on:
                want[0] |= req[0]
                want[1] |= req[1]
        names = _READS[key] = tuple(n for n, w in zip(("lhs", "rhs"), want) if w)
    return names


def _binary_grad(B, g, ctx):
    _, _, lhs_grad, rhs_grad = BINARY_GRAD[ctx.args.op]
    l = ctx.saved("lhs") if ctx.has("lhs") else None
    r = ctx.saved("rhs") if ctx.has("rhs") else None
    out = {}
    if ctx.needs("lhs"):
        out["lhs"] = lhs_grad(B, g, l, r)
    if ctx.needs("rhs"):
        out["rhs"] = rhs_grad(B, g, l, r)
    return out


binary = declare(OpDef(
    "binary", (static("op"), operand("lhs"), operand("rhs")), _binary_meta, Fuse.ELEMENTWISE,
    instr="binary", recompute=True, grad=Grad(_binary_grad, reads=_binary_reads),
    doc="`lhs op rhs` elementwise with broadcasting (`BinaryOp`); one operand may be a "
        "scalar, meant in the other's dtype."))


# ---------------------------------------------------------------------------- where
def _where_meta(cond, lhs, rhs):
    if type(cond) in _SCALARS:
        raise DTypeError(f"where: the condition must be a tensor, got {type(cond).__name__}")
    if cond.dtype is not dt.bool_:
        raise DTypeError(f"where: the condition must be bool, got {cond.dtype.name} "
                         f"{tuple(cond.shape)}")
    tl, tr = type(lhs) not in _SCALARS, type(rhs) not in _SCALARS
    if not tl and not tr:
        raise DTypeError("where: lhs or rhs must be a tensor (two scalars have no dtype)")
    if tl and tr:
        same_dtype("where", lhs, rhs)
    shapes = [cond.shape] + [t.shape for t, is_t in ((lhs, tl), (rhs, tr)) if is_t]
    return sh.broadcast("where", *shapes), (lhs.dtype if tl else rhs.dtype)


def _where_grad(B, g, ctx):
    cond = ctx.saved("cond")
    out = {}
    if ctx.needs("lhs"):
        out["lhs"] = B.where(cond, g, 0)
    if ctx.needs("rhs"):
        out["rhs"] = B.where(cond, 0, g)
    return out


where = declare(OpDef(
    "where", (tensor("cond", differentiable=False), operand("lhs"), operand("rhs")),
    _where_meta, Fuse.ELEMENTWISE, instr="where", recompute=True,
    grad=Grad(_where_grad, reads=("cond",)),
    doc="`lhs` where the bool `cond` holds, else `rhs` (broadcasting; scalars allowed)."))


# ---------------------------------------------------------------------------- cast
def _cast_meta(x, dtype):
    return x.shape, dtype


def _cast_grad(B, g, ctx):
    return {"x": B.cast(g, ctx.dtype("x"))}


cast = declare(OpDef(
    "cast", (tensor("x"), static("dtype")), _cast_meta, Fuse.ELEMENTWISE, instr="cast",
    recompute=True, grad=Grad(_cast_grad), doc="`x` converted to `dtype` (numpy's astype)."))


# ---------------------------------------------------------------------------- full
def _full_meta(shape, value, dtype):
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ShapeError(f"full: expected a shape of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ShapeError(f"full: negative size in shape {shape}")
    return Out(shape, dtype, (shape, value, dtype))


full = declare(OpDef(
    "full", (static("shape"), value("value"), static("dtype")), _full_meta, Fuse.ELEMENTWISE,
    instr="full", recompute=True, normalizes=True,
    doc="A tensor of `shape` filled with `value`."))
