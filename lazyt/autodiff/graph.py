"""The backward pass: walk the graph below a root in reverse creation order, run each node's
step once, and free what it consumed (Burn's `graph::traversal` + `runtime`)."""
from __future__ import annotations

from typing import Any

from ..errors import GradError
from . import hooks
from .checkpoint import Checkpointer
from .grads import Gradients
from .node import Node, Requirement
from .ops import Ops

_CONSUMED = ("backward: this graph was already consumed by an earlier backward() (its nodes "
             "and saved state are freed after use); run the forward again to backpropagate "
             "a second time")


def collect(root: Node) -> tuple[list[Node], dict]:
    """The nodes with a step reachable from `root` (children before parents) and every node
    reached, leaves included, by id."""
    if root.consumed:
        raise GradError(_CONSUMED)
    seen: dict = {root.id: root}
    stack = [root]
    steps = []
    while stack:
        node = stack.pop()
        if node.step is None:
            continue
        steps.append(node)
        for p in node.parents:
            if p is not None and p.id not in seen:
                if p.consumed:
                    raise GradError(_CONSUMED)
                seen[p.id] = p
                stack.append(p)
    steps.sort(key=lambda n: n.id, reverse=True)
    return steps, seen


def run_backward(root: Node, seed: Any) -> Gradients:
    """Backpropagate `seed` (the gradient of `root`'s value) to every tracked ancestor."""
    steps, nodes = collect(root)
    grads = Gradients(nodes)
    grads.register(root, seed)
    checkpointer = Checkpointer()
    for node in steps:
        checkpointer.add_step(node.step.checkpoints, node.id)
    ready = hooks.ready_schedule(steps, nodes)   # None unless a gradient hook is registered
    try:
        if ready is None:
            _run_steps(steps, grads, checkpointer, None)
        else:
            with hooks.running(grads):
                hooks.fire(ready.get(-1, ()), grads)
                _run_steps(steps, grads, checkpointer, ready)
    finally:
        checkpointer.clear()
        for node in steps:  # an error midway still frees the graph
            if not node.consumed:
                node.clear()
        grads._nodes = {}
    return grads


def _run_steps(steps: list, grads: Gradients, checkpointer: Checkpointer,
               ready: dict | None) -> None:
    """Run each node's backward step; after step i, tell the hooks which leaves are final."""
    for i, node in enumerate(steps):
        step = node.step
        parents = node.parents
        hooked = node.hooks
        node.clear()
        if node.id in grads:
            if hooked:
                _run_node_hooks(node, hooked, grads)
            # an intermediate marked with require_grad() keeps its gradient
            kept = grads.get(node) if node.requirement is Requirement.GRAD else None
            step.backward.backward(Ops(parents, node, step.state, node.backend), grads,
                                   checkpointer)
            grads.remove(node)  # in case the step did not consume it
            if kept is not None:
                grads.register(node, kept)
        del step, parents
        if ready is not None and i in ready:
            hooks.fire(ready[i], grads)


def _run_node_hooks(node: Node, hooked: list, grads: Gradients) -> None:
    """Replace the final gradient of an intermediate by what its hooks return (a hook that
    returns None leaves it as it is), in registration order."""
    g = grads.remove(node)
    for hook in list(hooked):
        out = hook(g)
        if out is not None:
            g = out
    grads.register(node, g)
