"""The Dispatch layer: routes a call to the backend stack of its inputs' device.

A `DispatchTensor` is a primitive of a device's stack plus that device. `lazyt.Tensor` is a
`DispatchTensor` with the user API on top, so Tensor methods call `Dispatch` without converting;
each `Dispatch` op returns a value of its representative input's `_result_type`
(`Tensor` for tensors and their subclasses such as `nn.Parameter`).

`Dispatch` has one entry per declared primitive with a tensor parameter (`lazyt.ops`),
generated from the declaration: it checks that every tensor argument is on one device, passes
primitives down and wraps the result. Composites (softmax, layer_norm, ...) get the same
generated entries; lazyt reaches them through `Dispatch.helper(name, ...)`, so an extension op
may take a composite's name as its `Dispatch` attribute (a kernel-hub repo may well call its
own op `layer_norm`); a primitive's name it may not. Extension ops registered with
`lazyt.extension.backend_extension` become attributes and route the same way.
"""
from __future__ import annotations

from typing import Sequence

from . import ops
from .capture_state import STATE as _CAPTURE
from .device import Device
from .errors import DeviceError, LazytError
from .ops import ParamKind


class DispatchTensor:
    """A backend primitive together with the device whose stack owns it."""

    __slots__ = ("primitive", "device")

    def __init__(self, primitive, device: Device):
        self.primitive = primitive
        self.device = device

    @property
    def shape(self) -> tuple:
        return self.device.backend.shape_of(self.primitive)

    @property
    def dtype(self):
        return self.device.backend.dtype_of(self.primitive)

    @property
    def ndim(self) -> int:
        return len(self.device.backend.shape_of(self.primitive))

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


def _no_tensor(op: str) -> LazytError:
    return LazytError(f"{op}: expected at least one tensor argument")


class Dispatch:
    """Entries of the declared ops (generated, see the module docstring) and of extension ops,
    plus transfers. Inputs are already validated (shapes, dtypes) by the caller: the Tensor
    API does it."""

    @staticmethod
    def helper(name: str, x, *args, **kwargs):
        """The composite `name` (`softmax`, `layer_norm`, `attention`, ...) on its arguments,
        or any other method `name` of the backend protocol (`relu`, `float_exp`, ...) on the
        tensor `x` (tensors among `args` on x's device are passed as primitives)."""
        entry = _COMPOSITES.get(name)
        if entry is not None:
            return entry(x, *args, **kwargs)
        session = _CAPTURE.session
        if session is not None:
            session.saw_all((x, *args))
        if any(isinstance(a, DispatchTensor) for a in args):
            common_device(name, [x, *(a for a in args if isinstance(a, DispatchTensor))])
            args = tuple(a.primitive if isinstance(a, DispatchTensor) else a for a in args)
        out = x._result_type(getattr(x.device.backend, name)(x.primitive, *args, **kwargs),
                             x.device)
        if session is not None:
            session.made(out)
        return out

    @staticmethod
    def to_numpy(x):
        return x.device.backend.to_numpy(x.primitive)

    @staticmethod
    def host_value(x):
        """`x`'s host array when its value is already there (see Backend.host_value)."""
        return x.device.backend.host_value(x.primitive)

    @staticmethod
    def to_device(x, dev: Device):
        """Move `x` to `dev` (differentiable where the source layer supports it)."""
        if x.device is dev:
            return x
        return x._result_type(x.device.backend.transfer(x.primitive, dev.backend), dev)

    @staticmethod
    def from_numpy(array, dev: Device, cls=DispatchTensor):
        return cls(dev.backend.from_numpy(array), dev)


def _entry_source(op: ops.OpDef) -> str:
    """The generated entry: find the representative tensor and device, check the others,
    unwrap, call the stack, wrap. A family's op code (`op`) names the op in errors."""
    L = [f"def {op.name}({op.signature()}):", "    _rep = None"]
    seen = [f"*{p.name}" if p.kind is ParamKind.TENSORS else p.name for p in op.params
            if p.kind in (ParamKind.TENSOR, ParamKind.INDEX, ParamKind.OPERAND,
                          ParamKind.OPTIONAL, ParamKind.TENSORS)]
    if seen:   # lazyt.compile notes which tensors the function reads (one test otherwise)
        L += ["    if _CAP.session is not None:",
              f"        _CAP.session.saw_all(({', '.join(seen)},))"]
    for p in op.params:
        n = p.name
        if p.kind in (ParamKind.TENSOR, ParamKind.INDEX):
            L += ["    if _rep is None:", f"        _rep = {n}; _dev = {n}.device",
                  f"    elif {n}.device is not _dev:", f"        _common(_NAME, (_rep, {n}))",
                  f"    {n} = {n}.primitive"]
        elif p.kind in (ParamKind.OPERAND, ParamKind.OPTIONAL):
            L += [f"    if isinstance({n}, _DT):", "        if _rep is None:",
                  f"            _rep = {n}; _dev = {n}.device",
                  f"        elif {n}.device is not _dev:",
                  f"            _common(_NAME, (_rep, {n}))", f"        {n} = {n}.primitive"]
        elif p.kind is ParamKind.TENSORS:
            L += [f"    {n} = list({n})", "    if _rep is None:",
                  f"        _rep = {n}[0]; _dev = _rep.device",
                  f"    _common(_NAME, [_rep, *{n}])", f"    {n} = [t.primitive for t in {n}]"]
    L += ["    if _rep is None:", "        raise _no_tensor(_NAME)",
          f"    _out = _rep._result_type(_dev.backend.{op.name}({op.call_args()}), _dev)",
          "    if _CAP.session is not None:", "        _CAP.session.made(_out)",
          "    return _out"]
    source = "\n".join(L) + "\n"
    if "op" in op._by_name:  # errors name the family's op code: "maximum", not "binary"
        source = source.replace("_common(_NAME", "_common(getattr(op, 'value', _NAME)")
        source = source.replace("_no_tensor(_NAME)", "_no_tensor(getattr(op, 'value', _NAME))")
    return source


def _install(op: ops.OpDef) -> None:
    if not op.tensor_params:
        return  # creation ops (full) go to a device's stack directly
    ns = {"_DT": DispatchTensor, "_common": common_device, "_no_tensor": _no_tensor,
          "_CAP": _CAPTURE,
          "_NAME": op.name, **op.defaults()}
    fn = ops.generate(op.name, _entry_source(op), ns, f"Dispatch.{op.name}", op.doc)
    fn.__lazyt_op__ = op
    if op.is_composite:
        _COMPOSITES[op.name] = fn
    setattr(Dispatch, op.name, staticmethod(fn))


_COMPOSITES: dict = {}


ops.subscribe(_install)
