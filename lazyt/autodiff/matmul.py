"""Tracked matmul (batched, broadcast batch dims), backward next to forward. Compute-bound."""
from __future__ import annotations

from .ops import Backward, Tracked, UnTracked, broadcast_shape, untracked_view
from .ops import AutodiffTensor as AT


class MatmulBackward(Backward, n_parents=2):
    def backward(self, ops, grads, checkpointer):
        lhs_node, rhs_node = ops.parents
        grad = grads.consume(ops.node)
        lhs_id, rhs_id, lhs_shape, rhs_shape = ops.state
        B = ops.backend
        if lhs_node is not None:
            rhs = checkpointer.retrieve_node_output(rhs_id)
            g = B.float_matmul(grad, B.float_transpose(rhs))
            grads.register(lhs_node, broadcast_shape(B, g, lhs_shape))
        if rhs_node is not None:
            lhs = checkpointer.retrieve_node_output(lhs_id)
            g = B.float_matmul(B.float_transpose(lhs), grad)
            grads.register(rhs_node, broadcast_shape(B, g, rhs_shape))


def matmul(ad, lhs, rhs):
    B = ad.inner
    lhs = lhs if type(lhs) is AT else untracked_view(B, lhs)
    rhs = rhs if type(rhs) is AT else untracked_view(B, rhs)
    match MatmulBackward().prepare(ad.ckpt, [lhs.node, rhs.node]).compute_bound().stateful():
        case Tracked(prep):
            # each operand is needed only for the other one's gradient
            rhs_id = None if lhs.node.requirement.is_none() else prep.checkpoint(rhs)
            lhs_id = None if rhs.node.requirement.is_none() else prep.checkpoint(lhs)
            state = (lhs_id, rhs_id, B.shape_of(lhs.primitive), B.shape_of(rhs.primitive))
            return prep.finish(state, B.matmul(lhs.primitive, rhs.primitive))
        case UnTracked(prep):
            return prep.finish(B.matmul(lhs.primitive, rhs.primitive))
