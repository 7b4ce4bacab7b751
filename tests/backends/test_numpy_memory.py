"""The numpy backend's buffer pool (`lazyt.backends.numpy.memory`): large results reuse memory
that earlier results gave back, never memory an array (or any view or export of one) still
uses; `LAZYT_NUMPY_POOL_MB` bounds the free memory kept and 0 turns the pool off."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import memory

MB = 1 << 20


@pytest.fixture(autouse=True)
def _fresh_pool(monkeypatch):
    monkeypatch.delenv("LAZYT_NUMPY_POOL_MB", raising=False)
    memory.clear()
    yield
    memory.clear()


def _hits():
    return memory.STATS["hits"]


def test_a_freed_result_is_reused_for_the_next_of_its_size():
    if memory._FREE_REFS is None:
        pytest.skip("this Python counts references in a way the pool does not trust")
    a = memory.empty((512, 1024), np.float32)
    a[...] = 1
    address = a.ctypes.data
    del a
    before = _hits()
    b = memory.empty((1024, 512), np.float32)   # same bytes, another shape
    assert _hits() == before + 1 and b.ctypes.data == address
    assert b.shape == (1024, 512) and b.dtype == np.float32 and b.flags.c_contiguous
    c = memory.empty((512, 1024), np.float64)   # twice the bytes: a buffer of its own
    assert not np.shares_memory(b, c)


@pytest.mark.parametrize("hold", ["view", "memoryview", "base", "reshape"])
def test_memory_still_used_is_never_handed_out(hold):
    a = memory.empty((256, 1024), np.float32)
    a[...] = 7
    kept = {"view": lambda: a[3:], "memoryview": lambda: memoryview(a),
            "base": lambda: a.base, "reshape": lambda: a.reshape(-1)[::2]}[hold]()
    del a
    b = memory.empty((256, 1024), np.float32)
    b[...] = 0
    assert not np.shares_memory(b, np.asarray(kept))
    assert np.all(np.asarray(kept).view(np.float32) == 7)


def test_small_arrays_and_a_zero_budget_use_plain_numpy(monkeypatch):
    assert memory.empty((16, 16), np.float32).base is None
    monkeypatch.setenv("LAZYT_NUMPY_POOL_MB", "0")
    assert memory.empty((1024, 1024), np.float32).base is None


def test_free_memory_kept_stays_within_the_budget(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMPY_POOL_MB", "2")
    arrays = [memory.empty((MB,), np.uint8) for _ in range(4)]
    assert memory.pooled_bytes() == (4 * MB, 0)
    del arrays
    big = memory.empty((3 * MB,), np.uint8)   # a new size: the free ones are trimmed first
    used, free = memory.pooled_bytes()
    assert used == 3 * MB and free <= 2 * MB and big.nbytes == 3 * MB
    assert memory.STATS["dropped"] >= 2


def test_threads_get_separate_memory():
    seen, lock = [], threading.Lock()

    def work(k):
        arrays = [memory.empty((MB // 4,), np.float32) for _ in range(8)]
        for a in arrays:
            a[...] = k
        with lock:
            seen.extend(arrays)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    starts = sorted(a.ctypes.data for a in seen)
    assert all(b - a >= MB for a, b in zip(starts, starts[1:]))   # no two overlap


def test_results_of_a_model_step_are_unchanged_with_and_without_the_pool(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    w = rng.standard_normal((1024, 1024)).astype(np.float32)
    dev = lazyt.device("cpu")

    def step():
        t = lazyt.tensor(x, device=dev)
        h = (t @ lazyt.tensor(w, device=dev)).relu() + t
        return (h.softmax(-1) * 2).numpy()

    with_pool = [step() for _ in range(3)]
    monkeypatch.setenv("LAZYT_NUMPY_POOL_MB", "0")
    without = step()
    for r in with_pool:
        np.testing.assert_array_equal(r, without)


def test_a_past_peak_is_trimmed_on_reuse_and_turning_the_pool_off_lets_go(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMPY_POOL_MB", "4")
    live = [memory.empty((2 * MB,), np.uint8) for _ in range(8)]
    del live
    again = memory.empty((2 * MB,), np.uint8)    # a hit: the 14 MiB left free are trimmed
    assert memory.pooled_bytes()[1] <= 4 * MB and again.nbytes == 2 * MB
    del again
    monkeypatch.setenv("LAZYT_NUMPY_POOL_MB", "0")
    memory.empty((2 * MB,), np.uint8)
    assert memory.pooled_bytes() == (0, 0)
