"""`matmul`: batched, broadcast batch dims (numpy's rule for rank >= 2). Compute-bound."""
from __future__ import annotations

from .. import shape as sh
from .declare import Grad, OpDef, declare, tensor
from .meta import same_dtype


def _matmul_meta(lhs, rhs):
    shape = sh.matmul(lhs.shape, rhs.shape)
    same_dtype("matmul", lhs, rhs)
    return shape, lhs.dtype


def cross_reads(a: str, b: str):
    """`Grad.reads` of a product of `a` and `b`: each operand is read only for the other
    one's gradient."""
    def reads(ctx):
        return tuple(n for n, other in ((a, b), (b, a)) if ctx.needs(other))
    return reads


_matmul_reads = cross_reads("lhs", "rhs")


def _matmul_grad(B, g, ctx):
    out = {}
    if ctx.needs("lhs"):
        out["lhs"] = B.float_matmul(g, B.float_transpose(ctx.saved("rhs")))
    if ctx.needs("rhs"):
        out["rhs"] = B.float_matmul(B.float_transpose(ctx.saved("lhs")), g)
    return out


matmul = declare(OpDef(
    "matmul", (tensor("lhs"), tensor("rhs")), _matmul_meta,
    grad=Grad(_matmul_grad, reads=_matmul_reads),
    doc="`lhs @ rhs` for operands of one dtype and rank >= 2; batch dims broadcast."))
