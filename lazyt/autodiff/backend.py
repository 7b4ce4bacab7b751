"""`Autodiff(inner, checkpointing=...)`: the layer that records backward steps (Burn's
`Autodiff<B, C>`).

Untracked values are the inner backend's primitives themselves, so an op with no tracked input
costs one type check before `inner.op(...)`. Tracked values are `AutodiffTensor(primitive,
node)`. The layer's ops are generated from the op declarations (`lazyt.ops`): each declared
op gets a method with the op's own parameters whose untracked path is the inner call and whose
tracked path is the one generic rule of `declared.py` (the op's `Grad`). The backward pass
computes with the inner backend's primitives, so with Fusion below it is recorded and fused
like the forward.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from .. import ops
from ..backends import selectors
from ..backends.base import Backend, Primitive
from ..backends.selectors import register_layer
from ..dtype import DType
from ..errors import GradError
from ..ops import ParamKind
from ..shape import numel
from . import declared
from .checkpoint import CheckpointStrategy
from .graph import run_backward
from .grads import Gradients
from .node import Node, Requirement, next_node_id
from .ops import _GRAD_ENABLED, AutodiffTensor, untracked_view
from .extension import run as _run_extension
from .transfer import transfer as _transfer

AT = AutodiffTensor


class Autodiff(Backend):
    """Wraps `inner` (any backend with the primitive op set) with reverse-mode autodiff.

    `checkpointing` is "balanced" (recompute memory-bound values in backward) or "none" (save
    every value backward needs). `ckpt` is the strategy object op authors pass to `prepare`.
    """

    name = "autodiff"
    is_layer = True

    def __init__(self, inner: Backend, checkpointing: str = "balanced"):
        self.inner = inner
        # untracked values pass through this layer unchanged, so the inner layer may record
        # them directly (its fast entries check that the inputs are untracked)
        self.fast = inner.fast
        self.checkpointing = checkpointing
        self.ckpt = CheckpointStrategy(checkpointing, inner)
        self._extension_contexts: dict = {}  # extension class -> (B, ckpt) of its impls

    def __repr__(self) -> str:
        return f"Autodiff({self.inner!r}, checkpointing={self.checkpointing!r})"

    def view(self, x: Primitive) -> AutodiffTensor:
        """`x` as an AutodiffTensor: tracked values as they are, untracked primitives with a
        `Requirement.NONE` node (for extension ops, which take every input with a `.node`)."""
        return x if type(x) is AT else untracked_view(self.inner, x)

    # ---------------------------------------------------------------- creation/transfer
    def from_numpy(self, array: np.ndarray) -> Primitive:
        return self.inner.from_numpy(array)

    def to_numpy(self, x: Primitive) -> np.ndarray:
        return self.inner.to_numpy(x.primitive if type(x) is AT else x)

    def host_value(self, x: Primitive) -> np.ndarray | None:
        return self.inner.host_value(x.primitive if type(x) is AT else x)

    def transfer(self, x: Primitive, target: Backend) -> Primitive:
        """Differentiable when `target` is another Autodiff stack: the result is tracked there
        and its gradient moves back to this stack in backward."""
        target_is_ad = isinstance(target, Autodiff)
        target_inner = target.inner if target_is_ad else target
        if type(x) is AT:
            return _transfer(self, x, target_inner, target.ckpt if target_is_ad else None)
        return self.inner.transfer(x, target_inner)

    def shape_of(self, x: Primitive) -> tuple:
        return self.inner.shape_of(x.primitive if type(x) is AT else x)

    def dtype_of(self, x: Primitive) -> DType:
        return self.inner.dtype_of(x.primitive if type(x) is AT else x)

    def empty(self, shape: tuple, dtype: DType) -> Primitive:
        return self.inner.empty(shape, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> Primitive:
        return self.inner.zeros(shape, dtype)

    # ---------------------------------------------------------------- layer hooks
    def require_grad(self, x: Primitive) -> Primitive:
        """Mark `x` as a leaf whose gradient backward keeps (`Requirement.GRAD`); on a value
        that is already tracked, keep its gradient too (its graph stays connected)."""
        if type(x) is AT:
            if x.node.requirement is not Requirement.NONE:
                x.node.requirement = Requirement.GRAD
                return x
            x = x.primitive
        d = self.inner.dtype_of(x)
        if not d.is_float:
            raise GradError(f"require_grad: only floating-point tensors can require grad, got "
                            f"a {d.name} tensor of shape {self.inner.shape_of(x)}")
        return AT(x, Node(next_node_id(), (), Requirement.GRAD, self.inner))

    def leaf_id(self, x: Primitive):
        """The node id of `x` when it is a leaf that requires grad (`Requirement.GRAD`, no
        parents), else None."""
        if type(x) is AT and x.node.requirement is Requirement.GRAD and not x.node.parents \
                and not x.node.consumed:   # (a consumed intermediate has no parents either)
            return x.node.id
        return None

    def node_id(self, x: Primitive):
        """The node id of `x` when it is tracked (a leaf or an op's result), else None."""
        if type(x) is AT and x.node.requirement is not Requirement.NONE:
            return x.node.id
        return None

    def register_grad_hook(self, x: Primitive, hook) -> list:
        """Run `hook(grad) -> grad | None` on the gradient of the intermediate `x` in the
        backward pass that reaches it, before the op that made `x` uses it. Returns the list
        holding the hook (remove it from there to unregister). Leaves are the Tensor layer's:
        their node changes with every in-place update."""
        if type(x) is not AT or x.node.requirement is Requirement.NONE:
            raise GradError("register_hook: this tensor does not require grad")
        node = x.node
        if node.consumed:
            raise GradError("register_hook: a backward pass already ran through this tensor "
                            "(its graph is freed); register the hook before backward()")
        if node.hooks is None:
            node.hooks = []
        node.hooks.append(hook)
        return node.hooks

    def mark_overwritten(self, x: Primitive, by: Primitive | None = None) -> None:
        """`x`'s tensor is being updated in place to the value `by`: a backward step that
        needs `x`'s value raises `GradError` from now on (torch's version-counter check),
        except the steps of the in-place op itself (the nodes between `x` and `by`: `relu_`
        may keep what it read, as torch's in-place ops do)."""
        if type(x) is not AT:
            return
        node = x.node
        exempt = set()
        if type(by) is AT:
            stack = [by.node]
            while stack:
                n = stack.pop()
                if n is None or n.id <= node.id or n.id in exempt:
                    continue
                exempt.add(n.id)
                stack.extend(n.parents)
        node.mark_overwritten(exempt)
        saved = node.saved() if node.saved is not None else None
        if saved is not None:
            saved.mark_overwritten(exempt)

    def is_tracked(self, x: Primitive) -> bool:
        return type(x) is AT and x.node.requirement is not Requirement.NONE

    def detach(self, x: Primitive) -> Primitive:
        return x.primitive if type(x) is AT else x

    def backward(self, x: Primitive, grad: Primitive | None = None) -> Gradients:
        """Backpropagate from `x`; `grad` is the seed (required unless `x` has one element)."""
        if type(x) is not AT or x.node.requirement is Requirement.NONE:
            raise GradError("backward: this tensor is not tracked: no tensor it was computed "
                            "from requires grad (call .require_grad() on the inputs first, "
                            "outside lazyt.no_grad())")
        shape = self.inner.shape_of(x.primitive)
        dtype = self.inner.dtype_of(x.primitive)
        if grad is None:
            if numel(shape) != 1:
                raise GradError(f"backward: a seed gradient is needed for a non-scalar tensor "
                                f"(shape {shape}); call backward(grad=...) with a tensor of "
                                "that shape, or reduce to a scalar first (e.g. .sum())")
            seed = self.inner.full(shape, 1, dtype)
        else:
            seed = grad.primitive if type(grad) is AT else grad
            gshape = self.inner.shape_of(seed)
            if gshape != shape:
                raise GradError(f"backward: seed gradient shape {gshape} differs from the "
                                f"tensor's shape {shape}")
            if self.inner.dtype_of(seed) != dtype:
                seed = self.inner.cast(seed, dtype)
        return run_backward(x.node, seed)

    def grad(self, x: Primitive, grads: Gradients) -> Primitive | None:
        if type(x) is not AT:
            return None
        return grads.get(x.node.id)

    def sync(self) -> None:
        self.inner.sync()

    def run_extension(self, op, args: list, is_tensor: list, declared):
        return _run_extension(self, op, args, is_tensor, declared)


def _method_source(op: ops.OpDef) -> str:
    """The generated method: untracked arguments go straight to the inner backend."""
    checks = []
    unwrap = []
    for p in op.params:
        n = p.name
        if p.kind is ParamKind.INDEX:  # index tensors are never tracked; accept a view anyway
            unwrap.append(f"    if type({n}) is _AT:\n        {n} = {n}.primitive")
        elif p.kind is ParamKind.TENSORS:
            checks.append(f"any(type(_t) is _AT for _t in {n})")
        elif p.kind.is_tensor:
            checks.append(f"type({n}) is _AT")
    args = op.call_args()
    rule = "_composite" if op.is_composite else "_tracked"
    lines = [f"def {op.name}(self, {op.signature()}):", *unwrap]
    if checks:
        lines += [f"    if {' or '.join(checks)}:",
                  f"        return {rule}(self, _OP, ({args},))"]
    lines.append(f"    return self.inner.{op.name}({args})")
    return "\n".join(lines) + "\n"


def _install(op: ops.OpDef) -> None:
    ns = {"_AT": AT, "_OP": op, "_tracked": declared.tracked,
          "_composite": declared.composite, **op.defaults()}
    setattr(Autodiff, op.name, ops.generate(op.name, _method_source(op), ns,
                                            f"Autodiff.{op.name}", op.doc))


ops.subscribe(_install)
register_layer(selectors.Autodiff, Autodiff)


@contextmanager
def no_grad() -> Iterator[None]:
    """`with lazyt.no_grad():` (or `@lazyt.no_grad()`): ops inside record no backward steps
    and return untracked values. Per thread/task (a context variable)."""
    token = _GRAD_ENABLED.set(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


@contextmanager
def enable_grad() -> Iterator[None]:
    """`with lazyt.enable_grad():` records gradients again inside a `no_grad` block."""
    token = _GRAD_ENABLED.set(True)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


class set_grad_enabled:
    """torch's `set_grad_enabled(mode)`: called alone it switches gradient recording on or
    off for this thread/task; as `with lazyt.set_grad_enabled(mode):` it restores the earlier
    mode on exit."""

    def __init__(self, mode: bool):
        self._token = _GRAD_ENABLED.set(bool(mode))

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _GRAD_ENABLED.reset(self._token)


@contextmanager
def inference_mode(mode: bool = True) -> Iterator[None]:
    """torch's `inference_mode`: here `no_grad` when `mode` (lazyt has no separate
    inference tensors)."""
    token = _GRAD_ENABLED.set(not mode and _GRAD_ENABLED.get())
    inference = _INFERENCE.set(bool(mode))
    try:
        yield
    finally:
        _INFERENCE.reset(inference)
        _GRAD_ENABLED.reset(token)


_INFERENCE: contextvars.ContextVar = contextvars.ContextVar("lazyt_inference_mode",
                                                              default=False)


def is_inference_mode_enabled() -> bool:
    """True inside `lazyt.inference_mode()`."""
    return _INFERENCE.get()


def is_grad_enabled() -> bool:
    """False inside `lazyt.no_grad()`."""
    return _GRAD_ENABLED.get()
