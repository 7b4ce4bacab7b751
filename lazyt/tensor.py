"""`lazyt.Tensor`: the user-facing value.

The class holds what every tensor is (its shape and dtype, reads, conversions, the autodiff
hooks, Python's operators); its op methods are the function forms of `lazyt.functional`
(`x.sum(1)` is `lazyt.sum(x, 1)`), installed from `functional.METHODS`, which includes the
methods generated from op declarations.
"""
from __future__ import annotations

import contextlib
import copy
import contextvars
import weakref

import numpy as np

from . import dtype as dt
from . import functional as F
from . import ops
from . import shape as sh
from .device import Device
from .device import device as _device
from .dispatch import Dispatch, DispatchTensor
from .dtype import DType
from .errors import (CaptureError, DeviceError, DTypeError, GradError, IndexOutOfRangeError,
                     InvalidArgumentError, ShapeError)
from .functional import (cat, gather, index_add, index_select, matmul,  # noqa: F401
                         scatter_add, stack, where)  # (also importable from here, as before)
from . import capture_state as _capture
from . import inplace as _inplace
from .indexing import getitem
from .ops import BinaryOp, UnaryOp

_B = BinaryOp


class Tensor(DispatchTensor):
    """An n-dimensional array on a device. Ops may run lazily; reads (`numpy()`, `item()`,
    printing) execute what is pending. Values are immutable: an in-place op (`+=`, `add_`,
    `x[i] = v`) rebinds the tensor to a new value (`lazyt/inplace.py`)."""

    __slots__ = ("_grad", "_updates", "_exported", "__weakref__")

    def __init__(self, primitive, device):
        if type(device) is not Device:
            raise InvalidArgumentError(
                f"Tensor({primitive!r}, {device!r}): lazyt.Tensor wraps a backend value and "
                "is not called directly; create tensors with lazyt.tensor(data), "
                "lazyt.zeros(2, 3), lazyt.empty(2, 3) or lazyt.randn(2, 3)")
        self.primitive = primitive
        self.device = device
    __array_ufunc__ = None  # `ndarray + tensor` is computed by lazyt
    __hash__ = object.__hash__

    # ------------------------------------------------------------------ dispatch boundary
    def into_dispatch(self) -> DispatchTensor:
        return DispatchTensor(self.primitive, self.device)

    @classmethod
    def from_dispatch(cls, value: DispatchTensor) -> "Tensor":
        return cls(value.primitive, value.device)

    # ------------------------------------------------------------------ info
    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return sh.numel(self.shape)

    def size(self, dim: int | None = None):
        s = self.shape
        return s if dim is None else s[sh.normalize_dim("size", dim, len(s))]

    def __len__(self) -> int:
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ------------------------------------------------------------------ reads
    def numpy(self) -> np.ndarray:
        """The values as a read-only numpy array (executes pending work)."""
        arr = Dispatch.to_numpy(self)
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self):
        n = self.numel()
        if n != 1:
            raise ShapeError(f"item: only a one-element tensor converts to a Python scalar, "
                             f"got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_float:
            raise DTypeError(f"__index__: only integer tensors can be used as an index, "
                             f"got {self.dtype.name}")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise ShapeError(f"bool: the truth value of a tensor of shape {self.shape} is "
                             "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __repr__(self) -> str:
        try:
            body = np.array2string(self.numpy(), separator=", ", prefix="tensor(",
                                   **PRINT_OPTIONS)
        except CaptureError:
            raise
        except Exception as e:  # a failed lazy op must not break printing the error
            body = f"<error: {e}>"
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype.name}, device={self.device})"

    def __setitem__(self, key, value):
        raise TypeError("lazyt tensors are immutable; build a new tensor (e.g. with "
                        "lazyt.where or index_add) instead of assigning into one")

    def __getitem__(self, key):
        return getitem(self, key)

    # ------------------------------------------------------------------ conversion
    def __format__(self, spec: str) -> str:
        """`f"{t:.3f}"` formats a one-element tensor's value, as torch; no spec gives str()."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a tensor of shape "
                            f"{self.shape}; format its elements (t.item(), t.tolist())")
        return str(self)

    def __contains__(self, element) -> bool:
        """`v in t`: whether any element equals `v` (a number or a tensor), as torch."""
        if not isinstance(element, (Tensor, bool, int, float, np.number)):
            raise TypeError(f"'in' for a tensor takes a number or a tensor, got "
                            f"{type(element).__name__}")
        return bool(F.binary(_B.EQ, self, element).any())

    def to(self, *args, dtype=None, device=None, non_blocking: bool = False,
           copy: bool = False) -> "Tensor":
        """`.to(dtype)`, `.to(device)`, both, or `.to(other)` (other's dtype and device);
        returns self when nothing changes. torch's `non_blocking`/`copy` are not taken."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (DType, type, np.dtype)) or (isinstance(a, str) and _is_dtype_name(a)):
                dtype = a
            else:
                device = a
        out = self
        if device is not None:
            dev = _device(device)
            if dev is not out.device:
                out = Dispatch.to_device(out, dev)
        if dtype is not None:
            d = dt.as_dtype(dtype)
            if d is not out.dtype:
                out = Dispatch.cast(out, d)
        if copy and out is self:   # torch's copy=True: a new tensor even when nothing changes
            out = self.clone()
        return out

    def float(self):
        return self.to(dt.float32)

    def double(self):
        return self.to(dt.float64)

    def half(self):
        return self.to(dt.float16)

    def byte(self):
        return self.to(dt.uint8)

    def char(self):
        return self.to(dt.int8)

    def short(self):
        return self.to(dt.int16)

    def int(self):
        return self.to(dt.int32)

    def long(self):
        return self.to(dt.int64)

    def bool(self):
        return self.to(dt.bool_)

    def type_as(self, other: "Tensor"):
        return self.to(other.dtype)

    def contiguous(self):
        return Dispatch.contiguous(self)

    def clone(self):
        return Dispatch.contiguous(self)

    # ------------------------------------------------------------------ autodiff hooks
    def require_grad(self, requires_grad: bool = True) -> "Tensor":
        """Track this tensor as a leaf of the autodiff graph (in place; returns self);
        `require_grad(False)` stops tracking it (torch's `requires_grad_(False)`)."""
        if not requires_grad:
            _capture.saw(self)
            self.primitive = self.device.backend.detach(self.primitive)
            return self
        if not self.dtype.is_float:
            raise GradError(f"require_grad: only float tensors can require grad, "
                            f"got {self.dtype.name}")
        _capture.saw(self)
        self.primitive = self.device.backend.require_grad(self.primitive)
        _register_leaf(self)
        return self

    requires_grad_ = require_grad

    @property
    def is_tracked(self) -> bool:
        return self.device.backend.is_tracked(self.primitive)

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor (a leaf that requires grad, or a result
        computed from one); assigning True or False is `requires_grad_`."""
        return self.device.backend.is_tracked(self.primitive)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.require_grad(bool(value))

    def stride(self, dim: int | None = None):
        """The strides of this tensor's row-major layout, in elements (torch's `stride()`;
        one dim's with `dim`). lazyt's tensors are values, never views into shared storage:
        every tensor reads as contiguous, whatever its backend keeps internally."""
        st, acc = [], 1
        for n in reversed(self.shape):
            st.append(acc)
            acc *= max(n, 1)
        st = tuple(reversed(st))
        if dim is None:
            return st
        if not self.ndim:
            raise IndexOutOfRangeError(f"stride: dim {dim} given for a 0-d tensor, which has "
                                       f"no dims")
        return st[sh.normalize_dim("stride", dim, self.ndim)]

    def is_contiguous(self, memory_format=None) -> bool:
        """True: every lazyt tensor reads as row-major contiguous (see `stride`); only
        torch's default `memory_format` is known."""
        if memory_format not in (None, "contiguous_format"):
            raise InvalidArgumentError(f"is_contiguous: lazyt keeps row-major layout only, "
                                       f"got memory_format={memory_format!r}")
        return True

    def storage_offset(self) -> int:
        """0: a lazyt tensor is never a view at an offset into another's storage."""
        return 0

    @property
    def is_leaf(self) -> bool:
        """True for tensors that do not come from a tracked op (torch's `is_leaf`)."""
        return self.device.backend.leaf_id(self.primitive) is not None or \
            not self.device.backend.is_tracked(self.primitive)

    def detach(self) -> "Tensor":
        return Tensor(self.device.backend.detach(self.primitive), self.device)

    # ------------------------------------------------------------------ pickle and copy
    def __reduce_ex__(self, protocol):
        """Pickling keeps the values, dtype, device (its spec and layer switches) and whether
        the tensor requires grad, as torch's: a leaf's `.grad` travels with it; a result
        computed from tensors that require grad refuses (`GradError`), detach it first."""
        self._check_copyable("pickle")
        d = self.device
        grad = getattr(self, "_grad", None)
        return (_rebuild, (self.numpy().copy(), self.dtype.name,
                           (f"{d.base}:{d.index}", d.autodiff, d.fusion, d.checkpointing),
                           self.requires_grad,
                           None if grad is None else Tensor(grad.primitive, grad.device)
                           .detach()))

    def __deepcopy__(self, memo):
        """`copy.deepcopy(t)`: a new leaf with the same values, dtype, device and grad
        requirement (and a copy of its `.grad`); refused for non-leaf tensors that require
        grad, as torch does."""
        self._check_copyable("deepcopy")
        if type(self).__reduce__ is not Tensor.__reduce__:    # a subclass's own recipe
            rebuild, args = self.__reduce__()[:2]
            out = memo[id(self)] = rebuild(*copy.deepcopy(args, memo))
            return out
        with _no_grad():
            out = Tensor(self.device.backend.detach(self.primitive), self.device).clone()
        if self.requires_grad:
            out.require_grad()
        grad = getattr(self, "_grad", None)
        if grad is not None:
            with _no_grad():
                out.grad = Tensor(grad.primitive, grad.device).detach().clone()
        memo[id(self)] = out
        return out

    def _check_copyable(self, what: str) -> None:
        if self.requires_grad and not self.is_leaf:
            raise GradError(f"{what}: only tensors created by the user (graph leaves) can be "
                            f"copied this way; this one (shape {tuple(self.shape)}) was "
                            "computed from tensors that require grad: use .detach() first")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (read-only: consumers must not write): `np.from_dlpack(t)` and
        `torch.from_dlpack(t)` share a cpu tensor's memory; a cuda tensor's capsule is built
        by CuPy (see `lazyt.interop`). wgpu buffers cannot be shared: use .cpu() first."""
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        if self.device.base == "cuda":
            from .interop import cuda_dlpack
            return cuda_dlpack(self, stream, **kwargs)
        if self.device.base != "cpu":
            raise DeviceError(f"__dlpack__: {self.device} buffers cannot be shared through "
                              f"DLPack; use .cpu() first")
        return self.numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self.device.base == "cuda":
            return (2, self.device.index)      # kDLCUDA
        if self.device.base != "cpu":
            raise DeviceError(f"__dlpack_device__: {self.device} buffers cannot be shared "
                              f"through DLPack; use .cpu() first")
        return (1, 0)      # kDLCPU, device 0

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface of a cuda tensor (torch.as_tensor(t, device="cuda") and
        cupy.asarray(t) share its memory, read-only); other devices have none."""
        if self.device.base != "cuda":
            raise AttributeError(f"__cuda_array_interface__: a tensor on {self.device} is not "
                                 "in CUDA memory")
        from .interop import cuda_array_interface
        return cuda_array_interface(self)

    def detach_(self) -> "Tensor":
        """Stop tracking this tensor, in place (torch's `detach_`); returns it."""
        self.primitive = self.device.backend.detach(self.primitive)
        return self

    def cpu(self) -> "Tensor":
        """This tensor on the cpu device (itself when it is there; differentiable)."""
        return self if self.device.base == "cpu" else self.to("cpu")

    def cuda(self, index: int | None = None) -> "Tensor":
        """This tensor on `cuda:index` (default: the current tensor's GPU, else cuda:0)."""
        if index is None:
            index = self.device.index if self.device.base == "cuda" else 0
        target = _device(f"cuda:{int(index)}")
        return self if self.device is target else self.to(target)

    def backward(self, gradient: "Tensor | None" = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None, *, grad: "Tensor | None" = None):
        """Backpropagate from this tensor. Returns the `Gradients` of the graph's leaves
        (`grads[x]` reads one: Burn's flow) and adds each leaf's gradient into its `.grad`
        (torch's flow: reset it with `opt.zero_grad()` or `x.grad = None`). The seed is
        torch's `gradient` (or `grad=`); `inputs=` (tensors, leaves or intermediates) limits
        which tensors receive a `.grad`. The graph is freed as it is walked, so
        `retain_graph=True` and `create_graph=True` (higher-order gradients) raise
        `InvalidArgumentError`: run the forward again for a second backward."""
        if gradient is not None and grad is not None:
            raise InvalidArgumentError("backward: pass the seed as gradient= or grad=, not both")
        grad = gradient if gradient is not None else grad
        refuse_graph_options("backward", retain_graph, create_graph)
        g = None
        if grad is not None:
            grad = F.as_tensor(grad, self)
            if grad.shape != self.shape:
                raise ShapeError(f"backward: seed gradient shape {grad.shape} differs from the "
                                 f"tensor's shape {self.shape}")
            g = F.to(grad, self.dtype).primitive
        if inputs is not None:      # lazyt.autograd installs the pass that picks inputs
            BACKWARD_INPUTS((self,), None if g is None else (Tensor(g, self.device),),
                            inputs, "backward")
            return None
        grads = self.device.backend.backward(self.primitive, g)
        _accumulate(grads)
        return grads

    @property
    def data(self) -> "Tensor":
        """This tensor's values without gradient tracking (torch's `.data`): in-place ops on it
        (`p.data.mul_(0.5)`, `p.data -= lr * g`, `p.data.copy_(w)`) update this tensor, and a
        leaf that requires grad stays one. Assigning a tensor of the same shape replaces the
        values the same way (`p.data = w`)."""
        alias = DataAlias(self.device.backend.detach(self.primitive), self.device)
        alias._data_of = self
        return alias

    @data.setter
    def data(self, value) -> None:
        from .autodiff import no_grad
        with no_grad():
            _inplace.rebind(self, value, "data")

    @property
    def _version(self) -> int:
        """In-place updates of this tensor so far (torch's version counter)."""
        return getattr(self, "_updates", 0)

    @property
    def grad(self) -> "Tensor | None":
        """The gradient accumulated into this leaf by `backward()` calls (None before the
        first one, or after `x.grad = None` / `opt.zero_grad()`), as in torch.

        Burn's spelling reads one backward pass's gradient from the `Gradients` it returned:
        `grads[x]` (or `grads.get(x)`, None when x has none). The accumulated gradient is
        also callable with a `Gradients`, so `x.grad(grads)` keeps working where x has a
        gradient."""
        return getattr(self, "_grad", None)

    @grad.setter
    def grad(self, value) -> None:
        _capture.saw(self)
        if value is None:
            self._grad = None
            return
        if not isinstance(value, DispatchTensor):
            raise GradError(f"grad: expected a tensor or None, got {type(value).__name__}")
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeError(f"grad: assigned gradient of shape {tuple(value.shape)} for a "
                             f"tensor of shape {tuple(self.shape)}")
        self._grad = AccumulatedGrad.of(self, value.primitive, value.device)

    @grad.deleter
    def grad(self) -> None:
        _capture.saw(self)
        self._grad = None

    def register_post_accumulate_grad_hook(self, hook) -> "RemovableHandle":
        """Call `hook(self)` in every backward pass as soon as this leaf's gradient of the pass
        is final and added into `self.grad`, while the rest of the graph is still being
        differentiated (torch's hook of that name; `DistributedDataParallel` starts its
        gradient all-reduces this way). Only leaves that require grad have one. Returns a
        handle whose `remove()` unregisters the hook."""
        if self.device.backend.leaf_id(self.primitive) is None:
            raise GradError(f"register_post_accumulate_grad_hook: only a leaf tensor that "
                            f"requires grad has an accumulated gradient (shape {self.shape})")
        if not callable(hook):
            raise InvalidArgumentError(f"register_post_accumulate_grad_hook: expected a "
                                       f"callable, got {type(hook).__name__}")
        entry = _HOOKS.get(id(self))
        if entry is None:
            key = id(self)
            entry = _HOOKS[key] = []
            weakref.finalize(self, _HOOKS.pop, key, None)
        entry.append(hook)
        return RemovableHandle(entry, hook)

    def register_hook(self, hook) -> "RemovableHandle":
        """Call `hook(grad)` with this tensor's gradient in every backward pass that reaches
        it, once that gradient is final; a tensor it returns (same shape) replaces the
        gradient from there on, None keeps it (torch's `register_hook`). On a leaf the hook
        runs before the gradient is added into `.grad`; on an intermediate, before the op
        that made it passes the gradient on. Hooks run in registration order, under
        `no_grad()`. Returns a handle whose `remove()` unregisters the hook.

        Inside a function recorded by `lazyt.compile` the hook runs while recording: the ops
        it applies to the gradient are replayed, its other effects are not."""
        if not callable(hook):
            raise InvalidArgumentError(f"register_hook: expected a callable, got "
                                       f"{type(hook).__name__}")
        backend = self.device.backend
        if backend.leaf_id(self.primitive) is not None:
            entry = _GRAD_HOOKS.get(id(self))
            if entry is None:
                key = id(self)
                entry = _GRAD_HOOKS[key] = []
                weakref.finalize(self, _GRAD_HOOKS.pop, key, None)
            entry.append(hook)
            return RemovableHandle(entry, hook)
        if backend.node_id(self.primitive) is None:
            raise GradError(f"register_hook: this tensor (shape {self.shape}) does not "
                            f"require grad, so no gradient reaches it")
        wrapped = _HookCall(hook, self.device, self.shape, self.dtype)
        return RemovableHandle(backend.register_grad_hook(self.primitive, wrapped), wrapped)

    def retain_grad(self) -> None:
        """Keep this intermediate's gradient in `.grad` after backward (torch's
        `retain_grad`; a leaf that requires grad keeps it anyway). The gradient kept is the
        one after this tensor's hooks."""
        backend = self.device.backend
        if backend.leaf_id(self.primitive) is not None:
            return
        nid = backend.node_id(self.primitive)
        if nid is None:
            raise GradError(f"retain_grad: this tensor (shape {self.shape}) does not require "
                            f"grad, so there is no gradient to keep")
        _capture.saw(self)
        self.primitive = backend.require_grad(self.primitive)
        _RETAINED[nid] = self

    @property
    def retains_grad(self) -> bool:
        """Whether `retain_grad()` keeps this intermediate's gradient in `.grad`."""
        nid = self.device.backend.node_id(self.primitive)
        return nid is not None and _RETAINED.get(nid) is self and \
            self.device.backend.leaf_id(self.primitive) is None

    def _grad_in(self, grads) -> "Tensor | None":
        """This leaf's gradient in one backward pass's `grads` (None when it has none);
        `Gradients.get(tensor)` and `grads[tensor]` call this."""
        g = self.device.backend.grad(self.primitive, grads)
        return None if g is None else Tensor(g, self.device)

    # ------------------------------------------------------------------ operators
    def __add__(self, o):
        return F.binary(_B.ADD, self, o)

    def __radd__(self, o):
        return F.binary(_B.ADD, o, self)

    def __sub__(self, o):
        return F.binary(_B.SUB, self, o)

    def __rsub__(self, o):
        return F.binary(_B.SUB, o, self)

    def __mul__(self, o):
        return F.binary(_B.MUL, self, o)

    def __rmul__(self, o):
        return F.binary(_B.MUL, o, self)

    def __truediv__(self, o):
        return F.binary(_B.DIV, self, o)

    def __rtruediv__(self, o):
        return F.binary(_B.DIV, o, self)

    def __floordiv__(self, o):
        return F.binary(_B.FLOOR_DIV, self, o)

    def __rfloordiv__(self, o):
        return F.binary(_B.FLOOR_DIV, o, self)

    def __mod__(self, o):
        return F.binary(_B.MOD, self, o)

    def __rmod__(self, o):
        return F.binary(_B.MOD, o, self)

    def __pow__(self, o):
        return F.binary(_B.POW, self, o)

    def __rpow__(self, o):
        return F.binary(_B.POW, o, self)

    def __eq__(self, o):  # type: ignore[override]
        if not _is_operand(o):
            return NotImplemented  # `t == None` is False, as for any object
        return F.binary(_B.EQ, self, o)

    def __ne__(self, o):  # type: ignore[override]
        if not _is_operand(o):
            return NotImplemented
        return F.binary(_B.NE, self, o)

    def __lt__(self, o):
        return F.binary(_B.LT, self, o)

    def __le__(self, o):
        return F.binary(_B.LE, self, o)

    def __gt__(self, o):
        return F.binary(_B.GT, self, o)

    def __ge__(self, o):
        return F.binary(_B.GE, self, o)

    def __and__(self, o):
        return F.bitwise(_B.BITAND, self, o)

    def __rand__(self, o):
        return F.bitwise(_B.BITAND, o, self)

    def __or__(self, o):
        return F.bitwise(_B.BITOR, self, o)

    def __ror__(self, o):
        return F.bitwise(_B.BITOR, o, self)

    def __xor__(self, o):
        return F.bitwise(_B.BITXOR, self, o)

    def __rxor__(self, o):
        return F.bitwise(_B.BITXOR, o, self)

    def __lshift__(self, o):
        return F.bitwise(_B.SHL, self, o)

    def __rlshift__(self, o):
        return F.bitwise(_B.SHL, o, self)

    def __rshift__(self, o):
        return F.bitwise(_B.SHR, self, o)

    def __rrshift__(self, o):
        return F.bitwise(_B.SHR, o, self)

    def __invert__(self):
        if self.dtype.is_float:
            raise DTypeError(f"invert: ~ needs a bool or integer tensor, got {self.dtype.name}")
        return F.bitwise_not(self)

    def __neg__(self):
        return F.unary(UnaryOp.NEG, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.unary(UnaryOp.ABS, self)

    def __matmul__(self, o):
        return F.matmul(self, o)

    def __rmatmul__(self, o):
        return F.matmul(F.as_tensor(o, self), self)

    T = property(F.T, doc="All dims reversed.")
    mT = property(F.mT, doc="The last two dims swapped.")


Tensor._result_type = Tensor  # ops on subclasses (nn.Parameter) return plain tensors


class DataAlias(Tensor):
    """`t.data`: an untracked view of `t`'s value whose in-place updates go to `t`."""

    __slots__ = ("_data_of",)


class AccumulatedGrad(Tensor):
    """A leaf's accumulated gradient (`x.grad`): a tensor that, called with a `Gradients`,
    gives the leaf's gradient in it (`x.grad(grads)`, the spelling before `.grad` became
    torch's attribute)."""

    __slots__ = ("_owner",)

    @classmethod
    def of(cls, owner: Tensor, primitive, device) -> "AccumulatedGrad":
        g = cls(primitive, device)
        g._owner = weakref.ref(owner)
        return g

    def __call__(self, grads):
        owner = self._owner()
        return None if owner is None else owner._grad_in(grads)


_LEAVES = _inplace.LEAVES
_register_leaf = _inplace.register_leaf


def _accumulate(grads) -> None:
    """Add each leaf's gradient of one backward pass into its `.grad` (torch's flow), except
    those a gradient-ready hook already added during the pass."""
    from .autodiff import no_grad
    items = grads.leaf_items() if hasattr(grads, "leaf_items") else ()
    done = getattr(grads, "accumulated", ())
    with no_grad():
        for nid, g in items:
            if nid in done:
                continue
            t = _LEAVES.get(nid)
            if t is None or t.device.backend.leaf_id(t.primitive) != nid:
                t = _RETAINED.get(nid)   # an intermediate that retains its gradient
                if t is None or t.device.backend.node_id(t.primitive) != nid:
                    continue   # dropped, or rebound to another node since
            _accumulate_one(t, g)


def _accumulate_one(t: Tensor, g) -> None:
    """`t.grad += g` (the primitive `g` of t's device), or `t.grad = g` when t has none."""
    _capture.saw(t)
    old = getattr(t, "_grad", None)
    if old is not None and old.device is t.device:
        g = F.binary(_B.ADD, old, Tensor(g, t.device)).primitive
    t._grad = AccumulatedGrad.of(t, g, t.device)


#: Post-accumulate hooks by id of their leaf tensor (an entry leaves with its tensor).
_HOOKS: dict[int, list] = {}
#: `register_hook` hooks of leaves by id of their tensor (a leaf's node changes with every
#: in-place update, so they cannot live on the node as an intermediate's do).
_GRAD_HOOKS: dict[int, list] = {}
#: Intermediates whose gradient `retain_grad()` keeps, by node id.
_RETAINED: "weakref.WeakValueDictionary[int, Tensor]" = weakref.WeakValueDictionary()


class _HookCall:
    """A user's `register_hook` hook as the autodiff layer calls it: primitive gradient in,
    primitive gradient (or None) out, checked against the tensor it was registered on."""

    __slots__ = ("hook", "device", "shape", "dtype")

    def __init__(self, hook, device, shape, dtype):
        self.hook, self.device, self.shape, self.dtype = hook, device, shape, dtype

    def __call__(self, g):
        from .autodiff import no_grad
        with no_grad():
            out = self.hook(Tensor(g, self.device))
            if out is None:
                return None
            if not isinstance(out, DispatchTensor):
                raise GradError(f"register_hook: a hook must return a tensor or None, got "
                                f"{type(out).__name__}")
            if tuple(out.shape) != tuple(self.shape):
                raise ShapeError(f"register_hook: the hook returned a gradient of shape "
                                 f"{tuple(out.shape)} for a tensor of shape {self.shape}")
            if out.device is not self.device:
                raise DeviceError(f"register_hook: the hook returned a gradient on "
                                  f"{out.device}, expected {self.device}")
            if out.dtype is not self.dtype:
                out = F.to(out, self.dtype)
            return self.device.backend.detach(out.primitive)


class RemovableHandle:
    """What `register_hook` and `register_post_accumulate_grad_hook` return: `remove()`
    unregisters the hook (also at the end of a `with handle:` block)."""

    __slots__ = ("_entry", "_hook")

    def __init__(self, entry: list, hook):
        self._entry, self._hook = entry, hook

    def remove(self) -> None:
        if any(h is self._hook for h in self._entry):
            self._entry.remove(self._hook)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def refuse_graph_options(fn: str, retain_graph, create_graph) -> None:
    """`InvalidArgumentError` for torch's `retain_graph=True` / `create_graph=True`, which a
    graph freed as backward walks it cannot honour (`backward`, `lazyt.autograd`)."""
    for name, value in (("retain_graph=True", retain_graph), ("create_graph=True",
                                                              create_graph)):
        if value:
            raise InvalidArgumentError(
                f"{fn}: {name} is not supported: lazyt frees the graph as backward walks it "
                "and records no graph of the backward itself (no gradients of gradients); run "
                "the forward again to backpropagate a second time")


def _no_grad():
    from .autodiff import no_grad
    return no_grad()


#: numpy `array2string` options for `repr` (`lazyt.set_printoptions`); empty: numpy's own.
PRINT_OPTIONS: dict = {}


def _rebuild(values, dtype: str, device: tuple, requires_grad: bool, grad):
    """Unpickle a Tensor (`Tensor.__reduce_ex__`)."""
    from .device import device as make_device
    spec, autodiff, fusion, checkpointing = device
    dev = make_device(spec, autodiff=autodiff, fusion=fusion, checkpointing=checkpointing)
    t = Dispatch.from_numpy(np.asarray(values, dtype=dt._BY_NAME[dtype].np), dev, Tensor)
    if requires_grad:
        t.require_grad()
    if grad is not None:
        t.grad = grad.to(dev)
    return t


#: `backward(inputs=...)`: `lazyt.autograd.accumulate_into`, set when lazyt.autograd loads
#: (it builds on this module, so this module does not import it).
BACKWARD_INPUTS = None

_GRAD_ONLY: "contextvars.ContextVar[bool]" = contextvars.ContextVar("lazyt_grad_only",
                                                                   default=False)


@contextlib.contextmanager
def grad_only_pass():
    """A backward pass run inside adds into no `.grad` (`lazyt.autograd.grad`): tensors'
    gradient hooks still run, post-accumulate hooks do not."""
    token = _GRAD_ONLY.set(True)
    try:
        yield
    finally:
        _GRAD_ONLY.reset(token)


class _LeafHooks:
    """The autodiff layer's gradient-ready listener (`lazyt/autodiff/hooks.py`): maps a leaf
    node to its tensor, adds the pass's gradient into `.grad` early and runs the hooks."""

    @staticmethod
    def active() -> bool:
        return any(_HOOKS.values()) or any(_GRAD_HOOKS.values())

    @staticmethod
    def wants(node_id) -> bool:
        t = _LEAVES.get(node_id)
        return t is not None and bool(_HOOKS.get(id(t)) or _GRAD_HOOKS.get(id(t)))

    @staticmethod
    def ready(node_id, grads) -> None:
        t = _LEAVES.get(node_id)
        if t is None or t.device.backend.leaf_id(t.primitive) != node_id:
            return
        pre = _GRAD_HOOKS.get(id(t))
        if pre:
            g = grads.get(node_id)
            for hook in list(pre):
                out = _HookCall(hook, t.device, t.shape, t.dtype)(g)
                if out is not None:
                    g = out
            grads.replace(node_id, g)
        hooks = _HOOKS.get(id(t))
        if not hooks or _GRAD_ONLY.get():
            return
        from .autodiff import no_grad
        with no_grad():
            _accumulate_one(t, grads.get(node_id))
            grads.accumulated.add(node_id)
            for hook in list(hooks):
                hook(t)


def _install_grad_hooks() -> None:
    from .autodiff import hooks
    hooks.install(_LeafHooks())


_install_grad_hooks()


def _install_methods() -> None:
    """Give `Tensor` the methods of `lazyt.functional` (declared ops' included)."""
    for name, fn in F.METHODS.items():
        if name not in vars(Tensor):
            setattr(Tensor, name, fn)


def _install_inplace() -> None:
    """torch's in-place operators and methods (`lazyt/inplace.py`)."""
    inplace = _inplace
    for name, code in inplace.OPERATORS.items():
        setattr(Tensor, name, inplace._binary_inplace(name, code))
    for name, fn in inplace.METHODS.items():
        setattr(Tensor, name, fn)


_install_inplace()


ops.subscribe(lambda op: _install_methods())  # ops declared later bring their methods


def _is_operand(o) -> bool:
    return isinstance(o, (DispatchTensor, int, float, np.generic, np.ndarray, list, tuple))


def _is_dtype_name(s: str) -> bool:
    try:
        dt.as_dtype(s)
        return True
    except DTypeError:
        return False
