"""The Dispatch layer: routes a call to the backend stack of its inputs' device.

A `DispatchTensor` is a primitive of a device's stack plus that device. `lazyt.Tensor` is a
`DispatchTensor` with the user API on top, so Tensor methods call `Dispatch` without converting;
each `Dispatch` op returns a value of its representative input's `_result_type`
(`Tensor` for tensors and their subclasses such as `nn.Parameter`).
Extension ops registered with `lazyt.extension.backend_extension` are added as attributes of
`Dispatch` and route the same way.
"""
from __future__ import annotations

from typing import Sequence

from .device import Device
from .errors import DeviceError


class DispatchTensor:
    """A backend primitive together with the device whose stack owns it."""

    __slots__ = ("primitive", "device")

    def __init__(self, primitive, device: Device):
        self.primitive = primitive
        self.device = device

    def __repr__(self):
        return f"DispatchTensor(shape={tuple(self.device.backend.shape_of(self.primitive))}, " \
               f"device={self.device})"


DispatchTensor._result_type = DispatchTensor


def common_device(op: str, tensors: Sequence[DispatchTensor]) -> Device:
    """The device all `tensors` share; `DeviceError` naming `op` otherwise."""
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device is not dev and t.device != dev:
            raise DeviceError(f"{op}: tensors are on different devices: "
                              + ", ".join(repr(x.device) for x in tensors)
                              + "; move them with .to(device) first")
    return dev


def _wrap(like, prim, dev):
    return like._result_type(prim, dev)


class Dispatch:
    """Built-in ops at the dispatch level; extension ops are attached by `backend_extension`.

    Inputs are already validated (shapes, dtypes) by the caller: the Tensor API does it.
    """

    @staticmethod
    def unary(op, x):
        return _wrap(x, x.device.backend.unary(op, x.primitive), x.device)

    @staticmethod
    def binary(op, lhs, rhs):
        if isinstance(lhs, DispatchTensor):
            dev = lhs.device
            if isinstance(rhs, DispatchTensor):
                if rhs.device is not dev:
                    common_device(op.value, (lhs, rhs))
                return lhs._result_type(dev.backend.binary(op, lhs.primitive, rhs.primitive), dev)
            return lhs._result_type(dev.backend.binary(op, lhs.primitive, rhs), dev)
        dev = rhs.device
        return rhs._result_type(dev.backend.binary(op, lhs, rhs.primitive), dev)

    @staticmethod
    def where(cond, lhs, rhs):
        ts = [t for t in (cond, lhs, rhs) if isinstance(t, DispatchTensor)]
        dev = common_device("where", ts)
        prims = [t.primitive if isinstance(t, DispatchTensor) else t for t in (cond, lhs, rhs)]
        return _wrap(cond, dev.backend.where(*prims), dev)

    @staticmethod
    def cast(x, dtype):
        return _wrap(x, x.device.backend.cast(x.primitive, dtype), x.device)

    @staticmethod
    def reduce(op, x, dims, keepdim):
        return _wrap(x, x.device.backend.reduce(op, x.primitive, dims, keepdim), x.device)

    @staticmethod
    def matmul(lhs, rhs):
        dev = common_device("matmul", (lhs, rhs))
        return _wrap(lhs, dev.backend.matmul(lhs.primitive, rhs.primitive), dev)

    @staticmethod
    def reshape(x, shape):
        return _wrap(x, x.device.backend.reshape(x.primitive, shape), x.device)

    @staticmethod
    def permute(x, axes):
        return _wrap(x, x.device.backend.permute(x.primitive, axes), x.device)

    @staticmethod
    def expand(x, shape):
        return _wrap(x, x.device.backend.expand(x.primitive, shape), x.device)

    @staticmethod
    def slice(x, slices):
        return _wrap(x, x.device.backend.slice(x.primitive, slices), x.device)

    @staticmethod
    def cat(xs, dim):
        dev = common_device("cat", xs)
        return _wrap(xs[0], dev.backend.cat([t.primitive for t in xs], dim), dev)

    @staticmethod
    def contiguous(x):
        return _wrap(x, x.device.backend.contiguous(x.primitive), x.device)

    @staticmethod
    def gather(x, dim, index):
        dev = common_device("gather", (x, index))
        return _wrap(x, dev.backend.gather(x.primitive, dim, index.primitive), dev)

    @staticmethod
    def scatter_add(x, dim, index, src):
        dev = common_device("scatter_add", (x, index, src))
        return _wrap(x, dev.backend.scatter_add(x.primitive, dim, index.primitive,
                                                src.primitive), dev)

    @staticmethod
    def index_select(x, dim, index):
        dev = common_device("index_select", (x, index))
        return _wrap(x, dev.backend.index_select(x.primitive, dim, index.primitive), dev)

    @staticmethod
    def index_add(x, dim, index, src):
        dev = common_device("index_add", (x, index, src))
        return _wrap(x, dev.backend.index_add(x.primitive, dim, index.primitive,
                                              src.primitive), dev)

    @staticmethod
    def helper(name: str, x, *args):
        """A named helper of the backend protocol (`softmax`, `gelu`, `layer_norm`, ...) on
        tensor `x`; tensors among `args` (on x's device) are passed as primitives."""
        if any(isinstance(a, DispatchTensor) for a in args):
            common_device(name, [x, *(a for a in args if isinstance(a, DispatchTensor))])
            args = tuple(a.primitive if isinstance(a, DispatchTensor) else a for a in args)
        return _wrap(x, getattr(x.device.backend, name)(x.primitive, *args), x.device)

    @staticmethod
    def to_numpy(x):
        return x.device.backend.to_numpy(x.primitive)

    @staticmethod
    def to_device(x, dev: Device):
        """Move `x` to `dev` (differentiable where the source layer supports it)."""
        if x.device is dev:
            return x
        return _wrap(x, x.device.backend.transfer(x.primitive, dev.backend), dev)

    @staticmethod
    def from_numpy(array, dev: Device, cls=DispatchTensor):
        return cls(dev.backend.from_numpy(array), dev)
