"""cuBLASLt algorithm tuning on the cuda backend: the first call of a large Lt product (a
linear with its bias) times the heuristic's candidates on its own operands and keeps the
fastest for the shape; later calls reuse it (the same bits), `LAZYT_CUDA_TUNE=0` and a graph
capture keep the heuristic's first, small products are never timed. Skipped where no CUDA
device is present (they run on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt import dtype as dt
from cuda_device import DEV, requires_cuda


pytestmark = requires_cuda


def _fresh_blas():
    """A Blas of its own (an empty plan cache) on the backend's client and stream."""
    from lazyt.backends.cuda.blas import Blas
    client = DEV.base_backend.client
    if client.blas is None:
        pytest.skip(f"cuBLAS is not available: {client.blas_error}")
    return Blas(client.stream.handle, client._raw_alloc, client._time_queued)


def _linear(blas, m, n, k, seed=0):
    """Row-major x @ w.T + bias through `blas.gemm`'s Lt path; returns (result, reference,
    run) where `run()` runs the same product again and returns its result."""
    backend = DEV.base_backend
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    tx, tw, tb = (backend.from_numpy(v) for v in (x, w, b))

    def ptr(t):
        return t.handle.ptr + t.offset * 4

    def run():
        out = backend.alloc("linear", (m, n), dt.float32)
        assert blas.gemm("float32", m, n, k, ptr(tx), k, 1, ptr(tw), 1, k, out.handle.ptr,
                         bias=ptr(tb))
        return backend.to_numpy(out)

    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    return run(), ref, run


def _only_plan(blas):
    plans = [p for p in blas._plans.values() if p is not None]
    assert len(plans) == 1
    return plans[0]


def test_a_large_product_is_timed_once_and_keeps_the_fastest_with_the_same_bits():
    blas = _fresh_blas()
    try:
        out, ref, again = _linear(blas, 1024, 384, 512)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
        plan = _only_plan(blas)
        assert plan.candidates == ()             # tuned: nothing left to time
        assert len(plan.timings) >= 2            # H200: cuBLASLt answers 8 for this shape
        fastest = min(plan.timings, key=lambda t: t[1])
        assert plan.algo == fastest[0]
        assert all(s > 0 for _, s in plan.timings)
        timings = plan.timings
        second = again()
        assert np.array_equal(second, out)       # the kept algorithm wrote the first result
        assert _only_plan(blas).timings == timings   # not timed again
    finally:
        blas.close()


def test_tuning_off_keeps_the_heuristics_first(monkeypatch):
    monkeypatch.setenv("LAZYT_CUDA_TUNE", "0")
    blas = _fresh_blas()
    try:
        out, ref, _ = _linear(blas, 1024, 384, 512, seed=1)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
        plan = _only_plan(blas)
        assert plan.candidates == () and plan.timings == ()
        assert plan.algo == plan.heuristic.ptr
    finally:
        blas.close()


def test_a_small_product_is_not_timed():
    blas = _fresh_blas()
    try:
        out, ref, _ = _linear(blas, 64, 48, 32, seed=2)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        plan = _only_plan(blas)
        assert plan.timings == () and plan.algo == plan.heuristic.ptr
    finally:
        blas.close()


def test_a_shape_first_seen_in_a_graph_capture_keeps_the_heuristics_first():
    client = DEV.base_backend.client
    blas = _fresh_blas()
    backend = DEV.base_backend
    m, n, k = 1024, 256, 640
    rng = np.random.default_rng(3)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    tx, tw, tb = (backend.from_numpy(v) for v in (x, w, b))
    client.sync()
    try:
        client.begin_graph()
        try:
            out = backend.alloc("linear", (m, n), dt.float32)
            ok = blas.gemm("float32", m, n, k, tx.handle.ptr + tx.offset * 4, k, 1,
                           tw.handle.ptr + tw.offset * 4, 1, k, out.handle.ptr,
                           bias=tb.handle.ptr + tb.offset * 4)
        except BaseException:
            client.abort_graph()
            raise
        graph = client.end_graph()
        assert ok
        plan = _only_plan(blas)
        assert plan.timings == () and plan.candidates == ()
        assert plan.algo == plan.heuristic.ptr
        graph.launch()
        np.testing.assert_allclose(backend.to_numpy(out),
                                   x.astype(np.float64) @ w.T.astype(np.float64) + b,
                                   rtol=1e-4, atol=1e-3)
    finally:
        blas.close()


def test_linear_results_through_the_tensor_api_match_numpy_after_tuning():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 256, 384)).astype(np.float32)
    w = rng.standard_normal((1536, 384)).astype(np.float32)
    b = rng.standard_normal(1536).astype(np.float32)
    tx, tw, tb = (lazyt.tensor(v, device=DEV) for v in (x, w, b))
    first = Dispatch.helper("linear", tx, tw, tb).numpy()
    second = Dispatch.helper("linear", tx, tw, tb).numpy()
    np.testing.assert_allclose(first, x @ w.T + b, rtol=1e-4, atol=1e-3)
    assert np.array_equal(first, second)
