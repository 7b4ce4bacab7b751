"""The op-author API (Burn's `autodiff::ops`): `Backward`, `Ops`, the `prepare` builder,
`Tracked` / `UnTracked` and `broadcast_shape`.

Every built-in op of the Autodiff layer is written with this API, and so are extension ops::

    class MulBackward(Backward, n_parents=2):
        def backward(self, ops, grads, checkpointer):
            lhs_node, rhs_node = ops.parents
            grad = grads.consume(ops.node)
            ...

    match (MulBackward().prepare(ckpt, [lhs.node, rhs.node])
           .memory_bound().retro_forward(fn).parents([lhs, rhs]).stateful()):
        case Tracked(prep):
            state = (prep.checkpoint(lhs), prep.checkpoint(rhs))
            return prep.finish(state, B.binary(MUL, lhs.primitive, rhs.primitive))
        case UnTracked(prep):
            return prep.finish(B.binary(MUL, lhs.primitive, rhs.primitive))

`prepare` takes the layer's `CheckpointStrategy` (`ckpt`) and one node per op input (a tensor's
`.node`; untracked inputs have a `Requirement.NONE` node). The builder stages enforce the call
order: compute property, then (memory-bound only) retro-forward and its parents, then
`stateful()` or `stateless(output)`.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import GradError
from ..ops import ReduceOp
from .checkpoint import CheckpointStrategy, Retro, source_of
from .node import Node, NodeId, Requirement, Step, next_node_id

_GRAD_ENABLED: contextvars.ContextVar = contextvars.ContextVar("lazyt_grad_enabled",
                                                               default=True)


class AutodiffTensor:
    """A tracked value of the Autodiff layer: the inner backend's primitive and its graph node.

    Untracked values of the layer are plain inner primitives; `Autodiff.view` gives them a
    `Requirement.NONE` node for op authors that want one uniform type.
    """

    __slots__ = ("primitive", "node")

    def __init__(self, primitive: Any, node: Node):
        self.primitive = primitive
        self.node = node

    @property
    def shape(self) -> tuple:
        return self.node.backend.shape_of(self.primitive)

    @property
    def dtype(self):
        return self.node.backend.dtype_of(self.primitive)

    def is_tracked(self) -> bool:
        return self.node.requirement is not Requirement.NONE

    def into_primitive(self) -> Any:
        return self.primitive

    def __repr__(self) -> str:
        return f"AutodiffTensor(shape={self.shape}, {self.node!r})"


def untracked_view(backend: Any, primitive: Any) -> AutodiffTensor:
    """`primitive` (a value of `backend`) as an AutodiffTensor with a `Requirement.NONE` node."""
    return AutodiffTensor(primitive, Node(next_node_id(), (), Requirement.NONE, backend))


@dataclass(frozen=True, slots=True)
class Ops:
    """What a backward step receives: its parents' nodes (None for untracked inputs), its own
    node, the state its forward stored, and the inner backend (`backend`) to compute with."""

    parents: tuple
    node: Node
    state: Any
    backend: Any


class Backward:
    """Base class of an op's backward: subclass as `class MyBackward(Backward, n_parents=2)`
    and implement `backward(self, ops, grads, checkpointer)`."""

    n_parents: int | None = None

    def __init_subclass__(cls, n_parents: int | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if n_parents is not None:
            cls.n_parents = n_parents

    def backward(self, ops: Ops, grads, checkpointer) -> None:
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def prepare(self, ckpt: CheckpointStrategy, nodes: Sequence[Node]) -> "OpsPrep":
        """Start recording this op with the parents `nodes` (one per op input)."""
        if self.n_parents is not None and len(nodes) != self.n_parents:
            raise GradError(f"{type(self).__name__}.prepare: expected {self.n_parents} parent "
                            f"nodes, got {len(nodes)}")
        return OpsPrep(self, ckpt, nodes)


def _requirement(nodes: Sequence[Node]) -> Requirement:
    if not _GRAD_ENABLED.get():
        return Requirement.NONE
    for n in nodes:
        if n.requirement is not Requirement.NONE:
            return Requirement.GRAD_IN_BACKWARD
    return Requirement.NONE


class _Prepared:
    __slots__ = ("backward", "ckpt", "nodes", "retro_fn", "retro_parents")

    def __init__(self, backward: Backward, ckpt: CheckpointStrategy, nodes, retro_fn=None,
                 retro_parents=None):
        self.backward = backward
        self.ckpt = ckpt
        self.nodes = nodes
        self.retro_fn = retro_fn
        self.retro_parents = retro_parents


class OpsPrep(_Prepared):
    """Stage 1: choose the compute property."""

    __slots__ = ()

    def compute_bound(self) -> "OpsPrepDone":
        """The op is expensive to recompute: checkpoints of its output save the value."""
        return OpsPrepDone(self.backward, self.ckpt, self.nodes)

    def memory_bound(self) -> "OpsPrepMemoryBound":
        """The op is cheap to recompute: under "balanced" its output is recomputed in backward
        from a retro-forward instead of being saved."""
        return OpsPrepMemoryBound(self.backward, self.ckpt, self.nodes)


class OpsPrepMemoryBound(_Prepared):
    """Stage 2 (memory-bound): give the retro-forward."""

    __slots__ = ()

    def retro_forward(self, fn: Callable) -> "OpsPrepRetro":
        """`fn(*input_values) -> output`, on the inner backend's primitives, in the order of
        the tensors given to `.parents([...])` next."""
        return OpsPrepRetro(self.backward, self.ckpt, self.nodes, fn)


class OpsPrepRetro(_Prepared):
    """Stage 3 (memory-bound): the tensors the retro-forward reads."""

    __slots__ = ()

    def parents(self, tensors: Sequence[AutodiffTensor]) -> "OpsPrepDone":
        return OpsPrepDone(self.backward, self.ckpt, self.nodes, self.retro_fn, list(tensors))


class OpsPrepDone(_Prepared):
    """Last stage: `stateful()` (the op stores state) or `stateless(output)`."""

    __slots__ = ()

    def stateful(self) -> "Tracked | UnTracked":
        """`Tracked(prep)` when a gradient must flow through this op, else `UnTracked(prep)`."""
        if _requirement(self.nodes) is Requirement.NONE:
            return UnTracked(UnTrackedPrep())
        return Tracked(TrackedPrep(self))

    def stateless(self, output: Any) -> Any:
        """Record an op whose backward needs no state; returns the layer's output value."""
        if _requirement(self.nodes) is Requirement.NONE:
            return output
        return TrackedPrep(self).finish(None, output)


@dataclass(frozen=True, slots=True)
class Tracked:
    """The op is tracked: checkpoint what backward needs, then `prep.finish(state, output)`."""

    prep: "TrackedPrep"


@dataclass(frozen=True, slots=True)
class UnTracked:
    """The op is not tracked: compute the output and return `prep.finish(output)`."""

    prep: "UnTrackedPrep"


class UnTrackedPrep:
    __slots__ = ()

    def finish(self, output: Any) -> Any:
        """The untracked output: the inner primitive itself (no graph node)."""
        return output


class TrackedPrep:
    """Records checkpoints during the forward and registers the backward step at `finish`."""

    __slots__ = ("_done", "_checkpoints")

    def __init__(self, done: OpsPrepDone):
        self._done = done
        self._checkpoints: list = []

    def checkpoint(self, tensor: AutodiffTensor) -> NodeId:
        """Keep `tensor`'s value retrievable in backward (saved, or recomputed under balanced)."""
        self._checkpoints.append((tensor.node.id, source_of(self._done.ckpt, tensor)))
        return tensor.node.id

    def finish(self, state: Any, output: Any) -> AutodiffTensor:
        """Create the output's node with this op's backward step; returns the tracked output."""
        done = self._done
        ckpt = done.ckpt
        parents = tuple(n if n.requirement is not Requirement.NONE else None for n in done.nodes)
        retro = None
        if done.retro_fn is not None and ckpt.recompute:
            retro = Retro(done.retro_fn,
                          [(t.node.id, source_of(ckpt, t)) for t in done.retro_parents])
        node = Node(next_node_id(), parents, Requirement.GRAD_IN_BACKWARD, ckpt.backend,
                    Step(done.backward, state, self._checkpoints), retro)
        return AutodiffTensor(output, node)


def broadcast_shape(B: Any, grad: Any, shape: Sequence[int]) -> Any:
    """Sum `grad` (a primitive of backend `B`) down to `shape`, the shape of an input that was
    broadcast to `grad`'s shape: over the leading dims it lacked and its size-1 dims."""
    shape = tuple(shape)
    gshape = B.shape_of(grad)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and gshape[i + lead] != 1)
    if dims:
        grad = B.reduce(ReduceOp.SUM, grad, dims, True)
    if B.shape_of(grad) != shape:
        grad = B.reshape(grad, shape)
    return grad
