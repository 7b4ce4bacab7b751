"""Tracked indexing ops (gather, scatter_add, index_select, index_add), backward next to
forward. Compute-bound. Index tensors are int64 and never tracked; each op checkpoints its
index (an untracked value, so it is saved)."""
from __future__ import annotations

from .ops import AutodiffTensor, Backward, Tracked, UnTracked, untracked_view

AT = AutodiffTensor


def _view(B, x):
    return x if type(x) is AT else untracked_view(B, x)


def _pad_to(B, grad, shape: tuple):
    """Zero-pad `grad` at the end of each dim up to `shape` (scatter_add reads only the part
    of `src` that its index covers; the rest gets a zero gradient)."""
    dtype = B.dtype_of(grad)
    for d, n in enumerate(shape):
        cur = B.shape_of(grad)
        if cur[d] < n:
            grad = B.cat([grad, B.zeros(cur[:d] + (n - cur[d],) + cur[d + 1:], dtype)], d)
    return grad


# ---------------------------------------------------------------------------- gather
class GatherBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grad = grads.consume(ops.node)
        dim, index_id, shape = ops.state
        B = ops.backend
        index = checkpointer.retrieve_node_output(index_id)
        grads.register(node, B.scatter_add(B.zeros(shape, B.dtype_of(grad)), dim, index, grad))


def gather(ad, x: AT, dim: int, index):
    B = ad.inner
    match GatherBackward().prepare(ad.ckpt, [x.node]).compute_bound().stateful():
        case Tracked(prep):
            state = (dim, prep.checkpoint(_view(B, index)), B.shape_of(x.primitive))
            return prep.finish(state, B.gather(x.primitive, dim, index))
        case UnTracked(prep):
            return prep.finish(B.gather(x.primitive, dim, index))


# ---------------------------------------------------------------------------- scatter_add
class ScatterAddBackward(Backward, n_parents=2):
    def backward(self, ops, grads, checkpointer):
        x_node, src_node = ops.parents
        grad = grads.consume(ops.node)
        dim, index_id, src_shape = ops.state
        B = ops.backend
        if x_node is not None:
            grads.register(x_node, grad)
        if src_node is not None:
            index = checkpointer.retrieve_node_output(index_id)
            grads.register(src_node, _pad_to(B, B.gather(grad, dim, index), src_shape))


def scatter_add(ad, x, dim: int, index, src):
    B = ad.inner
    x, src = _view(B, x), _view(B, src)
    match ScatterAddBackward().prepare(ad.ckpt, [x.node, src.node]).compute_bound().stateful():
        case Tracked(prep):
            index_id = None if src.node.requirement.is_none() else prep.checkpoint(_view(B, index))
            state = (dim, index_id, B.shape_of(src.primitive))
            return prep.finish(state, B.scatter_add(x.primitive, dim, index, src.primitive))
        case UnTracked(prep):
            return prep.finish(B.scatter_add(x.primitive, dim, index, src.primitive))


# ---------------------------------------------------------------------------- index_select
class IndexSelectBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grad = grads.consume(ops.node)
        dim, index_id, shape = ops.state
        B = ops.backend
        index = checkpointer.retrieve_node_output(index_id)
        grads.register(node, B.index_add(B.zeros(shape, B.dtype_of(grad)), dim, index, grad))


def index_select(ad, x: AT, dim: int, index):
    B = ad.inner
    match IndexSelectBackward().prepare(ad.ckpt, [x.node]).compute_bound().stateful():
        case Tracked(prep):
            state = (dim, prep.checkpoint(_view(B, index)), B.shape_of(x.primitive))
            return prep.finish(state, B.index_select(x.primitive, dim, index))
        case UnTracked(prep):
            return prep.finish(B.index_select(x.primitive, dim, index))


# ---------------------------------------------------------------------------- index_add
class IndexAddBackward(Backward, n_parents=2):
    def backward(self, ops, grads, checkpointer):
        x_node, src_node = ops.parents
        grad = grads.consume(ops.node)
        dim, index_id = ops.state
        B = ops.backend
        if x_node is not None:
            grads.register(x_node, grad)
        if src_node is not None:
            index = checkpointer.retrieve_node_output(index_id)
            grads.register(src_node, B.index_select(grad, dim, index))


def index_add(ad, x, dim: int, index, src):
    B = ad.inner
    x, src = _view(B, x), _view(B, src)
    match IndexAddBackward().prepare(ad.ckpt, [x.node, src.node]).compute_bound().stateful():
        case Tracked(prep):
            index_id = None if src.node.requirement.is_none() else prep.checkpoint(_view(B, index))
            return prep.finish((dim, index_id),
                               B.index_add(x.primitive, dim, index, src.primitive))
        case UnTracked(prep):
            return prep.finish(B.index_add(x.primitive, dim, index, src.primitive))
