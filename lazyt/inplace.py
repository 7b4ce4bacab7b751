"""torch's in-place habits on lazyt tensors: `+= -= *= /=` (and `//= %= **=`), `add_ sub_ mul_
div_ copy_ zero_ fill_ clamp_`, and `x[idx] = v`.

lazyt's values are immutable, so an in-place op computes the new value with the ordinary ops
(which the lazy layers record and fuse as usual) and rebinds the tensor to it: the Python
object, and every name bound to it, sees the update; its `_version` counts the updates. As in
torch:
- the result keeps the tensor's shape and dtype (a broadcast that would grow it raises
  `ShapeError`; a float result into an integer tensor raises `DTypeError`);
- a leaf that requires grad can only be updated under `lazyt.no_grad()` (the manual SGD step
  `w -= lr * w.grad`), and it stays a leaf that requires grad;
- a value a later backward needs, updated in place after it was used, makes that backward
  raise `GradError` (the Autodiff layer marks the old value's node as overwritten).
Unlike torch, tensors do not share storage: a view taken before the update (`v = x[0]`) keeps
the values it had.
"""
from __future__ import annotations

import builtins
import weakref

import numpy as np

from . import dtype as dt
from . import functional as F
from . import shape as sh
from . import capture_state as _capture
from .dispatch import Dispatch, DispatchTensor
from .errors import DTypeError, GradError, InvalidArgumentError, ShapeError
from .ops import BinaryOp


def _grad_enabled() -> bool:
    from .autodiff import is_grad_enabled
    return is_grad_enabled()


def rebind(t, new, op: str, reshape: bool = False):
    """Make `t` hold `new` (same shape, unless `reshape` (the in-place view ops: `squeeze_`,
    `t_`, `resize_`, ...); cast to `t`'s dtype where torch allows): the core of every in-place
    op. Returns `t`."""
    _capture.saw(t)
    backend = t.device.backend
    leaf = backend.leaf_id(t.primitive) is not None
    if leaf and _grad_enabled():
        raise GradError(f"{op}: a leaf tensor that requires grad (shape {t.shape}) cannot be "
                        "modified in place while gradients are recorded; do it under "
                        "lazyt.no_grad() (as an optimizer step does), or work on a copy "
                        "(x = x + ...)")
    if not isinstance(new, DispatchTensor):
        new = F.as_tensor(new, t)
    if tuple(new.shape) != tuple(t.shape) and not reshape:
        raise ShapeError(f"{op}: the result has shape {tuple(new.shape)}, but an in-place op "
                         f"keeps the tensor's shape {tuple(t.shape)}")
    if new.dtype is not t.dtype:
        if new.dtype.is_float and not t.dtype.is_float:
            raise DTypeError(f"{op}: the result is {new.dtype.name}, which cannot be stored "
                             f"in place in a {t.dtype.name} tensor (torch refuses it too); "
                             f"use x = x {op_symbol(op)} ... for a new tensor")
        new = F.to(new, t.dtype)
    prim = new.primitive
    if prim is t.primitive:       # the op left the value as it was (dropout with p=0)
        return t
    backend.mark_overwritten(t.primitive, prim)
    if leaf:                      # under no_grad: the updated value is the same leaf again
        prim = backend.require_grad(backend.detach(prim))
    t.primitive = prim
    t._updates = getattr(t, "_updates", 0) + 1
    if leaf:
        register_leaf(t)
    owner = getattr(t, "_data_of", None)
    if owner is not None:                                        # `p.data` writes through
        from .autodiff import no_grad
        with no_grad():
            rebind(owner, t, op, reshape)
    return t


def stored(fn: str, input, out, inplace):  # noqa: A002 - torch's name
    """`out`, or with torch's `inplace=True` the `input` tensor itself updated to `out` (an
    activation's or dropout's `inplace=` flag; a leaf that requires grad refuses it while
    gradients are recorded, as torch does)."""
    if not inplace:
        return out
    return rebind(input, out, fn + "_")


#: Leaves that require grad, by autodiff node id: `backward()` adds their gradients into
#: their `.grad`. Weak: a dropped tensor leaves the registry.
LEAVES: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()


def register_leaf(t) -> None:
    """Note `t` as the holder of its leaf node (when it is one), for `.grad` accumulation."""
    nid = t.device.backend.leaf_id(t.primitive)
    if nid is not None:
        LEAVES[nid] = t


def _full(like, shape, value, dtype):
    dev = like.device
    return like._result_type(dev.backend.full(tuple(shape), value, dtype), dev)


def _arange(like, n: int):
    return Dispatch.from_numpy(np.arange(n, dtype=np.int64), like.device, like._result_type)


def op_symbol(op: str) -> str:
    return {"__iadd__": "+", "__isub__": "-", "__imul__": "*", "__itruediv__": "/",
            "__ifloordiv__": "//", "__imod__": "%", "__ipow__": "**", "__iand__": "&",
            "__ior__": "|", "__ixor__": "^", "__ilshift__": "<<",
            "__irshift__": ">>"}.get(op, "op")


# ---------------------------------------------------------------------- operators
_BITWISE = {BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR, BinaryOp.SHL, BinaryOp.SHR}


def _binary_inplace(name: str, code: BinaryOp):
    run = F.bitwise if code in _BITWISE else F.binary

    def method(self, other):
        return rebind(self, run(code, self, other), name)
    method.__name__ = name
    method.__doc__ = f"`x {op_symbol(name)}= other` in place (see `lazyt.inplace`)."
    return method


OPERATORS = {
    "__iadd__": BinaryOp.ADD, "__isub__": BinaryOp.SUB, "__imul__": BinaryOp.MUL,
    "__itruediv__": BinaryOp.DIV, "__ifloordiv__": BinaryOp.FLOOR_DIV,
    "__imod__": BinaryOp.MOD, "__ipow__": BinaryOp.POW,
    "__iand__": BinaryOp.BITAND, "__ior__": BinaryOp.BITOR, "__ixor__": BinaryOp.BITXOR,
    "__ilshift__": BinaryOp.SHL, "__irshift__": BinaryOp.SHR,
}


# ---------------------------------------------------------------------- methods
def add_(self, other, *, alpha=1):
    """`self += alpha * other` in place."""
    other = F.scaled("add_", other, alpha, self)
    return rebind(self, F.binary(BinaryOp.ADD, self, other), "add_")


def sub_(self, other, *, alpha=1):
    """`self -= alpha * other` in place."""
    other = F.scaled("sub_", other, alpha, self)
    return rebind(self, F.binary(BinaryOp.SUB, self, other), "sub_")


def mul_(self, other):
    return rebind(self, F.binary(BinaryOp.MUL, self, other), "mul_")


def div_(self, other, *, rounding_mode=None):
    """`self /= other` in place; `rounding_mode` as `div`'s ("trunc" or "floor")."""
    if rounding_mode is None:
        return rebind(self, F.binary(BinaryOp.DIV, self, other), "div_")
    return rebind(self, self.div(other, rounding_mode=rounding_mode), "div_")


def copy_(self, src):
    """Copy `src`'s values into this tensor (broadcast to its shape, cast to its dtype)."""
    src = F.as_tensor(src, self)
    if src.device != self.device:
        src = src.to(self.device)
    try:
        value = F.expand(src, *self.shape) if tuple(src.shape) != tuple(self.shape) else src
    except ShapeError:
        raise ShapeError(f"copy_: source of shape {tuple(src.shape)} does not broadcast to "
                         f"{tuple(self.shape)}") from None
    if value.dtype is not self.dtype:
        value = F.to(value, self.dtype)
    return rebind(self, value, "copy_")


def zero_(self):
    return fill_(self, 0)


def fill_(self, value):
    """Set every element to `value` (a number or a one-element tensor)."""
    if isinstance(value, DispatchTensor):
        if int(np.prod(value.shape)) != 1:
            raise ShapeError(f"fill_: expected a number or a one-element tensor, got shape "
                             f"{tuple(value.shape)}")
        return copy_(self, F.reshape(value, *([1] * len(self.shape))))
    return rebind(self, _full(self, self.shape, value, self.dtype), "fill_")


def clamp_(self, min=None, max=None):  # noqa: A002 - torch's names
    return rebind(self, F.clamp(self, min, max), "clamp_")


# ---------------------------------------------------------------------- x[key] = value
def setitem(self, key, value) -> None:
    """`x[key] = value`: the positions `x[key]` reads (every form `getitem` takes) get
    `value`, broadcast to their shape and cast to x's dtype as torch casts (a float stored in
    an integer tensor truncates). A position an index names twice gets the last write, as
    torch on CPU. A boolean mask of x's shape with a value that broadcasts to x selects with
    `where`. Gradients flow to the written values and to the positions of x that keep theirs."""
    shape = tuple(self.shape)
    parts = key if isinstance(key, tuple) else (key,)
    for k in parts:
        F.refuse_byte_index("setitem", k)
    mask = _full_mask(self, key)
    if mask is not None:
        v = F.as_tensor(value, self)
        try:
            fits = sh.broadcast("setitem", tuple(v.shape), shape) == shape
        except ShapeError:
            fits = False   # `x[mask] = values` of the mask's count: the general path
        if fits:
            return rebind(self, F.where(mask, F.to(v, self.dtype), self), "setitem")
    n = int(np.prod(shape)) if shape else 1
    positions = F.reshape(_arange(self, n), *shape) if shape else F.reshape(_arange(self, 1))
    pos = positions[key]
    v = F.to(F.as_tensor(value, self), self.dtype)
    try:
        v = F.expand(v, *pos.shape) if tuple(v.shape) != tuple(pos.shape) else v
    except ShapeError:
        raise ShapeError(f"setitem: value of shape {tuple(v.shape)} does not broadcast to the "
                         f"indexed shape {tuple(pos.shape)}") from None
    m = int(np.prod(pos.shape)) if pos.shape else 1
    flat_pos, flat_v = F.reshape(pos, m), F.reshape(v, m)
    flat = F.reshape(self, n)
    if builtins.any(_is_array_index(k) for k in parts):   # positions may repeat
        new = F.METHODS["scatter"](flat, 0, flat_pos, flat_v)
    else:           # ints, slices, None, ...: each position once, one pass
        work = dt.int32 if self.dtype is dt.bool_ else self.dtype
        placed = F.scatter_add(_full(self, (n,), 0, work), 0, flat_pos, F.to(flat_v, work))
        hit = F.scatter_add(_full(self, (n,), 0, dt.int32), 0, flat_pos,
                            _full(self, (m,), 1, dt.int32))
        new = F.where(F.binary(BinaryOp.GT, hit, 0), F.to(placed, self.dtype), flat)
    rebind(self, F.reshape(new, *shape), "setitem")


def _is_array_index(k) -> bool:
    return isinstance(k, (DispatchTensor, list, np.ndarray, tuple))


def _full_mask(self, key):
    """`key` as a bool tensor when it is a boolean mask of self's whole shape, else None."""
    if isinstance(key, np.ndarray) and key.dtype == np.bool_:
        key = Dispatch.from_numpy(key, self.device, self._result_type)
    if isinstance(key, DispatchTensor) and key.dtype is dt.bool_ and \
            tuple(key.shape) == tuple(self.shape):
        return key
    return None


METHODS = {"add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "copy_": copy_,
           "zero_": zero_, "fill_": fill_, "clamp_": clamp_, "__setitem__": setitem}

__all__ = ["rebind", "setitem", "register_leaf", "LEAVES", "METHODS", "OPERATORS"]
