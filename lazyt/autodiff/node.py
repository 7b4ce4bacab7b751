"""Graph nodes: one per tracked value, pointing at its parents (Burn's `Node`).

The graph is process-global: nodes refer to each other by Python reference, not through an
Autodiff instance, so a graph can span device stacks (`.to(device)` is differentiable). A node
refers only to its parents, never to its children, so dropping the last tensor of a graph frees
it by reference counting; `backward` clears the nodes it consumes explicitly.
"""
from __future__ import annotations

import itertools
from enum import Enum
from typing import Any

NodeId = int

_ids = itertools.count(1)


def next_node_id() -> NodeId:
    """Ids grow with creation order, so a child always has a larger id than its parents."""
    return next(_ids)


def overwrite(current: frozenset | None, exempt) -> frozenset:
    """The node ids that may read a value after one more in-place update of its tensor."""
    exempt = frozenset(exempt)
    return exempt if current is None else current & exempt


class Requirement(Enum):
    """Whether a node's gradient is wanted (Burn's `Requirement`)."""

    GRAD = "grad"                          # a leaf marked with require_grad(): keep its gradient
    GRAD_IN_BACKWARD = "grad_in_backward"  # an intermediate: computed, consumed, dropped
    NONE = "none"                          # untracked: no gradient flows here

    def is_none(self) -> bool:
        return self is Requirement.NONE


_live_steps = 0


def live_nodes() -> int:
    """Number of graph nodes still holding a backward step (0 once every graph is consumed or
    dropped). Leaves hold no step and are not counted."""
    return _live_steps


class Step:
    """What backward runs for one node: the op's `Backward`, its state and its checkpoints."""

    __slots__ = ("backward", "state", "checkpoints", "__weakref__")

    def __init__(self, backward, state, checkpoints: list):
        global _live_steps
        self.backward = backward
        self.state = state
        self.checkpoints = checkpoints  # [(NodeId, Source)] the op asked to retrieve
        _live_steps += 1

    def __del__(self):
        global _live_steps
        try:
            _live_steps -= 1
        except TypeError:  # interpreter shutdown cleared the module
            pass


class Node:
    """A value in the autodiff graph.

    `parents` has one entry per op input, None where that input is untracked (Burn's
    `ops.parents`). `backend` is the inner backend whose primitives hold this node's value and
    gradient. `step` is None for leaves and for nodes consumed by a backward pass. `retro` is
    set under balanced checkpointing for memory-bound ops: how to recompute the value.
    `saved` lets every op that checkpoints this value share one `Saved` (weakly: the ops'
    steps own it). `hooks` holds gradient hooks of an intermediate (`Tensor.register_hook`):
    callables `hook(grad) -> grad | None` run on its gradient once it is final, before its
    step uses it.
    """

    __slots__ = ("id", "parents", "requirement", "backend", "step", "retro", "consumed",
                 "saved", "overwritten", "hooks")

    def __init__(self, id: NodeId, parents: tuple, requirement: Requirement, backend: Any,
                 step: Step | None = None, retro=None):
        self.id = id
        self.parents = parents
        self.requirement = requirement
        self.backend = backend
        self.step = step
        self.retro = retro
        self.consumed = False
        self.saved = None  # weak reference to the `Saved` holding this node's value, if any
        #: None, or (its tensor was updated in place: `Tensor.add_`, `+=`, ...) the ids of
        #: the nodes that may still read the old value: those the in-place op made
        self.overwritten: frozenset | None = None
        self.hooks: list | None = None

    def __repr__(self) -> str:
        state = "consumed" if self.consumed else "leaf" if self.step is None else "op"
        return f"Node(id={self.id}, requirement={self.requirement.name}, {state})"

    def mark_overwritten(self, exempt) -> None:
        self.overwritten = overwrite(self.overwritten, exempt)

    def clear(self) -> None:
        """Drop what backward needed (the step, saved state, parents): called once consumed."""
        self.step = None
        self.retro = None
        self.parents = ()
        self.hooks = None
        self.consumed = True
