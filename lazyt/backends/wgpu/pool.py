"""The buffer pool: GPU buffers are recycled by size class instead of being created per op.

A `Handle` owns one pooled buffer; when the last tensor viewing it is gone its buffer returns to
the pool. Buffers freed while commands using them are still being recorded are `recent`: a later
kernel may write them (commands run in recording order) but the host may not (a queue write runs
before the recorded commands), so uploads take only `settled` buffers.
"""
from __future__ import annotations

from collections import defaultdict

from ...config import wgpu_pool_bytes

#: The smallest buffer handed out; every size is a multiple of 4 bytes (copy alignment).
MIN_BYTES = 256


def size_class(nbytes: int) -> int:
    """`nbytes` rounded up to its class: powers of two up to 4 KiB, then four classes per
    power of two (at most 25% waste), so freed buffers fit later requests of similar size."""
    n = max(int(nbytes), MIN_BYTES)
    if n <= 4096:
        return 1 << (n - 1).bit_length()
    step = (1 << ((n - 1).bit_length() - 1)) // 4
    return -(-n // step) * step


class Handle:
    """One pooled buffer; `nbytes` is what was asked for, `buffer.size` its class size."""

    __slots__ = ("buffer", "nbytes", "pool", "__weakref__")

    def __init__(self, buffer, nbytes: int, pool: BufferPool):
        self.buffer = buffer
        self.nbytes = nbytes
        self.pool = pool

    @property
    def size(self) -> int:
        return self.buffer.size

    def __del__(self):
        pool = self.pool
        if pool is not None:
            try:
                pool.release(self.buffer)
            except Exception:  # interpreter shutdown: module state may already be gone
                pass

    def __repr__(self) -> str:
        return f"Handle({self.nbytes} bytes in a {self.buffer.size}-byte buffer)"


class BufferPool:
    """Free buffers by size class; counts `created` and `reused` for tests and benchmarks."""

    def __init__(self, create, cap: int, on_drop=None):
        self._create = create            # size -> GPUBuffer
        self._on_drop = on_drop          # called with a buffer the pool lets go of
        self.cap = cap                   # no buffer is larger (the device's binding limit)
        # Every buffer handed out stays referenced here until the pool drops it, so a GPUBuffer
        # is never finalized by the garbage collector while a Handle (perhaps in the same
        # reference cycle) is about to return it to the pool.
        self._owned: dict[int, object] = {}
        self._settled = defaultdict(list)
        self._recent = defaultdict(list)
        self.pooled_bytes = 0
        # pooled (free) bytes above which freed buffers are dropped instead of kept (an
        # allocation that fails empties the pool and retries)
        self.max_pooled_bytes = wgpu_pool_bytes()
        self.created = 0
        self.reused = 0
        self.closed = False

    def acquire(self, nbytes: int, for_upload: bool = False) -> Handle:
        """A handle on a buffer of at least `nbytes`; `for_upload` skips buffers still in use
        by recorded commands (see the module docstring)."""
        size = min(size_class(nbytes), self.cap)
        free = self._settled.get(size)
        if not free and not for_upload:
            free = self._recent.get(size)
        if free:
            buf = free.pop()
            self.pooled_bytes -= size
            self.reused += 1
        else:
            try:
                buf = self._create(size)
            except Exception:
                if not self.pooled_bytes:
                    raise
                self.clear()            # out of memory, perhaps: free what is pooled, retry
                buf = self._create(size)
            self._owned[id(buf)] = buf
            self.created += 1
        return Handle(buf, int(nbytes), self)

    def release(self, buffer) -> None:
        if self.closed:
            return
        size = buffer.size
        if self.pooled_bytes + size > self.max_pooled_bytes:
            # dropped: wgpu frees it once no submitted command uses it
            self._owned.pop(id(buffer), None)
            if self._on_drop is not None:
                self._on_drop(buffer)
            return
        self._recent[size].append(buffer)
        self.pooled_bytes += size

    def settle(self) -> None:
        """Called after a submit: buffers freed before it are safe for host writes again."""
        if self._recent:
            for size, bufs in self._recent.items():
                self._settled[size].extend(bufs)
            self._recent.clear()

    def clear(self) -> None:
        """Forget the free buffers (buffers still in use return here when freed)."""
        for bufs in (*self._settled.values(), *self._recent.values()):
            for buf in bufs:
                self._owned.pop(id(buf), None)
                if self._on_drop is not None:
                    self._on_drop(buf)
        self._settled.clear()
        self._recent.clear()
        self.pooled_bytes = 0

    @property
    def free_buffers(self) -> int:
        return sum(len(v) for v in self._settled.values()) + \
            sum(len(v) for v in self._recent.values())
