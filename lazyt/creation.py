"""Creating tensors: from data, constant fills, ranges and random numbers."""
from __future__ import annotations

import functools

import numpy as np

from . import dtype as dt
from .device import resolve
from .data import generator as _rng
from .data import host_array, manual_seed  # noqa: F401  (manual_seed: lazyt's)
from .dispatch import Dispatch, DispatchTensor
from .dtype import DType
from .errors import DeviceError, DTypeError, InvalidArgumentError, ShapeError
from .promotion import fit_int
from .functional import shape_args as _shape_args
from .tensor import Tensor


def _creates(fn):
    """Give a creation function torch's `requires_grad=` keyword: the new tensor is made a
    leaf that requires grad (float dtypes only: `GradError` otherwise)."""
    @functools.wraps(fn)
    def create(*args, requires_grad: bool = False, **kwargs) -> Tensor:
        t = fn(*args, **kwargs)
        return t.require_grad() if requires_grad else t
    return create


@_creates
def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor holding a copy of `data` (nested lists, scalars, numpy arrays or tensors).

    Python floats become float32, ints int64, bools bool; numpy arrays and scalars keep their
    dtype (also inside a list: `[np.float64(2.5), 1.0]` is float64, as torch)."""
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


def from_dlpack(ext, device=None) -> Tensor:
    """A tensor of the values of `ext`, any object with `__dlpack__` (a numpy array, a torch or
    CuPy tensor, another lazyt tensor). Host memory is shared, not copied, on the cpu device
    (DLPack's contract: the producer must not write to it while the tensor is used; lazyt
    itself never writes to it) and copied to another device. CUDA memory (anything with
    `__cuda_array_interface__`) is shared with a cuda device (`device`, default "cuda")."""
    if hasattr(ext, "__cuda_array_interface__"):      # CUDA memory: shared with a cuda device
        from .interop import from_cuda_array
        prim, dev = from_cuda_array(ext, device)
        return Tensor(prim, dev)
    if not hasattr(ext, "__dlpack__"):
        raise DTypeError(f"from_dlpack: expected an object with __dlpack__ (numpy, torch, "
                         f"CuPy, lazyt), got {type(ext).__name__}")
    try:
        arr = np.from_dlpack(ext)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise DeviceError(f"from_dlpack: cannot import {type(ext).__name__} into host memory "
                          f"({e}); a tensor in device memory must be moved to the host "
                          f"first (.cpu())") from None
    dev = resolve(device)
    dt.from_numpy(arr.dtype)                    # DTypeError for dtypes lazyt lacks
    if dev.base != "cpu":
        return tensor(arr, device=dev)
    view = arr.view()
    view.flags.writeable = False
    return Dispatch.from_numpy(view, dev, Tensor)


def _dtype_or(dtype, default: DType) -> DType:
    return default if dtype is None else dt.as_dtype(dtype)


def _number(op: str, name: str, v):
    """A 0-d tensor argument as the Python number it holds (torch takes one wherever it takes
    a number); anything else unchanged. Creation reads its arguments eagerly anyway."""
    if isinstance(v, DispatchTensor):
        if v.ndim != 0:
            raise DTypeError(f"{op}: {name} must be a number or a 0-d tensor, got a tensor of "
                             f"shape {tuple(v.shape)}")
        return v.item()
    return v


#: More elements than any device's memory holds: refused before anything is allocated.
MAX_NUMEL = 2 ** 48


def _check_shape(op: str, shape: tuple) -> tuple:
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: negative size in shape {shape}")
    n = 1
    for s in shape:
        n *= s
    if n >= MAX_NUMEL:
        raise ShapeError(f"{op}: shape {shape} has {n} elements, more than any device's "
                         f"memory holds")
    return shape


@_creates
def full(shape, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape = _check_shape("full", _shape_args((shape,)) if not isinstance(shape, int)
                         else (shape,))
    fill_value = _number("full", "fill_value", fill_value)
    if dtype is None:
        kind = dt.scalar_kind(fill_value)
        dtype = {"bool": dt.bool_, "int": dt.DEFAULT_INT, "float": dt.DEFAULT_FLOAT}[kind]
    dev = resolve(device)
    d = dt.as_dtype(dtype)
    if d.is_int and isinstance(fill_value, (int, np.integer)) and \
            not isinstance(fill_value, (bool, np.bool_)):
        fill_value = fit_int("full", fill_value, d)   # torch: 300 into uint8 raises
    return Tensor(dev.backend.full(shape, fill_value, d), dev)


@_creates
def zeros(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape = _check_shape("zeros", _shape_args(shape))
    dev = resolve(device)
    return Tensor(dev.backend.zeros(shape, _dtype_or(dtype, dt.DEFAULT_FLOAT)), dev)


@_creates
def ones(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape = _check_shape("ones", _shape_args(shape))
    return full(shape, 1, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT), device=device)


@_creates
def empty(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape = _check_shape("empty", _shape_args(shape))
    dev = resolve(device)
    return Tensor(dev.backend.empty(shape, _dtype_or(dtype, dt.DEFAULT_FLOAT)), dev)


@_creates
def arange(start, stop=None, step=1, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from `start` to `stop` (exclusive) by `step`; int64 unless an argument is a float.
    Each argument is a number or a 0-d tensor (read as the number it holds, as torch)."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number("arange", name, v) for name, v in
                         (("start", start), ("end", stop), ("step", step)))
    if step == 0:
        raise InvalidArgumentError("arange: step must be nonzero")
    if not all(np.isfinite(v) for v in (start, stop, step)):
        raise InvalidArgumentError(f"arange: bounds and step must be finite, got "
                                   f"({start}, {stop}, {step})")
    is_float = any(dt.scalar_kind(v) == "float" for v in (start, stop, step))
    d = _dtype_or(dtype, dt.DEFAULT_FLOAT if is_float else dt.DEFAULT_INT)
    arr = np.arange(start, stop, step, dtype=np.float64 if is_float else np.int64)
    return Dispatch.from_numpy(arr.astype(d.np), resolve(device), Tensor)


@_creates
def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    n, m = _number("eye", "n", n), _number("eye", "m", m)
    if n < 0 or (m is not None and m < 0):
        raise ShapeError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    arr = np.eye(n, m, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT).np)
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


@_creates
def zeros_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device)


@_creates
def ones_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device)


@_creates
def full_like(t: Tensor, fill_value, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device)


@_creates
def empty_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return empty(t.shape, dtype=dtype or t.dtype, device=device or t.device)


# ---------------------------------------------------------------------- random numbers
def _random(op: str, shape, dtype, device, draw) -> Tensor:
    shape = _check_shape(op, _shape_args(shape))
    d = _dtype_or(dtype, dt.DEFAULT_FLOAT)
    if not d.is_float:
        raise DTypeError(f"{op}: needs a float dtype, got {d.name}")
    try:
        arr = draw(shape).astype(d.np)
    except MemoryError:
        raise DeviceError(f"{op}: out of host memory drawing {d.name} samples of shape "
                          f"{shape}") from None
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


@_creates
def rand(*shape, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) (from `generator`, a `lazyt.Generator`, or lazyt's)."""
    rng = _rng(generator, "rand")
    return _random("rand", shape, dtype, device, lambda s: rng.random(s))


@_creates
def randn(*shape, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    rng = _rng(generator, "randn")
    return _random("randn", shape, dtype, device, lambda s: rng.standard_normal(s))


@_creates
def randint(low: int, high: int | None = None, size=(), *, generator=None, dtype=None,
            device=None, requires_grad: bool = False) -> Tensor:
    if isinstance(high, (tuple, list)) and size == ():       # torch's randint(high, size)
        low, high, size = 0, low, high
    low, high = _number("randint", "low", low), _number("randint", "high", high)
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ShapeError(f"randint: empty range [{low}, {high})")
    shape = _check_shape("randint", _shape_args((size,)) if not isinstance(size, int) else (size,))
    d = _dtype_or(dtype, dt.DEFAULT_INT)
    arr = _rng(generator, "randint").integers(low, high, size=shape).astype(d.np)
    return Dispatch.from_numpy(arr, resolve(device), Tensor)


@_creates
def rand_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False, *,
              generator=None) -> Tensor:
    return rand(t.shape, generator=generator, dtype=dtype or t.dtype,
                device=device or t.device)


@_creates
def randn_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False, *,
               generator=None) -> Tensor:
    return randn(t.shape, generator=generator, dtype=dtype or t.dtype,
                 device=device or t.device)
