"""CubeTensor: the primitive of the Cube-family backends, a strided view of a device buffer."""
from __future__ import annotations

import functools
from typing import Any

from ...dtype import DType
from ...errors import DeviceError


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a dense tensor of `shape`."""
    return _strides(shape if type(shape) is tuple else tuple(shape))


@functools.lru_cache(maxsize=4096)  # a model's ops see a few dozen shapes, again and again
def _strides(shape: tuple) -> tuple[int, ...]:
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


class CubeTensor:
    """A tensor on a Cube runtime: `handle` is the runtime's buffer, owned through `client`;
    `shape`, `strides` and `offset` (in elements) say where the values are in it.

    Treat it as immutable (ops make new ones). A slotted class, not a frozen dataclass: one is
    made per op output, and the dataclass's frozen init cost about 3 µs of host time each."""

    __slots__ = ("client", "device", "shape", "strides", "handle", "dtype", "offset",
                 "__weakref__")

    def __init__(self, client: Any, device: Any, shape: tuple, strides: tuple, handle: Any,
                 dtype: DType, offset: int = 0):
        self.client = client
        self.device = device
        self.shape = tuple(map(int, shape))
        self.strides = tuple(map(int, strides))
        self.handle = handle
        self.dtype = dtype
        self.offset = int(offset)

    def __repr__(self) -> str:
        return (f"CubeTensor(device={self.device!r}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype.name}, offset={self.offset})")

    @classmethod
    def new_contiguous(cls, client: Any, device: Any, shape: tuple[int, ...], handle: Any,
                       dtype: DType) -> CubeTensor:
        """A dense row-major tensor filling `handle` from its start."""
        t = cls.__new__(cls)
        t.client = client
        t.device = device
        t.shape = shape = tuple(map(int, shape))
        t.strides = contiguous_strides(shape)
        t.handle = handle
        t.dtype = dtype
        t.offset = 0
        return t

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for size in self.shape:
            n *= size
        return n

    def is_contiguous(self) -> bool:
        """True when a kernel may index the values as a dense row-major array from the start of
        the buffer: no offset, and row-major strides (a size-1 dim's stride does not matter)."""
        if self.offset:
            return False
        expected = contiguous_strides(self.shape)
        if self.strides == expected:
            return True
        if self.num_elements == 0:
            return True
        return all(size == 1 or stride == want
                   for size, stride, want in zip(self.shape, self.strides, expected))

    def assert_is_on_same_device(self, other: CubeTensor) -> None:
        """Raise `DeviceError` when `other` lives on another device."""
        if self.device != other.device:
            raise DeviceError(f"tensors on different devices: {self.device} (shape {self.shape}, "
                              f"{self.dtype.name}) and {other.device} (shape {other.shape}, "
                              f"{other.dtype.name}); move one with .to(device)")

    def __repr__(self) -> str:
        offset = f", offset={self.offset}" if self.offset else ""
        return (f"CubeTensor(shape={self.shape}, strides={self.strides}{offset}, "
                f"dtype={self.dtype.name}, device={self.device})")
