"""`Parameter`: a tensor a `Module` owns and an optimizer updates.

A Parameter is a `lazyt.Tensor` that is a leaf of the autodiff graph. It is mutable in one way
only: `assign` rebinds its value (detached, re-marked as a leaf), so optimizers and
`load_state_dict` update a model in place while the Parameter object stays the same.
Ops on a Parameter return plain Tensors.

`UninitializedParameter` / `UninitializedBuffer` (torch's) hold a dtype and a device but no
shape yet: the lazy modules (`lazyt/nn/lazy.py`) `materialize` them in place on their first
call, so an optimizer given them before that trains the same objects.
"""
from __future__ import annotations

import numpy as np

from .. import capture_state as _capture
from .. import dtype as dt
from ..creation import empty as _empty
from ..creation import tensor as _tensor
from ..errors import DTypeError, GradError, InvalidArgumentError, ShapeError
from ..dispatch import DispatchTensor
from ..tensor import Tensor, _register_leaf


class Parameter(Tensor):
    """A trainable tensor: `Parameter(lazyt.zeros(3))`, `Parameter(array, requires_grad=False)`."""

    __slots__ = ("_trainable",)

    def __init__(self, data, requires_grad: bool = True):
        t = data if isinstance(data, Tensor) else _tensor(np.asarray(data))
        super().__init__(t.device.backend.detach(t.primitive), t.device)
        self._trainable = bool(requires_grad) and self.dtype.is_float
        if requires_grad and not self.dtype.is_float:
            raise DTypeError(f"Parameter: only float tensors can require grad, got "
                             f"{self.dtype.name} of shape {self.shape}; pass requires_grad=False")
        self._track()

    def _track(self) -> None:
        """Mark the current value as a gradient leaf (when this device has an autodiff layer)."""
        if not self._trainable:
            return
        try:
            self.primitive = self.device.backend.require_grad(self.primitive)
        except GradError:
            return  # a device without an autodiff layer: the parameter is used for inference only
        _register_leaf(self)

    @property
    def trainable(self) -> bool:
        """True when the parameter takes part in gradients (as torch's `requires_grad`)."""
        return self._trainable

    def require_grad(self, requires_grad: bool = True) -> "Parameter":
        """Turn gradient tracking of this parameter on or off (in place; returns self)."""
        if requires_grad and not self.dtype.is_float:
            raise GradError(f"require_grad: only float tensors can require grad, got "
                            f"{self.dtype.name}")
        self._trainable = bool(requires_grad)
        if requires_grad:
            self._track()
        else:
            self.primitive = self.device.backend.detach(self.primitive)
        return self

    requires_grad_ = require_grad

    def assign(self, value: Tensor, *, cast: bool = False) -> "Parameter":
        """Rebind this parameter to `value` (same shape; detached; moved to this device).

        The dtype must match unless `cast=True`. Returns self."""
        if not isinstance(value, Tensor):
            value = _tensor(np.asarray(value), device=self.device)
        if value.shape != self.shape:
            raise ShapeError(f"Parameter.assign: value of shape {value.shape} does not fit a "
                             f"parameter of shape {self.shape}")
        if value.dtype is not self.dtype:
            if not cast:
                raise DTypeError(f"Parameter.assign: value of dtype {value.dtype.name} for a "
                                 f"parameter of dtype {self.dtype.name} (pass cast=True)")
        value = value.detach().to(self.dtype)
        self._rebind(value)
        return self

    def _rebind(self, value: Tensor) -> None:
        """Take `value` (any dtype, any device) as the new data; re-mark as a leaf."""
        value = value.detach()
        _capture.saw(self)
        self.primitive = value.primitive
        self.device = value.device
        self._track()

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"

    def __reduce__(self):
        return (Parameter, (self.numpy().copy(), self._trainable))


_SLOT = DispatchTensor.__dict__["primitive"]  # the stored value, under the guard below


class _Uninitialized:
    """What an uninitialized parameter and buffer share: a dtype and a device over an empty
    placeholder, no shape and no values. Any op on one, and reading its shape or values,
    raises `ShapeError` (its `primitive` is guarded, as torch's `__torch_function__` guards
    all ops); `to`, `float`, `double`, `half`, `cpu`, `cuda` and `detach` give another
    uninitialized tensor (so `Module.to` works before the first call); `materialize(shape)`
    gives it data, in place."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def _unknown(self, what: str) -> ShapeError:
        return ShapeError(f"{type(self).__name__}: cannot {what} an uninitialized parameter or "
                          f"buffer (dtype {self.dtype.name}, device {self.device}): its shape is "
                          "not known yet; call the lazy module on an input first (a dry run), "
                          "load a state dict into it, or call .materialize(shape)")

    @property
    def primitive(self):
        raise self._unknown("use")

    @primitive.setter
    def primitive(self, value) -> None:
        _SLOT.__set__(self, value)

    @property
    def dtype(self):
        return self.device.backend.dtype_of(_SLOT.__get__(self))

    @property
    def shape(self):
        raise self._unknown("read the shape of")

    @property
    def ndim(self):
        raise self._unknown("read the number of dims of")

    @property
    def data(self):
        raise self._unknown("read the data of")

    @data.setter
    def data(self, value) -> None:
        raise self._unknown("assign data to")

    @property
    def is_leaf(self) -> bool:
        return True

    def numpy(self):
        raise self._unknown("read the values of")

    def __array__(self, dtype=None, copy=None):
        raise self._unknown("read the values of")

    def _new(self, requires_grad: bool, device, dtype) -> "_Uninitialized":
        raise NotImplementedError

    def to(self, *args, dtype=None, device=None, non_blocking: bool = False,
           copy: bool = False):
        """An uninitialized tensor of the dtype and device asked for (self when unchanged)."""
        moved = Tensor(_SLOT.__get__(self), self.device).to(*args, dtype=dtype, device=device)
        if moved.dtype is self.dtype and moved.device is self.device and not copy:
            return self
        return self._new(self.requires_grad and moved.dtype.is_float, moved.device, moved.dtype)

    def detach(self):
        """An uninitialized tensor of this dtype and device that requires no grad."""
        return self._new(False, self.device, self.dtype)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give this tensor `shape` (empty values, this dtype and device unless given), in
        place: it becomes a `Parameter` (a plain `Tensor` for a buffer), the same object."""
        value = _empty(tuple(shape), dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device)
        fill = self._fill
        self.__class__ = self.cls_to_become
        fill(value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        d = self.device
        return (_rebuild_uninitialized, (type(self), self.requires_grad, self.dtype.name,
                                         (f"{d.base}:{d.index}", d.autodiff, d.fusion,
                                          d.checkpointing)))

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __deepcopy__(self, memo):
        out = memo[id(self)] = self._new(self.requires_grad, self.device, self.dtype)
        return out


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape is not known yet (torch's): `UninitializedParameter(
    requires_grad=True, device=None, dtype=None)`; `materialize(shape)` makes it a Parameter."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        t = _empty((0,), dtype=dtype, device=device)  # torch's empty(0): a dtype and a device
        Tensor.__init__(self, t.primitive, t.device)
        if requires_grad and not self.dtype.is_float:
            raise DTypeError(f"UninitializedParameter: only float tensors can require grad, "
                             f"got {self.dtype.name}; pass requires_grad=False")
        self._trainable = bool(requires_grad)

    def _new(self, requires_grad: bool, device, dtype) -> "UninitializedParameter":
        return UninitializedParameter(requires_grad, device, dtype)

    def _fill(self, value: Tensor) -> None:
        Parameter._rebind(self, value)

    def _rebind(self, value: Tensor) -> None:
        """Take another uninitialized tensor's dtype and device (`Module.to`), or a value,
        which materializes this parameter with its shape."""
        if not is_lazy(value):
            self.materialize(value.shape)
            Parameter._rebind(self, value)
            return
        _capture.saw(self)
        self.primitive, self.device = _SLOT.__get__(value), value.device

    def require_grad(self, requires_grad: bool = True) -> "UninitializedParameter":
        """Whether the parameter will take part in gradients once materialized."""
        if requires_grad and not self.dtype.is_float:
            raise GradError(f"require_grad: only float tensors can require grad, got "
                            f"{self.dtype.name}")
        self._trainable = bool(requires_grad)
        return self

    requires_grad_ = require_grad

    @property
    def requires_grad(self) -> bool:
        return self._trainable

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.require_grad(bool(value))


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (torch's): `UninitializedBuffer(
    requires_grad=False, device=None, dtype=None)`; `materialize(shape)` makes it a Tensor.
    A non-persistent one is registered with `register_buffer(name, buf, persistent=False)`."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True):
        if requires_grad:
            raise GradError("UninitializedBuffer: a buffer cannot require grad; use an "
                            "UninitializedParameter")
        if not persistent:
            raise InvalidArgumentError("UninitializedBuffer: persistent=False is said by "
                                       "module.register_buffer(name, buffer, persistent=False)")
        t = _empty((0,), dtype=dtype, device=device)
        Tensor.__init__(self, t.primitive, t.device)

    def _new(self, requires_grad: bool, device, dtype) -> "UninitializedBuffer":
        return UninitializedBuffer(False, device, dtype)

    def _fill(self, value: Tensor) -> None:
        _capture.saw(self)
        self.primitive, self.device = value.primitive, value.device

    @property
    def requires_grad(self) -> bool:
        return False


def is_lazy(t) -> bool:
    """True for an `UninitializedParameter` or `UninitializedBuffer` (torch's `is_lazy`)."""
    return isinstance(t, _Uninitialized)


def _rebuild_uninitialized(cls, requires_grad: bool, dtype: str, device: tuple):
    """Unpickle an uninitialized parameter or buffer (`_Uninitialized.__reduce_ex__`)."""
    from ..device import device as make_device
    spec, autodiff, fusion, checkpointing = device
    dev = make_device(spec, autodiff=autodiff, fusion=fusion, checkpointing=checkpointing)
    return cls(requires_grad, dev, dt.as_dtype(dtype))
