"""The numpy backend's thread pool: `parallel_for` over row ranges and tiles, sized by
`LAZYT_NUM_THREADS` (numpy's ufuncs and BLAS release the GIL, so threads share the work)."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...config import max_threads, num_threads
from ...shape import numel

#: Bytes of one register tile: 256K float32 elements. Smaller tiles keep registers in L1/L2 but
#: make each ufunc call short, and the threads then queue on the GIL between calls: on a
#: 16-core host 64K-element tiles scaled to 2.3x at 4 threads and slowed down beyond, 256K
#: tiles reached 4.7x at 8.
TILE_BYTES = 1024 * 1024
#: Blocks with at least this many elements use the thread pool.
PARALLEL_MIN = 1 << 18

try:  # np.errstate costs ~3 µs per use; setting numpy's own context variable costs ~0.1 µs
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
    _IGNORE = _make_extobj(all="ignore")

    def _quiet():
        return _extobj_contextvar.set(_IGNORE)

    def _restore(token):
        _extobj_contextvar.reset(token)
except (ImportError, AttributeError, TypeError):  # pragma: no cover - other numpy versions
    def _quiet():
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def _restore(token):
        token.__exit__(None, None, None)

_pool_lock = threading.Lock()
_pool: list = [None]


def _threads() -> int:
    return num_threads()


_blas_threads: list = [None]


def _limit_blas(n: int) -> None:
    """Size BLAS's own pool like lazyt's (threadpoolctl, where installed), so that a
    `LAZYT_NUM_THREADS` budget holds for matmuls too."""
    if _blas_threads[0] == n:
        return
    _blas_threads[0] = n
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=n, user_api="blas")


def _get_pool():
    """The pool of `LAZYT_NUM_THREADS - 1` workers, else one per core but the caller's (the
    caller is the last thread), made anew when the setting changed since it was made; None
    for one thread. numpy programs use at most `_threads()` of them, numba kernels all."""
    want = max_threads() - 1
    _limit_blas(want + 1)
    pool = _pool[0]
    if pool is None or pool._max_workers != want:
        with _pool_lock:
            pool = _pool[0]
            if pool is not None and pool._max_workers != want:
                pool.shutdown(wait=False)
                pool = _pool[0] = None
            if pool is None and want > 0:
                pool = _pool[0] = ThreadPoolExecutor(want, thread_name_prefix="lazyt-fused")
    return pool


def _reset_pool_after_fork():
    _pool[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_after_fork)


def parallel_for(work, n: int, grain: int, threads: int | None = None) -> None:
    """Run `work(lo, hi)` over `range(n)` in contiguous pieces of at least `grain` (work
    items, e.g. rows), spread over at most `threads` (default `_threads()`) of the pool;
    floating-point warnings are off inside."""
    def run(lo, hi):
        token = _quiet()
        try:
            work(lo, hi)
        finally:
            _restore(token)

    parts = min(threads or _threads(), max(1, n // max(grain, 1)))
    pool = _get_pool() if parts > 1 else None
    if pool is None:
        run(0, n)
        return
    step = -(-n // parts)
    futures = [pool.submit(run, lo, min(lo + step, n)) for lo in range(step, n, step)]
    try:
        run(0, min(step, n))
    finally:
        for f in futures:
            f.result()


def _nd_tiles(shape: tuple, tile: int) -> list:
    """Index tuples covering `shape`: split the first axis whose trailing block fits a tile."""
    k = 0
    while k < len(shape) - 1 and numel(shape[k + 1:]) > tile:
        k += 1
    step = max(1, tile // max(numel(shape[k + 1:]), 1))
    outer = np.ndindex(*shape[:k]) if k else [()]
    return [tuple(o) + (slice(s, min(s + step, shape[k])),)
            for o in outer for s in range(0, shape[k], step)]
