"""`lazyt.save` and `lazyt.load`: torch's way of writing a state dict (or any picklable object
holding tensors) to a file and reading it back.

The file is a pickle stream after an 8-byte magic line. Tensors keep their values, dtype,
device and grad requirement (`Tensor.__reduce_ex__`). `load` is safe by default, as torch's
since 2.6: with `weights_only=True` only tensors, numbers, strings, bytes and the built-in
containers (and `OrderedDict`) may be unpickled, so a file cannot run code; anything else
raises `UnsafeLoadError`, naming the global the file asked for. `weights_only=False` loads any
pickle, for files you trust. `map_location` moves every loaded tensor: a device, a device
string, a `{"from": "to"}` mapping of device strings, or a callable `(tensor, location) ->
tensor` (location is the saved device's string).
"""
from __future__ import annotations

import collections
import os
import pickle
from typing import Any, Callable

from .device import device as _device
from .errors import InvalidArgumentError, UnsafeLoadError
from .creation import tensor as _tensor
from .tensor import Tensor

__all__ = ["save", "load"]

_MAGIC = b"LAZYT\x00\x01\n"

#: (module, name) pairs a weights-only load may unpickle.
_SAFE_GLOBALS = {
    ("lazyt.tensor", "_rebuild"),
    ("collections", "OrderedDict"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.dtypes", "Float32DType"), ("numpy.dtypes", "Float64DType"),
    ("numpy.dtypes", "Float16DType"), ("numpy.dtypes", "Int64DType"),
    ("numpy.dtypes", "Int32DType"), ("numpy.dtypes", "Int16DType"),
    ("numpy.dtypes", "Int8DType"), ("numpy.dtypes", "UInt8DType"),
    ("numpy.dtypes", "BoolDType"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
    ("builtins", "complex"), ("builtins", "range"),
}


def save(obj: Any, f, pickle_protocol: int = pickle.DEFAULT_PROTOCOL) -> None:
    """Write `obj` (a state dict, a tensor, nested containers of them, ...) to `f`, a path or
    a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write(obj, fh, pickle_protocol)
        return
    if not hasattr(f, "write"):
        raise InvalidArgumentError(f"save: f must be a path or a binary file object, got "
                                   f"{type(f).__name__}")
    _write(obj, f, pickle_protocol)


def _write(obj, fh, protocol: int) -> None:
    fh.write(_MAGIC)
    pickle.dump(obj, fh, protocol=protocol)


def load(f, map_location=None, *, weights_only: bool = True, mmap=None) -> Any:
    """Read what `save` wrote (see the module's docstring for `map_location` and
    `weights_only`)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _read(fh, map_location, weights_only, str(f))
    if not hasattr(f, "read"):
        raise InvalidArgumentError(f"load: f must be a path or a binary file object, got "
                                   f"{type(f).__name__}")
    return _read(f, map_location, weights_only, "the file object")


def _read(fh, map_location, weights_only: bool, name: str):
    head = fh.read(len(_MAGIC))
    if head != _MAGIC:
        hint = " (a torch .pt file? load it with torch and convert the arrays)" \
            if head[:2] == b"PK" else ""
        raise InvalidArgumentError(f"load: {name} was not written by lazyt.save{hint}")
    mover = _mover(map_location)
    return _Unpickler(fh, weights_only, mover).load()


def _mover(map_location) -> Callable[[Tensor, str], Tensor] | None:
    if map_location is None:
        return None
    if callable(map_location) and not isinstance(map_location, str):
        if hasattr(map_location, "type") and hasattr(map_location, "backend"):   # a Device
            return lambda t, loc: t.to(map_location)
        return map_location
    if isinstance(map_location, dict):
        table = {str(k): v for k, v in map_location.items()}
        return lambda t, loc: t.to(table[loc]) if loc in table else t
    target = _device(map_location)
    return lambda t, loc: t.to(target)


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, weights_only: bool, mover):
        super().__init__(fh)
        self._weights_only = weights_only
        self._mover = mover

    def find_class(self, module: str, name: str):
        if self._weights_only and (module, name) not in _SAFE_GLOBALS:
            raise UnsafeLoadError(
                f"load: weights_only=True refuses the global {module}.{name} (only tensors, "
                "numbers, strings and containers load safely); pass weights_only=False if you "
                "trust the file")
        if (module, name) == ("lazyt.tensor", "_rebuild") and self._mover is not None:
            return self._rebuild_moved
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        return super().find_class(module, name)

    def _rebuild_moved(self, values, dtype, device, requires_grad, grad):
        base, _, index = device[0].partition(":")
        location = "cpu" if base == "cpu" else f"{base}:{index or 0}"
        t = self._mover(_tensor(values, dtype=dtype, device="cpu"), location)
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"load: map_location returned {type(t).__name__}, not a "
                                       "lazyt.Tensor")
        if requires_grad:
            t = t.detach().require_grad()
        if grad is not None:
            t.grad = grad.to(t.device)
        return t

