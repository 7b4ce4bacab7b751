"""`Parameter`: a tensor a `Module` owns and an optimizer updates.

A Parameter is a `lazyt.Tensor` that is a leaf of the autodiff graph. It is mutable in one way
only: `assign` rebinds its value (detached, re-marked as a leaf), so optimizers and
`load_state_dict` update a model in place while the Parameter object stays the same.
Ops on a Parameter return plain Tensors.
"""
from __future__ import annotations

import numpy as np

from .. import capture_state as _capture
from ..creation import tensor as _tensor
from ..errors import DTypeError, GradError, ShapeError
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
