"""Checkpointing: which values backward needs, saved or recomputed (Burn's `checkpoint`).

An op's forward calls `prep.checkpoint(tensor)` for each value its backward will need and gets a
`NodeId`; its backward calls `checkpointer.retrieve_node_output(id)`. What is kept in between
depends on the strategy:

- `"none"`: every checkpointed value is saved (held alive until backward or until the graph is
  dropped).
- `"balanced"`: values produced by compute-bound ops (matmul, reductions, indexing), leaves and
  untracked inputs are saved; values of memory-bound ops (elementwise, movement) are not:
  their node keeps a `Retro` (the op's retro-forward and the sources of its inputs) and the
  checkpointer recomputes them during backward, in topological order, each value dropped after
  its last use. Both strategies give identical gradients.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from ..errors import GradError
from ..shape import numel
from .node import Node, NodeId, overwrite

STRATEGIES = ("balanced", "none")

_saved_bytes = 0
_saved_count = 0


def saved_bytes() -> int:
    """Bytes of tensor data the autodiff graphs now alive hold for backward (a tracked value
    counts once however many ops checkpoint it; an untracked input once per op)."""
    return _saved_bytes


def saved_tensors() -> int:
    """Number of distinct values the autodiff graphs now alive hold for backward."""
    return _saved_count


class CheckpointStrategy:
    """The checkpointing strategy of one Autodiff layer, passed as `ckpt` to `prepare`.

    `backend` is that layer's inner backend: the one whose primitives the graph's values and
    gradients are.
    """

    __slots__ = ("name", "backend", "recompute")

    def __init__(self, name: str, backend: Any):
        if name not in STRATEGIES:
            raise ValueError(f"checkpointing must be one of {STRATEGIES}, got {name!r}")
        self.name = name
        self.backend = backend
        self.recompute = name == "balanced"

    def __repr__(self) -> str:
        return f"CheckpointStrategy({self.name!r})"


class Saved:
    """A value held for backward, shared by every op that checkpoints it."""

    __slots__ = ("value", "nbytes", "overwritten", "__weakref__")

    def __init__(self, value: Any, nbytes: int):
        global _saved_bytes, _saved_count
        self.value = value
        self.nbytes = nbytes
        self.overwritten = None   # as `Node.overwritten`: updated in place since, and who may read
        _saved_bytes += nbytes
        _saved_count += 1

    def mark_overwritten(self, exempt) -> None:
        self.overwritten = overwrite(self.overwritten, exempt)

    def __del__(self):
        global _saved_bytes, _saved_count
        try:
            _saved_bytes -= self.nbytes
            _saved_count -= 1
        except TypeError:  # interpreter shutdown cleared the module
            pass


def save(tensor) -> Saved:
    """The `Saved` holding `tensor`'s value, shared by every op that checkpoints it (the node
    refers to it weakly, so it lives exactly as long as some op's state needs it)."""
    node = tensor.node
    ref = node.saved
    s = ref() if ref is not None else None
    if s is None:
        backend = node.backend
        value = tensor.primitive
        nbytes = numel(backend.shape_of(value)) * backend.dtype_of(value).itemsize
        s = Saved(value, nbytes)
        node.saved = weakref.ref(s)
    return s


class Recompute:
    """A value to recompute during backward from the retro-forward of its (memory-bound) node."""

    __slots__ = ("node",)

    def __init__(self, node: Node):
        self.node = node


Source = Saved | Recompute


class Retro:
    """How to recompute a memory-bound node: `fn(*input values)` and where each input comes
    from (`(NodeId, Source)` per input, in the order of `.parents([...])`)."""

    __slots__ = ("fn", "sources")

    def __init__(self, fn: Callable, sources: list):
        self.fn = fn
        self.sources = sources


def source_of(strategy: CheckpointStrategy, tensor) -> Source:
    """Save `tensor` or plan its recomputation, per the strategy and its node's compute kind."""
    node = tensor.node
    if strategy.recompute and node.retro is not None:
        return Recompute(node)
    return save(tensor)


class Checkpointer:
    """Hands backward steps the values they checkpointed (Burn's `Checkpointer`).

    Built at the start of a backward pass from the checkpoints of every step that will run:
    it counts how many times each value will be retrieved (directly, or as an input of a
    recomputation) and drops a value after its last retrieval.
    """

    def __init__(self):
        self._sources: dict[NodeId, Source] = {}
        self._retros: dict[NodeId, Retro] = {}
        self._left: dict[NodeId, int] = {}     # retrievals still to come
        self._values: dict[NodeId, Any] = {}   # values fetched or recomputed, not yet dropped

    def _require(self, node_id: NodeId, source: Source) -> None:
        """Count one future retrieval of `node_id`; the first time a recomputed value is
        required, count the retrievals of its inputs too (iteratively: chains may be long)."""
        work = [(node_id, source)]
        while work:
            nid, src = work.pop()
            seen = nid in self._left
            self._left[nid] = self._left.get(nid, 0) + 1
            if seen:
                continue
            self._sources[nid] = src
            if type(src) is Recompute:
                retro = src.node.retro
                if retro is None:
                    raise GradError(f"backward: node {nid} must be recomputed but its graph "
                                    "was already consumed by an earlier backward()")
                self._retros[nid] = retro
                work.extend(retro.sources)

    def add_step(self, checkpoints: list, reader: NodeId | None = None) -> None:
        """Register the checkpoints of one step that will run (the step of node `reader`).
        `GradError` when one of them was updated in place after `reader`'s op read it
        (torch's version check; the in-place op's own steps may read what it replaced, and
        the inputs of a recomputation are exempt: their values are immutable, only the
        tensor objects holding them moved on)."""
        for nid, src in checkpoints:
            gone = src.overwritten if type(src) is Saved else src.node.overwritten
            if gone is not None and reader not in gone:
                raise GradError(f"backward: a value this gradient needs (node {nid}) was "
                                "modified by an in-place op after the forward used it; compute "
                                "out of place (y = y + 1) or take a .clone() first (torch "
                                "refuses this too)")
        for nid, src in checkpoints:
            self._require(nid, src)

    def retrieve_node_output(self, node_id: NodeId) -> Any:
        """The value of node `node_id` as its forward produced it (saved or recomputed)."""
        if node_id not in self._values:
            self._materialize(node_id)
        return self._take(node_id)

    def _take(self, node_id: NodeId) -> Any:
        value = self._values[node_id]
        left = self._left[node_id] - 1
        self._left[node_id] = left
        if left <= 0:
            del self._values[node_id]
        return value

    def _materialize(self, node_id: NodeId) -> None:
        """Fetch or recompute `node_id`, recomputing missing inputs first (topological order,
        with an explicit stack)."""
        if node_id not in self._sources:
            raise GradError(f"retrieve_node_output: node {node_id} was not checkpointed by this "
                            "op (use prep.checkpoint(tensor) in the forward)")
        if self._left[node_id] <= 0:
            raise GradError(f"retrieve_node_output: node {node_id} was retrieved more often than "
                            "it was checkpointed (call prep.checkpoint once per retrieval)")
        stack = [node_id]
        while stack:
            nid = stack[-1]
            if nid in self._values:
                stack.pop()
                continue
            src = self._sources[nid]
            if type(src) is Saved:
                self._values[nid] = src.value
                stack.pop()
                continue
            retro = self._retros[nid]
            missing = [pid for pid, _ in retro.sources if pid not in self._values]
            if missing:
                stack.extend(missing)
                continue
            args = [self._take(pid) for pid, _ in retro.sources]
            self._values[nid] = retro.fn(*args)
            stack.pop()

    def held(self) -> int:
        """Number of values held right now (saved ones fetched, or recomputed)."""
        return len(self._values)

    def clear(self) -> None:
        self._sources.clear()
        self._retros.clear()
        self._left.clear()
        self._values.clear()
