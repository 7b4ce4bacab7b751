"""`Autodiff(inner, checkpointing=...)`: the layer that records backward steps (Burn's
`Autodiff<B, C>`).

Untracked values are the inner backend's primitives themselves, so an op with no tracked input
costs one type check before `inner.op(...)`. Tracked values are `AutodiffTensor(primitive,
node)`; their ops go through the op-author API (`Backward.prepare ...`) in the modules named
after each op family (elementwise, reduce, matmul, movement, indexing), each op's backward next
to its forward. The backward pass computes with the inner backend's primitives, so with Fusion
below it is recorded and fused like the forward.
"""
from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np

from ..backends.base import Backend, Primitive, Scalar
from ..dtype import DType
from ..errors import GradError
from ..ops import BinaryOp, ReduceOp, UnaryOp
from ..shape import numel
from . import elementwise, indexing, matmul as _matmul, movement, reduce as _reduce
from .checkpoint import CheckpointStrategy
from .graph import run_backward
from .grads import Gradients
from .node import Node, Requirement, next_node_id
from .ops import _GRAD_ENABLED, AutodiffTensor, untracked_view

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
        self.checkpointing = checkpointing
        self.ckpt = CheckpointStrategy(checkpointing, inner)

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

    def transfer(self, x: Primitive, target: Backend) -> Primitive:
        """Differentiable when `target` is another Autodiff stack: the result is tracked there
        and its gradient moves back to this stack in backward."""
        target_is_ad = isinstance(target, Autodiff)
        target_inner = target.inner if target_is_ad else target
        if type(x) is AT:
            return movement.transfer(self, x, target_inner, target.ckpt if target_is_ad else None)
        return self.inner.transfer(x, target_inner)

    def shape_of(self, x: Primitive) -> tuple:
        return self.inner.shape_of(x.primitive if type(x) is AT else x)

    def dtype_of(self, x: Primitive) -> DType:
        return self.inner.dtype_of(x.primitive if type(x) is AT else x)

    def empty(self, shape: tuple, dtype: DType) -> Primitive:
        return self.inner.empty(shape, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> Primitive:
        return self.inner.zeros(shape, dtype)

    def full(self, shape: tuple, value: Scalar, dtype: DType) -> Primitive:
        return self.inner.full(shape, value, dtype)

    # ---------------------------------------------------------------- elementwise
    def unary(self, op: UnaryOp, x: Primitive) -> Primitive:
        if type(x) is not AT:
            return self.inner.unary(op, x)
        return elementwise.unary(self, op, x)

    def binary(self, op: BinaryOp, lhs, rhs) -> Primitive:
        if type(lhs) is not AT and type(rhs) is not AT:
            return self.inner.binary(op, lhs, rhs)
        return elementwise.binary(self, op, lhs, rhs)

    def where(self, cond, lhs, rhs) -> Primitive:
        if type(lhs) is not AT and type(rhs) is not AT and type(cond) is not AT:
            return self.inner.where(cond, lhs, rhs)
        return elementwise.where(self, cond, lhs, rhs)

    def cast(self, x: Primitive, dtype: DType) -> Primitive:
        if type(x) is not AT:
            return self.inner.cast(x, dtype)
        return elementwise.cast(self, x, dtype)

    # ---------------------------------------------------------------- reductions, matmul
    def reduce(self, op: ReduceOp, x: Primitive, dims: tuple, keepdim: bool) -> Primitive:
        if type(x) is not AT:
            return self.inner.reduce(op, x, dims, keepdim)
        return _reduce.reduce(self, op, x, dims, keepdim)

    def matmul(self, lhs: Primitive, rhs: Primitive) -> Primitive:
        if type(lhs) is not AT and type(rhs) is not AT:
            return self.inner.matmul(lhs, rhs)
        return _matmul.matmul(self, lhs, rhs)

    # ---------------------------------------------------------------- movement
    def reshape(self, x: Primitive, shape: tuple) -> Primitive:
        if type(x) is not AT:
            return self.inner.reshape(x, shape)
        return movement.reshape(self, x, shape)

    def permute(self, x: Primitive, axes: tuple) -> Primitive:
        if type(x) is not AT:
            return self.inner.permute(x, axes)
        return movement.permute(self, x, axes)

    def expand(self, x: Primitive, shape: tuple) -> Primitive:
        if type(x) is not AT:
            return self.inner.expand(x, shape)
        return movement.expand(self, x, shape)

    def slice(self, x: Primitive, slices: tuple) -> Primitive:
        if type(x) is not AT:
            return self.inner.slice(x, slices)
        return movement.slice(self, x, slices)

    def cat(self, xs: Sequence[Primitive], dim: int) -> Primitive:
        for x in xs:
            if type(x) is AT:
                return movement.cat(self, xs, dim)
        return self.inner.cat(xs, dim)

    def contiguous(self, x: Primitive) -> Primitive:
        if type(x) is not AT:
            return self.inner.contiguous(x)
        return movement.contiguous(self, x)

    # ---------------------------------------------------------------- indexing
    def gather(self, x: Primitive, dim: int, index: Primitive) -> Primitive:
        if type(x) is not AT:
            return self.inner.gather(x, dim, _plain(index))
        return indexing.gather(self, x, dim, _plain(index))

    def scatter_add(self, x: Primitive, dim: int, index: Primitive, src: Primitive) -> Primitive:
        if type(x) is not AT and type(src) is not AT:
            return self.inner.scatter_add(x, dim, _plain(index), src)
        return indexing.scatter_add(self, x, dim, _plain(index), src)

    def index_select(self, x: Primitive, dim: int, index: Primitive) -> Primitive:
        if type(x) is not AT:
            return self.inner.index_select(x, dim, _plain(index))
        return indexing.index_select(self, x, dim, _plain(index))

    def index_add(self, x: Primitive, dim: int, index: Primitive, src: Primitive) -> Primitive:
        if type(x) is not AT and type(src) is not AT:
            return self.inner.index_add(x, dim, _plain(index), src)
        return indexing.index_add(self, x, dim, _plain(index), src)

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


def _plain(x):
    """Index tensors are never tracked; accept a view anyway."""
    return x.primitive if type(x) is AT else x


def _plain_all(v):
    t = type(v)
    if t is list or t is tuple:
        return t(_plain(b) for b in v)
    return _plain(v)


_CORE = frozenset(vars(Autodiff)) | {"index_select", "index_add"}


def _delegating_helper(name: str):
    """A named helper of `Backend` that runs on `inner` when no argument is tracked (one call
    to a possibly faster inner implementation) and through this layer's primitives otherwise
    (so tracked inputs get gradients from the primitives' backward steps)."""
    base = getattr(Backend, name)

    def helper(self, *args, **kwargs):
        for a in (*args, *kwargs.values()):
            t = type(a)
            if t is AT or ((t is list or t is tuple) and any(type(b) is AT for b in a)):
                if _GRAD_ENABLED.get():
                    return base(self, *args, **kwargs)
                # under no_grad nothing is recorded: tracked inputs (parameters) are read
                # as plain values, and the inner backend's own helper runs
                args = tuple(_plain_all(v) for v in args)
                kwargs = {k: _plain_all(v) for k, v in kwargs.items()}
                break
        return getattr(self.inner, name)(*args, **kwargs)

    return _with_fast_path(name, base, helper)


def _with_fast_path(name: str, base, helper):
    """`helper` behind a function with `base`'s own parameters whose first step, when no
    argument is tracked or a sequence, is the inner call itself: a helper call on an untracked
    tensor then costs this layer one plain Python call (helpers run per op, often on small
    tensors, where *args handling alone was a tenth of the op)."""
    params = list(inspect.signature(base).parameters.values())[1:]
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD,) for p in params):
        fast = helper
    else:
        ns = {"_SLOW": (AT, list, tuple), "_helper": helper}
        sig = []
        for p in params:
            if p.default is p.empty:
                sig.append(p.name)
            else:
                ns[f"_d_{p.name}"] = p.default
                sig.append(f"{p.name}=_d_{p.name}")
        names = [p.name for p in params]
        check = " or ".join(f"type({n}) in _SLOW" for n in names) or "False"
        src = (f"def {name}(self, {', '.join(sig)}):\n"
               f"    if {check}:\n"
               f"        return _helper(self, {', '.join(names)})\n"
               f"    return self.inner.{name}({', '.join(names)})\n")
        exec(compile(src, f"<Autodiff.{name}>", "exec"), ns)
        fast = ns[name]
    fast.__name__ = name
    fast.__qualname__ = f"Autodiff.{name}"
    fast.__doc__ = base.__doc__
    return fast


for _name, _fn in list(vars(Backend).items()):
    if callable(_fn) and not _name.startswith("_") and _name not in _CORE:
        setattr(Autodiff, _name, _delegating_helper(_name))
del _name, _fn


@contextmanager
def no_grad() -> Iterator[None]:
    """`with lazyt.no_grad():` (or `@lazyt.no_grad()`): ops inside record no backward steps
    and return untracked values. Per thread/task (a context variable)."""
    token = _GRAD_ENABLED.set(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


def is_grad_enabled() -> bool:
    """False inside `lazyt.no_grad()`."""
    return _GRAD_ENABLED.get()
