"""The handwritten Autodiff impl of `fused_matmul_add_relu`, generic over the inner backend B."""
from __future__ import annotations

from lazyt.autodiff import Backward, Tracked, UnTracked, broadcast_shape
from lazyt.backends import Autodiff

from .lib import Backend


class FusedMatmulAddReluBackward(Backward, n_parents=3):
    """Gradients of relu(lhs @ rhs + bias), reduced to each input's (broadcast) shape."""

    def backward(self, ops, grads, checkpointer):
        node_lhs, node_rhs, node_bias = ops.parents
        grad = grads.consume(ops.node)
        lhs_state, rhs_state, output, shape_bias = ops.state
        B = ops.backend
        lhs = checkpointer.retrieve_node_output(lhs_state)
        rhs = checkpointer.retrieve_node_output(rhs_state)
        grad_output = B.relu_backward(output, grad)
        if node_lhs is not None:
            grad_lhs = B.float_matmul(grad_output, B.float_transpose(rhs))
            grads.register(node_lhs, broadcast_shape(B, grad_lhs, B.shape_of(lhs)))
        if node_rhs is not None:
            grad_rhs = B.float_matmul(B.float_transpose(lhs), grad_output)
            grads.register(node_rhs, broadcast_shape(B, grad_rhs, B.shape_of(rhs)))
        if node_bias is not None:
            grads.register(node_bias, broadcast_shape(B, grad_output, shape_bias))


@Backend.implement(Autodiff)
def fused_matmul_add_relu(B, ckpt, lhs, rhs, bias):
    prep = FusedMatmulAddReluBackward().prepare(ckpt, [lhs.node, rhs.node, bias.node])
    match prep.compute_bound().stateful():
        case Tracked(prep):
            # the parents' values are checkpointed (saved or recomputed under "balanced");
            # the output is kept, since recomputing the op would cost a matmul
            lhs_state = prep.checkpoint(lhs)
            rhs_state = prep.checkpoint(rhs)
            output = B.fused_matmul_add_relu(lhs.primitive, rhs.primitive, bias.primitive)
            return prep.finish((lhs_state, rhs_state, output, B.shape_of(bias.primitive)),
                               output)
        case UnTracked(prep):
            return prep.finish(B.fused_matmul_add_relu(lhs.primitive, rhs.primitive,
                                                       bias.primitive))
