"""Gradient-ready hooks: what a backward pass tells the outside while it runs.

A pass calls the installed `listener` for a leaf as soon as that leaf's gradient is final (the
last step that adds into it has run), not after the whole pass, so a consumer such as
`DistributedDataParallel` can start reducing early gradients while the rest of the graph is
still being differentiated (torch's post-accumulate-grad hooks). `queue_callback(fn)`, called
from such a hook, runs `fn()` once at the end of the running pass (torch's
`Variable._execution_engine.queue_callback`). A pass without a listener pays nothing.

The listener is the Tensor layer (`lazyt/tensor.py`), which maps leaf node ids to the tensors
holding them; this module only knows node ids, so autodiff stays below the Tensor layer.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Protocol

from ..errors import GradError
from .node import NodeId


class LeafListener(Protocol):
    def wants(self, node_id: NodeId) -> bool:
        """Whether anything waits for this leaf's gradient (cheap; called per graph leaf)."""

    def ready(self, node_id: NodeId, grads: Any) -> None:
        """The leaf's gradient in `grads` is final for this pass."""

    def active(self) -> bool:
        """Whether any hook is registered at all (else the pass skips the bookkeeping)."""


listener: LeafListener | None = None


def install(new: LeafListener) -> None:
    """Set the one listener (the Tensor layer installs itself at import)."""
    global listener
    listener = new


class _Pass:
    """What the running pass holds for hooks: its `Gradients` and the queued callbacks."""

    __slots__ = ("grads", "callbacks")

    def __init__(self, grads):
        self.grads = grads
        self.callbacks: list[Callable[[], None]] = []


_PASS: ContextVar[_Pass | None] = ContextVar("lazyt_backward_pass", default=None)


def queue_callback(fn: Callable[[], None]) -> None:
    """Run `fn()` at the end of the backward pass running now (after its last step, before
    `backward()` returns); only callable from inside a pass, e.g. from a gradient hook."""
    p = _PASS.get()
    if p is None:
        raise GradError("queue_callback: no backward pass is running; call it from a gradient "
                        "hook (Tensor.register_post_accumulate_grad_hook)")
    p.callbacks.append(fn)


def current_gradients():
    """The `Gradients` of the backward pass running now (None outside one)."""
    p = _PASS.get()
    return None if p is None else p.grads


def ready_schedule(steps: list, nodes: dict) -> dict[int, list[NodeId]] | None:
    """For a pass over `steps` (in run order): step index -> leaves whose gradient is final
    once that step ran (-1: leaves no step feeds, ready at once). None when nothing listens."""
    lst = listener
    if lst is None or not lst.active():
        return None
    last: dict[NodeId, int] = {}
    for i, node in enumerate(steps):
        for p in node.parents:
            if p is not None:
                last[p.id] = i
    schedule: dict[int, list[NodeId]] = {}
    for nid, node in nodes.items():
        if node.step is None and lst.wants(nid):
            schedule.setdefault(last.get(nid, -1), []).append(nid)
    return schedule or None


def fire(node_ids, grads) -> None:
    lst = listener
    if lst is None:
        return
    for nid in node_ids:
        if nid in grads:
            lst.ready(nid, grads)


class running:
    """`with hooks.running(grads):` marks a pass as running (for `queue_callback`) and runs the
    queued callbacks when the pass ends without an error."""

    __slots__ = ("_pass", "_token")

    def __init__(self, grads):
        self._pass = _Pass(grads)

    def __enter__(self) -> _Pass:
        self._token = _PASS.set(self._pass)
        return self._pass

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                callbacks = self._pass.callbacks
                i = 0
                while i < len(callbacks):   # a callback may queue another
                    callbacks[i]()
                    i += 1
        finally:
            _PASS.reset(self._token)
