"""CubeBackend: the family base of the kernel backends (wgpu, CUDA).

Its primitives are `CubeTensor`s on one runtime client. What does not depend on the kernel
language lives here: dtype support and storage, host transfer, and the movement ops that are
metadata only (reshape of a contiguous tensor, permute, expand, slice as strided views). A
runtime backend adds the kernels. Extension authors select the whole family with `Cube`.
"""
from __future__ import annotations

import numpy as np

from ... import dtype as dt
from ...dtype import DType
from ...errors import DTypeError, ShapeError
from ..base import Backend
from . import replay as _replay
from .source import elem_storage
from .tensor import CubeTensor, contiguous_strides

#: Kernels index elements with 32-bit integers.
MAX_ELEMENTS = 2 ** 32 - 1

_I32 = np.iinfo(np.int32)


def into_contiguous(tensor: CubeTensor) -> CubeTensor:
    """`tensor` itself when kernels can index it densely from 0, else a contiguous copy."""
    if tensor.is_contiguous():
        return tensor
    return tensor.client.backend.contiguous(tensor)


class CubeBackend(Backend):
    """A kernel backend on one `ComputeClient` (`client.lang` is its kernel language)."""

    name = "cube"
    #: Re-issue a kernel op's recorded launches instead of re-running its logic (replay.py):
    #: None follows `replay_default()` at each op, True/False override it for this backend.
    replay = None

    def __init__(self, client, device: str):
        self.client = client
        self.device = device              # "wgpu:0": what CubeTensor.device holds
        client.backend = self
        self._replays = _replay.new_memo()
        self.replay_hits = 0              # ops served by a replay (for tests and benchmarks)

    def replay_default(self) -> bool:
        """Whether ops replay when `replay` is None (a runtime may read a switch here)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device}: {getattr(self.client, 'description', '')})"

    @property
    def lang(self) -> str:
        return self.client.lang

    # ------------------------------------------------------------------ dtypes
    def dtypes(self) -> tuple[DType, ...]:
        """The dtypes this device stores (float16 only where the runtime has it)."""
        out = []
        for d in dt.ALL:
            try:
                elem_storage(d, self.lang)
            except DTypeError:
                continue
            if d is dt.float16 and not getattr(self.client, "has_f16", True):
                continue
            out.append(d)
        return tuple(out)

    def check_dtype(self, op: str, dtype: DType) -> None:
        """`DTypeError` naming the device when it cannot hold `dtype`."""
        if dtype not in self.dtypes():
            desc = getattr(self.client, "description", "")
            extra = " (the adapter lacks shader-f16)" if dtype is dt.float16 else ""
            raise DTypeError(f"{op}: {dtype.name} is not supported on {self.device}"
                             f"{' (' + desc + ')' if desc else ''}{extra}; this device has "
                             + ", ".join(d.name for d in self.dtypes())
                             + (" (use float32)" if dtype is dt.float64 else ""))

    def storage_of(self, dtype: DType) -> np.dtype:
        """The host dtype of `dtype`'s device buffers (int64 is 32-bit in WGSL, bool u32)."""
        return elem_storage(dtype, self.lang)

    def nbytes(self, shape: tuple, dtype: DType) -> int:
        n = 1
        for s in shape:
            n *= int(s)
        return n * self.storage_of(dtype).itemsize

    def check_numel(self, op: str, shape: tuple) -> int:
        n = 1
        for s in shape:
            n *= int(s)
        if n > MAX_ELEMENTS:
            raise ShapeError(f"{op}: shape {tuple(shape)} has {n} elements; {self.device} "
                             f"kernels index at most 2^32 - 1")
        return n

    def alloc(self, op: str, shape: tuple, dtype: DType) -> CubeTensor:
        """A new contiguous, uninitialized tensor, with the size checks."""
        shape = tuple(int(s) for s in shape)
        n = self.check_numel(op, shape)
        nbytes = n * self.storage_of(dtype).itemsize
        self.client.check_size(nbytes, f"{op}: a {dtype.name} tensor of shape {shape}")
        return CubeTensor.new_contiguous(self.client, self.device, shape,
                                         self.client.empty(nbytes), dtype)

    # ------------------------------------------------------------------ transfer
    def shape_of(self, x: CubeTensor) -> tuple:
        return x.shape

    def dtype_of(self, x: CubeTensor) -> DType:
        return x.dtype

    def from_numpy(self, array: np.ndarray) -> CubeTensor:
        array = np.asarray(array)
        dtype = dt.from_numpy(array.dtype)
        self.check_dtype("from_numpy", dtype)
        storage = self.storage_of(dtype)
        if dtype.is_int and storage.itemsize < dtype.itemsize and array.size:
            lo, hi = array.min(), array.max()
            if lo < _I32.min or hi > _I32.max:
                bad = lo if lo < _I32.min else hi
                raise DTypeError(f"from_numpy: {dtype.name} value {int(bad)} does not fit on "
                                 f"{self.device}, which stores {dtype.name} as 32-bit integers "
                                 f"({_I32.min}..{_I32.max}); shape {array.shape}")
        data = np.ascontiguousarray(array, dtype=storage)
        shape = tuple(array.shape)
        self.check_numel("from_numpy", shape)
        self.client.check_size(data.nbytes, f"from_numpy: a {dtype.name} tensor of shape {shape}")
        handle = self.client.create_from_slice(data)
        return CubeTensor.new_contiguous(self.client, self.device, shape, handle, dtype)

    def to_numpy(self, x: CubeTensor) -> np.ndarray:
        storage = self.storage_of(x.dtype)
        if x.num_elements == 0:
            return np.zeros(x.shape, x.dtype.np)
        x = into_contiguous(x)
        raw = self.client.read(x.handle, x.num_elements * storage.itemsize)
        out = np.frombuffer(raw, storage, x.num_elements).reshape(x.shape)
        if out.dtype != x.dtype.np:
            out = out.astype(x.dtype.np)
        elif not out.flags.writeable:
            out = out.copy()
        return out

    def empty(self, shape: tuple, dtype: DType) -> CubeTensor:
        self.check_dtype("empty", dtype)
        return self.alloc("empty", shape, dtype)

    def sync(self) -> None:
        self.client.sync()

    # ------------------------------------------------------------------ movement (views)
    def _view(self, x: CubeTensor, shape, strides, offset) -> CubeTensor:
        return CubeTensor(x.client, x.device, tuple(shape), tuple(strides), x.handle, x.dtype,
                          offset)

    def reshape(self, x: CubeTensor, shape: tuple) -> CubeTensor:
        shape = tuple(int(s) for s in shape)
        if x.is_contiguous():
            return self._view(x, shape, contiguous_strides(shape), 0)
        strides = _reshape_strides(x.shape, x.strides, shape)
        if strides is not None:
            return self._view(x, shape, strides, x.offset)
        x = self.contiguous(x)
        return self._view(x, shape, contiguous_strides(shape), 0)

    def permute(self, x: CubeTensor, axes: tuple) -> CubeTensor:
        return self._view(x, [x.shape[a] for a in axes], [x.strides[a] for a in axes], x.offset)

    def expand(self, x: CubeTensor, shape: tuple) -> CubeTensor:
        lead = len(shape) - len(x.shape)
        strides = [0] * lead + [0 if (s == 1 and t != 1) else st
                                for s, t, st in zip(x.shape, shape[lead:], x.strides)]
        return self._view(x, shape, strides, x.offset)

    def slice(self, x: CubeTensor, slices: tuple) -> CubeTensor:
        shape, strides, offset = [], [], x.offset
        for (start, stop, step), stride in zip(slices, x.strides):
            n = len(range(start, stop, step))
            shape.append(n)
            strides.append(stride * step)
            if n:
                offset += start * stride
        if any(s == 0 for s in shape):
            offset = 0
        return self._view(x, shape, strides, offset)

    def contiguous(self, x: CubeTensor) -> CubeTensor:
        if x.is_contiguous():
            return x
        return self.copy(x)

    def copy(self, x: CubeTensor) -> CubeTensor:
        """A contiguous copy of the view `x` (a kernel)."""
        raise NotImplementedError


def _reshape_strides(shape: tuple, strides: tuple, new: tuple) -> tuple | None:
    """Strides viewing `shape`/`strides` as `new` without a copy, or None when the memory
    layout does not allow it (torch's rule: each group of merged dims must be contiguous)."""
    old = [(s, st) for s, st in zip(shape, strides) if s != 1]
    out: list[int] = []
    i = 0
    j = 0
    new = tuple(new)
    while j < len(new):
        if new[j] == 1:
            out.append(0)
            j += 1
            continue
        if i >= len(old):
            return None
        # take old dims until their product covers new dims' product
        size_old = old[i][0]
        chunk = [old[i]]
        i += 1
        size_new = new[j]
        targets = [j]
        j += 1
        while size_old != size_new:
            if size_old < size_new:
                if i >= len(old):
                    return None
                chunk.append(old[i])
                size_old *= old[i][0]
                i += 1
            else:
                while j < len(new) and new[j] == 1:
                    targets.append(j)
                    j += 1
                if j >= len(new):
                    return None
                size_new *= new[j]
                targets.append(j)
                j += 1
        for (s0, st0), (s1, st1) in zip(chunk, chunk[1:]):
            if st0 != st1 * s1:
                return None
        step = chunk[-1][1]
        sub = []
        for t in reversed(targets):
            sub.append(0 if new[t] == 1 else step)
            step *= new[t] if new[t] != 1 else 1
        out.extend(reversed(sub))
    if i != len(old):
        return None
    return tuple(out)
