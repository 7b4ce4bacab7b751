"""Creating tensors: from data, constant fills, ranges and random numbers."""
from __future__ import annotations

import numpy as np

from . import dtype as dt
from .device import resolve
from .data import generator, host_array, manual_seed  # noqa: F401  (manual_seed: lazyt's)
from .dispatch import Dispatch, DispatchTensor
from .dtype import DType
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import shape_args as _shape_args
from .tensor import Tensor

def tensor(data, dtype=None, device=None) -> Tensor:
    """A tensor holding a copy of `data` (nested lists, scalars, numpy arrays or tensors).

    Python floats become float32, ints int64, bools bool; numpy arrays keep their dtype."""
    dev = resolve(device)
    if isinstance(data, DispatchTensor):
        arr = host_array(Dispatch.to_numpy(data), data.dtype if dtype is None else dtype)
    else:
        arr = host_array(data, dtype)
    return Dispatch.from_numpy(arr, dev, Tensor)


def from_numpy(array: np.ndarray, device=None) -> Tensor:
    """A tensor holding a copy of `array`, with its dtype."""
    if not isinstance(array, np.ndarray):
        raise DTypeError(f"from_numpy: expected a numpy array, got {type(array).__name__}")
    return tensor(array, device=device)


def _dtype_or(dtype, default: DType) -> DType:
    return default if dtype is None else dt.as_dtype(dtype)


def _check_shape(op: str, shape: tuple) -> tuple:
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: negative size in shape {shape}")
    return shape


def full(shape, fill_value, dtype=None, device=None) -> Tensor:
    shape = _check_shape("full", _shape_args((shape,)) if not isinstance(shape, int)
                         else (shape,))
    if dtype is None:
        kind = dt.scalar_kind(fill_value)
        dtype = {"bool": dt.bool_, "int": dt.DEFAULT_INT, "float": dt.DEFAULT_FLOAT}[kind]
    dev = resolve(device)
    d = dt.as_dtype(dtype)
    return Tensor(dev.backend.full(shape, fill_value, d), dev)


def zeros(*shape, dtype=None, device=None) -> Tensor:
    shape = _check_shape("zeros", _shape_args(shape))
    dev = resolve(device)
    return Tensor(dev.backend.zeros(shape, _dtype_or(dtype, dt.DEFAULT_FLOAT)), dev)


def ones(*shape, dtype=None, device=None) -> Tensor:
    shape = _check_shape("ones", _shape_args(shape))
    return full(shape, 1, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT), device=device)


def empty(*shape, dtype=None, device=None) -> Tensor:
    shape = _check_shape("empty", _shape_args(shape))
    dev = resolve(device)
    return Tensor(dev.backend.empty(shape, _dtype_or(dtype, dt.DEFAULT_FLOAT)), dev)


def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Values from `start` to `stop` (exclusive) by `step`; int64 unless an argument is a float."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise InvalidArgumentError("arange: step must be nonzero")
    if not all(np.isfinite(v) for v in (start, stop, step)):
        raise InvalidArgumentError(f"arange: bounds and step must be finite, got "
                                   f"({start}, {stop}, {step})")
    is_float = any(dt.scalar_kind(v) == "float" for v in (start, stop, step))
    d = _dtype_or(dtype, dt.DEFAULT_FLOAT if is_float else dt.DEFAULT_INT)
    arr = np.arange(start, stop, step, dtype=np.float64 if is_float else np.int64)
    return Dispatch.from_numpy(arr.astype(d.np), resolve(device), Tensor)


def eye(n: int, m: int | None = None, dtype=None, device=None) -> Tensor:
    if n < 0 or (m is not None and m < 0):
        raise ShapeError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    arr = np.eye(n, m, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT).np)
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


def zeros_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def ones_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def full_like(t: Tensor, fill_value, dtype=None, device=None) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device)


def empty_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return empty(t.shape, dtype=dtype or t.dtype, device=device or t.device)


# ---------------------------------------------------------------------- random numbers
def _random(op: str, shape, dtype, device, draw) -> Tensor:
    shape = _check_shape(op, _shape_args(shape))
    d = _dtype_or(dtype, dt.DEFAULT_FLOAT)
    if not d.is_float:
        raise DTypeError(f"{op}: needs a float dtype, got {d.name}")
    arr = draw(shape).astype(d.np)
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


def rand(*shape, dtype=None, device=None) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _random("rand", shape, dtype, device, lambda s: generator().random(s))


def randn(*shape, dtype=None, device=None) -> Tensor:
    """Standard normal samples."""
    return _random("randn", shape, dtype, device, lambda s: generator().standard_normal(s))


def randint(low: int, high: int | None = None, size=(), dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ShapeError(f"randint: empty range [{low}, {high})")
    shape = _check_shape("randint", _shape_args((size,)) if not isinstance(size, int) else (size,))
    d = _dtype_or(dtype, dt.DEFAULT_INT)
    arr = generator().integers(low, high, size=shape).astype(d.np)
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


def rand_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return rand(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def randn_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return randn(t.shape, dtype=dtype or t.dtype, device=device or t.device)
