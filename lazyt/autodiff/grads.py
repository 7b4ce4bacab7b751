"""`Gradients`: the gradients of one backward pass, keyed by node id (Burn's `Gradients`)."""
from __future__ import annotations

from typing import Any

from ..errors import GradError
from ..ops import BinaryOp
from .node import Node, NodeId


class Gradients:
    """Gradients of a backward pass: intermediates are consumed by their op's backward step,
    leaves (`Requirement.GRAD`) stay and are read with `grads[x]` / `grads.get(x)`.

    Values are primitives of the backend that holds the node (the Autodiff layer's inner
    backend), so they can be used with that backend directly.
    """

    __slots__ = ("_grads", "_nodes", "accumulated")

    def __init__(self, nodes: dict[NodeId, Node] | None = None):
        self._grads: dict[NodeId, Any] = {}
        self._nodes: dict[NodeId, Node] = nodes if nodes is not None else {}
        #: leaves whose gradient was already added into their `.grad` during the pass (by a
        #: gradient-ready hook, `lazyt/autodiff/hooks.py`); the end of backward skips them
        self.accumulated: set[NodeId] = set()

    @staticmethod
    def _id(node: Node | NodeId) -> NodeId:
        return node if isinstance(node, int) else node.id

    def consume(self, node: Node | NodeId) -> Any:
        """Remove and return the gradient of `node` (its op's backward calls this once)."""
        key = self._id(node)
        try:
            return self._grads.pop(key)
        except KeyError:
            raise GradError(f"Gradients.consume: node {key} has no gradient (it was consumed "
                            "already, or nothing depends on it)") from None

    def register(self, node: Node | NodeId, grad: Any) -> None:
        """Add `grad` to the gradient of `node` (gradients of a node reached twice accumulate)."""
        key = self._id(node)
        old = self._grads.get(key)
        if old is None:
            self._grads[key] = grad
            return
        backend = node.backend if isinstance(node, Node) else None
        if backend is None:
            known = self._nodes.get(key)
            if known is None:
                raise GradError(f"Gradients.register: node {key} is not part of this graph; "
                                "pass the Node itself (from ops.parents)")
            backend = known.backend
        self._grads[key] = backend.binary(BinaryOp.ADD, old, grad)

    def get(self, node: Node | NodeId) -> Any | None:
        """The gradient of `node`, or None when it has none. Given a tensor (`grads.get(x)`),
        its gradient as a tensor."""
        read = getattr(node, "_grad_in", None)
        if read is not None:
            return read(self)
        return self._grads.get(self._id(node))

    def __getitem__(self, key):
        """`grads[x]`: the gradient of the tensor `x` (or of a node) in this pass; `GradError`
        when it has none (it does not require grad, or the result does not depend on it)."""
        value = self.get(key)
        if value is None:
            what = f"node {key}" if isinstance(key, int) else \
                f"tensor of shape {tuple(getattr(key, 'shape', ()))}"
            raise GradError(f"Gradients: no gradient for this {what}: it does not require "
                            "grad, or the result backward ran from does not depend on it "
                            "(grads.get(x) returns None instead)")
        return value

    def leaf_items(self) -> list:
        """(node id, gradient) of every gradient still held (after backward: the leaves')."""
        return list(self._grads.items())

    def replace(self, node: Node | NodeId, grad: Any) -> None:
        """Set the gradient of `node` to `grad` (e.g. a gradient averaged over processes)."""
        self._grads[self._id(node)] = grad

    def remove(self, node: Node | NodeId) -> Any | None:
        """Remove and return the gradient of `node` (None when it has none)."""
        return self._grads.pop(self._id(node), None)

    def __contains__(self, node: Node | NodeId) -> bool:
        return self._id(node) in self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} tensors)"
