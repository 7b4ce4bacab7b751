"""The numpy backend's buffer pool: large results take memory that earlier results gave back,
instead of fresh pages from the operating system.

A fresh large array costs page faults on first write. numpy asks for transparent huge pages on
large arrays, and on this project's 2-core machine, filling a new [4096, 1536] float32 result
while a few others were alive took 12.3 ms where a reused one took 3.5 ms. MiniLM's b32 s128
forward took 6084 page faults and 56 ms of system time per call. With the memory kept (glibc
told, through its environment variables, never to give it back), it took 459-474 ms instead of
520 ms. Doing without huge pages is no cure: the same forward then took 714 ms.

`empty(shape, dtype)` gives an array of at least `POOL_MIN` bytes as a view of a pooled byte
buffer. A buffer is free again when no array uses it any more: the pool holds the only
reference to it (every view of it, however derived, holds one, as do a `torch.from_numpy` or
DLPack export of one). Buffers are binned by size rounded up to `_GRAIN` bytes. The free ones
kept are bounded by `LAZYT_NUMPY_POOL_MB` at every pooled allocation (oldest dropped first);
0 turns the pool off and lets go of what it kept.
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ... import config

#: Arrays of at least this many bytes come from the pool (smaller ones from numpy's own cache).
POOL_MIN = 1 << 20
#: Bin granularity: sizes are rounded up to a multiple of this many bytes.
_GRAIN = 1 << 16

_lock = threading.Lock()
_bins: dict = {}      # rounded size -> list of uint8 buffers of that size (in use or free)
STATS = {"hits": 0, "misses": 0, "dropped": 0}



def _count_refs(bufs: list) -> list:
    """What `sys.getrefcount` reads for each buffer of `bufs` inside the loop `_take` and
    `_free_buffers` run (the same code shape)."""
    return [sys.getrefcount(buf) for buf in bufs]


def _calibrate() -> int | None:
    """The count a free buffer shows in that loop (3 on CPython 3.10-3.13: the list, the loop
    variable, the call's argument), checked to grow by one per view; None, and no pool, on a
    runtime where it does not (one that borrows references differently)."""
    probe = [np.empty(16, np.uint8)]
    free = _count_refs(probe)[0]
    view = probe[0][:8].view(np.uint8)
    held = _count_refs(probe)[0]
    del view
    return free if held == free + 1 and _count_refs(probe)[0] == free else None


#: The reference count of a free buffer in the pool's loops (None: the pool is off).
_FREE_REFS = _calibrate()


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array, from the pool when it is large."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < POOL_MIN:
        return np.empty(shape, dtype)
    cap = config.numpy_pool_bytes()
    if cap == 0 or _FREE_REFS is None:
        if _bins:
            clear()    # turned off at run time: what it kept goes back
        return np.empty(shape, dtype)
    size = -(-nbytes // _GRAIN) * _GRAIN
    with _lock:
        buf = _take(size)
        _trim(cap, keep=buf)   # on hits too: a past peak's free buffers do not stay for good
        if buf is None:
            STATS["misses"] += 1
            buf = np.empty(size, np.uint8)
            _bins.setdefault(size, []).append(buf)
        else:
            STATS["hits"] += 1
    return buf[:nbytes].view(dtype).reshape(shape)


def _take(size: int):
    free = _FREE_REFS
    for buf in _bins.get(size, ()):
        if sys.getrefcount(buf) == free:
            return buf
    return None


def _free_buffers() -> list:
    """(size, bin, buffer) of every free buffer, oldest first within a bin."""
    free, refs = [], _FREE_REFS
    for size, bufs in _bins.items():
        for buf in bufs:
            if sys.getrefcount(buf) == refs:
                free.append((size, bufs, buf))
    return free


def _trim(cap: int, keep=None) -> None:
    """Drop free buffers (but `keep`, about to be handed out) until those kept hold at most
    `cap` bytes (called under the lock, on every pooled allocation)."""
    free = [f for f in _free_buffers() if f[2] is not keep]
    kept = sum(size for size, _, _ in free)
    for size, bufs, buf in free:
        if kept <= cap:
            break
        _remove(bufs, buf)
        kept -= size
        STATS["dropped"] += 1
    for size in [s for s, b in _bins.items() if not b]:
        del _bins[size]


def _remove(bufs: list, buf) -> None:
    """Remove `buf` from `bufs` by identity (`list.remove` would compare arrays by value)."""
    for i, b in enumerate(bufs):
        if b is buf:
            del bufs[i]
            return


def pooled_bytes() -> tuple:
    """(bytes in use, bytes free) of the pool's buffers."""
    with _lock:
        free = sum(size for size, _, _ in _free_buffers())
        total = sum(size * len(bufs) for size, bufs in _bins.items())
    return total - free, free


def clear() -> None:
    """Forget every free buffer (the memory goes back once no array uses it)."""
    with _lock:
        for size, bufs, buf in _free_buffers():
            _remove(bufs, buf)
        for size in [s for s, b in _bins.items() if not b]:
            del _bins[size]
