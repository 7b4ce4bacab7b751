"""Tracked movement ops (reshape, permute, expand, slice, cat, contiguous) and the
differentiable transfer between device stacks, each backward next to its forward.

Movement ops are memory-bound (a copy at most), so balanced checkpointing recomputes them;
a transfer is compute-bound (it moves data between devices).
"""
from __future__ import annotations

import numpy as np

from .ops import AutodiffTensor, Backward, Tracked, UnTracked, broadcast_shape, untracked_view

AT = AutodiffTensor


# ---------------------------------------------------------------------------- reshape
class ReshapeBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, ops.backend.reshape(grads.consume(ops.node), ops.state))


def reshape(ad, x: AT, shape: tuple):
    B = ad.inner
    match (ReshapeBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(lambda a: B.reshape(a, shape)).parents([x]).stateful()):
        case Tracked(prep):
            return prep.finish(B.shape_of(x.primitive), B.reshape(x.primitive, shape))
        case UnTracked(prep):
            return prep.finish(B.reshape(x.primitive, shape))


# ---------------------------------------------------------------------------- permute
class PermuteBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, ops.backend.permute(grads.consume(ops.node), ops.state))


def permute(ad, x: AT, axes: tuple):
    B = ad.inner
    match (PermuteBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(lambda a: B.permute(a, axes)).parents([x]).stateful()):
        case Tracked(prep):
            inverse = tuple(int(i) for i in np.argsort(axes))
            return prep.finish(inverse, B.permute(x.primitive, axes))
        case UnTracked(prep):
            return prep.finish(B.permute(x.primitive, axes))


# ---------------------------------------------------------------------------- expand
class ExpandBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, broadcast_shape(ops.backend, grads.consume(ops.node), ops.state))


def expand(ad, x: AT, shape: tuple):
    B = ad.inner
    match (ExpandBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(lambda a: B.expand(a, shape)).parents([x]).stateful()):
        case Tracked(prep):
            return prep.finish(B.shape_of(x.primitive), B.expand(x.primitive, shape))
        case UnTracked(prep):
            return prep.finish(B.expand(x.primitive, shape))


# ---------------------------------------------------------------------------- slice
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


class SliceBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        in_shape, slices = ops.state
        grads.register(node, slice_backward(ops.backend, grads.consume(ops.node), in_shape,
                                            slices))


def slice(ad, x: AT, slices: tuple):
    B = ad.inner
    match (SliceBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(lambda a: B.slice(a, slices)).parents([x]).stateful()):
        case Tracked(prep):
            state = (B.shape_of(x.primitive), tuple(slices))
            return prep.finish(state, B.slice(x.primitive, slices))
        case UnTracked(prep):
            return prep.finish(B.slice(x.primitive, slices))


# ---------------------------------------------------------------------------- cat
class CatBackward(Backward):
    """One parent per concatenated tensor; each gets its slice of the gradient."""

    def backward(self, ops, grads, checkpointer):
        grad = grads.consume(ops.node)
        dim, sizes = ops.state
        B = ops.backend
        full = B.shape_of(grad)
        start = 0
        for node, size in zip(ops.parents, sizes):
            stop = start + size
            if node is not None:
                slices = tuple((start, stop, 1) if i == dim else (0, n, 1)
                               for i, n in enumerate(full))
                grads.register(node, B.slice(grad, slices))
            start = stop


def cat(ad, xs, dim: int):
    B = ad.inner
    views = [x if type(x) is AT else untracked_view(B, x) for x in xs]
    prims = [v.primitive for v in views]
    match (CatBackward().prepare(ad.ckpt, [v.node for v in views]).memory_bound()
           .retro_forward(lambda *a: B.cat(list(a), dim)).parents(views).stateful()):
        case Tracked(prep):
            sizes = [B.shape_of(p)[dim] for p in prims]
            return prep.finish((dim, sizes), B.cat(prims, dim))
        case UnTracked(prep):
            return prep.finish(B.cat(prims, dim))


# ---------------------------------------------------------------------------- contiguous
class ContiguousBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, grads.consume(ops.node))


def contiguous(ad, x: AT):
    B = ad.inner
    return (ContiguousBackward().prepare(ad.ckpt, [x.node]).memory_bound()
            .retro_forward(B.contiguous).parents([x])
            .stateless(B.contiguous(x.primitive)))


# ---------------------------------------------------------------------------- transfer
class TransferBackward(Backward, n_parents=1):
    """The gradient goes back to the source stack's backend."""

    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, ops.backend.transfer(grads.consume(ops.node), node.backend))


def transfer(ad, x: AT, target_inner, target_ckpt):
    """Move `x` to another stack; tracked there when that stack has an Autodiff layer
    (`target_ckpt` is its strategy), else the result is detached."""
    out = ad.inner.transfer(x.primitive, target_inner)
    if target_ckpt is None:
        return out
    return TransferBackward().prepare(target_ckpt, [x.node]).compute_bound().stateless(out)
