"""Sharing tensor memory with other libraries on a GPU: CUDA tensors export and import through
the CUDA array interface (`__cuda_array_interface__`, version 3: torch, CuPy and numba speak it),
and DLPack where CuPy is installed to build the capsule. Host memory goes through numpy's
DLPack (`lazyt.creation.from_dlpack`, `Tensor.__dlpack__`).

Shared memory is never written by lazyt: an imported buffer is wrapped as a value the runtime
does not overwrite, and an exported buffer stays alive as long as the exporting tensor (even
when an in-place op rebinds the tensor to a new value).
"""
from __future__ import annotations

import numpy as np

from . import dtype as dt
from .errors import DeviceError, DTypeError

#: DLPack device types.
DL_CPU, DL_CUDA = 1, 2


def base_value(t):
    """The base backend's primitive holding `t`'s value (pending ops run first)."""
    prim, b = t.primitive, t.device.backend
    while hasattr(b, "inner"):
        prim = b.materialize(prim) if hasattr(b, "materialize") else b.detach(prim)
        b = b.inner
    return prim


def wrap_base(dev, prim):
    """A stack primitive of `dev` holding the base primitive `prim` (untracked)."""
    b = dev.backend
    while b is not None:
        if hasattr(b, "materialize") and hasattr(b, "wrap"):
            return b.wrap(prim)
        b = getattr(b, "inner", None)
    return prim


def cuda_array_interface(t) -> dict:
    """The `__cuda_array_interface__` of a cuda tensor: its buffer, contiguous, after the
    device has run everything queued (so consumers on any stream read final values).

    The interface's read-only flag is False because torch refuses read-only CUDA arrays;
    the contract is still lazyt's: consumers read the buffer and must not write to it."""
    from .backends.cube.backend import into_contiguous
    if t.dtype is dt.bool_:
        raise DTypeError("__cuda_array_interface__: bool tensors are stored as 32-bit words on "
                         "cuda; convert with t.to(lazyt.int32) or t.float() first")
    x = into_contiguous(base_value(t))
    backend = x.client.backend
    backend.sync()
    keep = getattr(t, "_exported", None)
    if keep is None:
        keep = []
        t._exported = keep
    keep.append(x)                      # the buffer lives as long as the tensor
    storage = backend.storage_of(x.dtype)
    return {"shape": tuple(x.shape), "typestr": storage.str, "descr": [("", storage.str)],
            "data": (x.handle.ptr, False), "strides": None, "version": 3, "stream": None}


class ForeignBuffer:
    """Device memory owned by another library: its address, and the object that owns it
    (kept alive here)."""

    __slots__ = ("ptr", "owner")

    def __init__(self, ptr: int, owner):
        self.ptr = int(ptr)
        self.owner = owner

    def __int__(self) -> int:
        return self.ptr

    def free(self) -> None:
        """Not ours to free: drop the reference instead."""
        self.owner = None


def from_cuda_array(obj, device=None):
    """(primitive, device) of a cuda tensor sharing the memory of `obj` (anything with
    `__cuda_array_interface__`: a torch or CuPy CUDA tensor), without a copy."""
    from .backends.cube.tensor import CubeTensor
    from .backends.cuda.client import Handle
    from .device import device as _device
    cai = obj.__cuda_array_interface__
    dev = _device(device or "cuda")
    if dev.base != "cuda":
        raise DeviceError(f"from_dlpack: {type(obj).__name__} is in CUDA memory; import it "
                          f"on a cuda device (got {dev}) or move it to the host first")
    npdt = np.dtype(cai["typestr"])
    if npdt == np.bool_:
        raise DTypeError("from_dlpack: bool CUDA tensors are 1 byte per value, lazyt's cuda "
                         "bools 4: convert to an integer dtype first")
    dtype = dt.from_numpy(npdt)
    shape = tuple(int(s) for s in cai["shape"])
    ptr = int(cai["data"][0])
    item = npdt.itemsize
    if cai.get("strides") is None:
        strides, n = [], 1
        for s in reversed(shape):
            strides.append(n)
            n *= s
        strides = tuple(reversed(strides))
    else:
        if any(s % item for s in cai["strides"]):
            raise DTypeError(f"from_dlpack: strides {cai['strides']} are not whole elements")
        strides = tuple(int(s) // item for s in cai["strides"])
    span = (1 + sum((n - 1) * s for n, s in zip(shape, strides))) * item if all(shape) else 0
    backend = dev.base_backend
    if cai.get("stream") not in (None, 0):
        backend.client.context.activate()
        backend.client._drv.Context.synchronize()   # the producer's stream has finished
    handle = Handle(ForeignBuffer(ptr, obj), span)
    x = CubeTensor(backend.client, backend.device, shape, strides, handle, dtype, 0)
    return wrap_base(dev, x), dev


def cuda_dlpack(t, stream=None, **kwargs):
    """A DLPack capsule of a cuda tensor, built by CuPy (which reads the CUDA array
    interface); `DeviceError` naming the alternatives when CuPy is not installed."""
    try:
        import cupy
    except ImportError:
        raise DeviceError("__dlpack__: exporting a cuda tensor through DLPack needs CuPy "
                          "(the cupy-cuda13x package); torch and CuPy also read it without "
                          "DLPack: torch.as_tensor(t, device='cuda') or cupy.asarray(t) use "
                          "its __cuda_array_interface__") from None
    return cupy.asarray(t).__dlpack__(stream=stream, **kwargs)


__all__ = ["base_value", "wrap_base", "cuda_array_interface", "from_cuda_array", "cuda_dlpack",
           "ForeignBuffer", "DL_CPU", "DL_CUDA"]
