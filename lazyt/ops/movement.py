"""Movement primitives: `reshape`, `permute`, `expand`, `slice`, `cat`, `contiguous`.

Memory-bound (a copy at most): under balanced checkpointing their outputs are recomputed.
Each rule normalizes its arguments (`Out.args`) and says when the op is the identity
(`Out.same`), so a layer records nothing for `reshape(x, x.shape)`.
"""
from __future__ import annotations

import numpy as np

from .. import shape as sh
from ..errors import IndexOutOfRangeError, ShapeError
from .declare import Grad, OpDef, declare, static, tensor, tensors
from .meta import Out, same_dtype


# ---------------------------------------------------------------------------- reshape
def _reshape_meta(x, shape):
    new = sh.reshape(x.shape, shape)
    return Out(new, x.dtype, (x, new), same=new == tuple(x.shape))


reshape = declare(OpDef(
    "reshape", (tensor("x"), static("shape")), _reshape_meta, recompute=True, normalizes=True,
    grad=Grad(lambda B, g, ctx: {"x": B.reshape(g, ctx.shape("x"))}),
    doc="`x` with the same elements in `shape` (one -1 is resolved)."))


# ---------------------------------------------------------------------------- permute
def _permute_meta(x, axes):
    axes = sh.permute(x.shape, axes)
    return Out(tuple(x.shape[a] for a in axes), x.dtype, (x, axes),
               same=axes == tuple(range(len(axes))))


def _permute_grad(B, g, ctx):
    inverse = tuple(int(i) for i in np.argsort(ctx.args.axes))
    return {"x": B.permute(g, inverse)}


permute = declare(OpDef(
    "permute", (tensor("x"), static("axes")), _permute_meta, recompute=True, normalizes=True,
    grad=Grad(_permute_grad), doc="`x` with its dims reordered by `axes`."))


# ---------------------------------------------------------------------------- expand
def _expand_meta(x, shape):
    new = sh.expand(x.shape, shape)
    return Out(new, x.dtype, (x, new), same=new == tuple(x.shape))


expand = declare(OpDef(
    "expand", (tensor("x"), static("shape")), _expand_meta, recompute=True, normalizes=True, absorbable=True,
    grad=Grad(lambda B, g, ctx: {"x": g}),  # the layer sums g back to x's shape
    doc="`x` broadcast to `shape` (a view; new dims only in front)."))


# ---------------------------------------------------------------------------- slice
def _slice_meta(x, slices):
    try:
        slices = tuple(tuple(int(v) for v in s) for s in slices)
    except (TypeError, ValueError):
        raise ShapeError(f"slice: expected one (start, stop, step) per dim of "
                         f"{tuple(x.shape)}, got {slices!r}") from None
    if len(slices) != len(x.shape) or any(len(s) != 3 for s in slices):
        raise ShapeError(f"slice: expected one (start, stop, step) per dim of "
                         f"{tuple(x.shape)}, got {slices}")
    for s in slices:
        if s[2] == 0:
            raise ShapeError(f"slice: step 0 in {slices} for shape {tuple(x.shape)}")
    out = tuple(sh.slice_len(a, b, c, n) for (a, b, c), n in zip(slices, x.shape))
    same = all(s == (0, n, 1) for s, n in zip(slices, x.shape))
    return Out(out, x.dtype, (x, slices), same=same)


def slice_backward(B, grad, in_shape: tuple, slices: tuple):
    """Place `grad` (the gradient of `x[slices]`) into zeros of `in_shape`, one sliced dim at a
    time: unit steps pad with zeros (cat), other steps add rows at their indices (index_add)."""
    dtype = B.dtype_of(grad)
    for d, (start, stop, step) in enumerate(slices):
        n = in_shape[d]
        cur = B.shape_of(grad)
        if cur[d] == n and start == 0 and step == 1:
            continue
        if step == 1:
            parts = []
            if start > 0:
                parts.append(B.zeros(cur[:d] + (start,) + cur[d + 1:], dtype))
            parts.append(grad)
            after = n - start - cur[d]
            if after > 0:
                parts.append(B.zeros(cur[:d] + (after,) + cur[d + 1:], dtype))
            grad = B.cat(parts, d)
        else:
            index = B.from_numpy(np.arange(start, stop, step, dtype=np.int64))
            grad = B.index_add(B.zeros(cur[:d] + (n,) + cur[d + 1:], dtype), d, index, grad)
    return grad


slice = declare(OpDef(  # noqa: A001 - the op's name
    "slice", (tensor("x"), static("slices")), _slice_meta, recompute=True,
    grad=Grad(lambda B, g, ctx: {"x": slice_backward(B, g, ctx.shape("x"), ctx.args.slices)}),
    doc="A strided view: one normalized `(start, stop, step)` per dim (step may be < 0)."))


# ---------------------------------------------------------------------------- cat
def _cat_meta(xs, dim):
    xs = tuple(xs)
    if not xs:
        raise ShapeError("cat: expected at least one tensor")
    for x in xs[1:]:
        same_dtype("cat", xs[0], x)
    if not isinstance(dim, int) or not 0 <= dim < max(len(xs[0].shape), 1):
        raise IndexOutOfRangeError(f"cat: dim {dim} is out of range for shape "
                                   f"{tuple(xs[0].shape)}")
    shape = sh.cat([tuple(x.shape) for x in xs], dim)
    return Out(shape, xs[0].dtype, (xs, dim), same=len(xs) == 1)


def _cat_grad(B, g, ctx):
    dim = ctx.args.dim
    full = B.shape_of(g)
    grads, start = [], 0
    for shape, need in zip(ctx.shape("xs"), ctx._needs["xs"]):
        stop = start + shape[dim]
        grads.append(B.slice(g, tuple((start, stop, 1) if i == dim else (0, n, 1)
                                      for i, n in enumerate(full))) if need else None)
        start = stop
    return {"xs": grads}


cat = declare(OpDef(
    "cat", (tensors("xs"), static("dim")), _cat_meta, recompute=True, normalizes=True, grad=Grad(_cat_grad),
    doc="The tensors of `xs` (one dtype, equal outside `dim`) joined along `dim`."))


# ---------------------------------------------------------------------------- contiguous
contiguous = declare(OpDef(
    "contiguous", (tensor("x"),), lambda x: (x.shape, x.dtype), recompute=True,
    grad=Grad(lambda B, g, ctx: {"x": g}),
    doc="`x` in a dense row-major buffer of its own (a copy where it was a view)."))
