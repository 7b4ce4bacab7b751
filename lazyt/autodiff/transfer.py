"""The differentiable transfer between device stacks (`Tensor.to(device)`): a layer hook, not a
declared op, since it joins two stacks. Compute-bound (it moves data between devices)."""
from __future__ import annotations

from .ops import AutodiffTensor, Backward


class TransferBackward(Backward, n_parents=1):
    """The gradient goes back to the source stack's backend."""

    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        grads.register(node, ops.backend.transfer(grads.consume(ops.node), node.backend))


def transfer(ad, x: AutodiffTensor, target_inner, target_ckpt):
    """Move `x` to another stack; tracked there when that stack has an Autodiff layer
    (`target_ckpt` is its strategy), else the result is detached."""
    out = ad.inner.transfer(x.primitive, target_inner)
    if target_ckpt is None:
        return out
    return TransferBackward().prepare(target_ckpt, [x.node]).compute_bound().stateless(out)
