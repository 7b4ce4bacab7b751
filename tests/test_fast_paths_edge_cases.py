"""Edges of the CPU/GPU fast paths (float32 erf, native softmax and layer_norm, pool-split
reductions/copies/matmuls, the Fusion layer's opaque helpers, wgpu row kernels and the small
matmul tile): empty and unsorted dims, non-float input, threads, strided/broadcast inputs and
odd dtypes, each against numpy."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.backends.base import Backend
from lazyt.backends.numpy import NumpyBackend, erf_f32_into
from lazyt.backends.numpy.pool import parallel_for
from lazyt.dispatch import Dispatch
from lazyt.ops import ReduceOp
from lazyt.testing import gradcheck

B = NumpyBackend()
RNG = np.random.default_rng(2024)
CPU = lazyt.device("cpu")
NOFUSION = lazyt.device("cpu", fusion=False)
STACKS = [CPU, NOFUSION]


def _t(a, dev):
    return lazyt.from_numpy(np.ascontiguousarray(a), device=dev)


def _softmax64(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm64(x, n_dims, eps, w=None, b=None):
    x = x.astype(np.float64)
    ax = tuple(range(x.ndim - n_dims, x.ndim))
    c = x - x.mean(axis=ax, keepdims=True)
    y = c / np.sqrt((c * c).mean(axis=ax, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


# ================================================================================ bugs
@pytest.mark.parametrize("lhs, rhs", [((2, 3, 0), (2, 0, 4)), ((2, 0, 3), (2, 3, 4)),
                                      ((3, 2, 5, 0), (3, 2, 0, 1))])
def test_batched_matmul_with_a_zero_m_or_k(lhs, rhs):
    a, b = np.ones(lhs, np.float32), np.ones(rhs, np.float32)
    want = np.matmul(a, b)
    got = B.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    for dev in STACKS:  # the same through the Tensor API (torch: zeros)
        np.testing.assert_array_equal((_t(a, dev) @ _t(b, dev)).numpy(), want)


def test_layer_norm_on_non_float_input_keeps_the_dtype_contract():
    for dev in STACKS:
        for arr in (np.array([[1, 2, 4, 10]], np.int64), np.array([[1, 2, 4, 10]], np.int32),
                    np.array([[True, False, True, True]])):
            ln = nn.LayerNorm(4, device=dev)
            try:
                y = ln(_t(arr, dev))
            except lazyt.DTypeError:
                continue  # rejected up front, as torch does ("mixed dtype")
            got = y.numpy()
            assert got.dtype == y.dtype.np, (dev, arr.dtype, got.dtype, y.dtype)
            z = (y + 1).numpy()
            assert z.dtype == (y + 1).dtype.np


@pytest.mark.parametrize("dims", [(1, 0), (2, 0), (2, 1, 0), (1, -1)])
def test_numpy_reduce_with_unsorted_or_negative_dims(dims):
    x = RNG.standard_normal((4, 512, 520)).astype(np.float32)  # above _PARALLEL_MIN
    for keepdim in (False, True):
        got = B.reduce(ReduceOp.SUM, x, dims, keepdim)
        want = np.sum(x, axis=dims, keepdims=keepdim)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


# ================================================================= regression: erf
def test_erf_f32_from_several_python_threads_gives_the_single_thread_bits():
    xs = [(RNG.standard_normal(600_001) * 3).astype(np.float32) for _ in range(4)]
    want = []
    for x in xs:
        o = np.empty_like(x)
        erf_f32_into(x, o)
        want.append(o)
    bad = []

    def work(i):
        for _ in range(3):
            o = np.empty_like(xs[i])
            erf_f32_into(xs[i], o)  # thread-local scratch: no sharing between threads
            if not np.array_equal(o, want[i]):
                bad.append(i)
            f = _t(xs[i], CPU).erf().numpy()  # fused, tiles on the pool
            if not np.array_equal(f, want[i]):
                bad.append(("fused", i))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


@pytest.mark.parametrize("case", ["broadcast_row", "transposed", "strided", "scalar_in",
                                  "zero_d", "float16"])
def test_fused_erf_equals_eager_on_broadcast_strided_and_scalar_operands(case):
    x = (RNG.standard_normal((700, 800)) * 3).astype(np.float32)  # tiled fused path
    r = (RNG.standard_normal((1, 800)) * 3).astype(np.float32)
    fns = {
        "broadcast_row": (lambda x, r: r.expand(700, 800).erf() + x, (x, r)),
        "transposed": (lambda x: x.mT.erf() * 2, (x,)),
        "strided": (lambda x: x[:, ::2].erf() * x[:, 1::2], (x,)),
        "scalar_in": (lambda x: (x * 0 + 0.25).erf() + x, (x,)),
        "zero_d": (lambda s, x: s.erf() + x, (np.array(0.3, np.float32), x)),
        "float16": (lambda x: (x * 2).erf(), (x.astype(np.float16),)),
    }
    fn, arrs = fns[case]
    fused = fn(*[_t(a, CPU) for a in arrs]).numpy()
    eager = fn(*[_t(a, NOFUSION) for a in arrs]).numpy()
    assert fused.dtype == eager.dtype
    np.testing.assert_array_equal(fused, eager)


def test_erf_f32_ulp_on_random_bit_patterns_and_signed_zero():
    bits = RNG.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    got = np.empty_like(x)
    with np.errstate(all="ignore"):
        erf_f32_into(x, got)
    want = np.array([math.erf(float(v)) for v in x.astype(np.float64)]).astype(np.float32)
    ulp = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulp.max() <= 8
    assert np.array_equal(np.signbit(got), np.signbit(want))


# ============================================================ regression: parallel_for
@pytest.mark.parametrize("n, grain", [(0, 1), (1, 1), (7, 2), (1000, 3), (1001, 1000),
                                      (5, 100)])
def test_parallel_for_covers_each_item_once(n, grain, monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "5")
    hits = np.zeros(n, np.int64)
    lock = threading.Lock()

    def work(lo, hi):
        assert 0 <= lo <= hi <= n
        with lock:
            hits[lo:hi] += 1

    parallel_for(work, n, grain)
    np.testing.assert_array_equal(hits, np.ones(n, np.int64))


def test_parallel_for_propagates_a_worker_error_and_the_pool_keeps_working(monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "4")

    def bad(lo, hi):
        if lo > 0:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        parallel_for(bad, 100, 1)
    x = RNG.standard_normal((8, 400, 400)).astype(np.float32)
    np.testing.assert_array_equal(B.reduce(ReduceOp.SUM, x, (1, 2), False),
                                  x.sum(axis=(1, 2)))


# ============================================================ regression: split eager ops
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "step", "broadcast"])
@pytest.mark.parametrize("op, fn", [(ReduceOp.SUM, np.sum), (ReduceOp.MAX, np.max),
                                    (ReduceOp.MEAN, np.mean)])
def test_split_reductions_on_strided_inputs_with_many_threads(layout, op, fn, monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "8")
    base = RNG.standard_normal((9, 300, 520)).astype(np.float32)
    x = {"contiguous": base, "transposed": base.transpose(0, 2, 1),
         "step": np.concatenate([base, base], 2)[:, :, ::2],
         "broadcast": np.broadcast_to(base[:1], base.shape)}[layout]
    for dims in [(1,), (2,), (1, 2)]:
        for keepdim in (False, True):
            got = B.reduce(op, x, dims, keepdim)
            want = fn(x, axis=dims, keepdims=keepdim)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_split_batched_matmul_dtypes_and_strides_with_many_threads(dtype, monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "8")
    a = RNG.standard_normal((16, 8, 64, 64)).astype(dtype)
    b = RNG.standard_normal((16, 8, 64, 64)).astype(dtype)
    for rhs in (b, np.swapaxes(b, -1, -2), b[:, ::-1]):
        got = B.matmul(a, rhs)
        want = np.matmul(a, rhs)
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = {np.float16: 0, np.float32: 1e-6, np.float64: 1e-13}[dtype]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_large_reshape_and_contiguous_of_strided_views_keep_values_and_dtype():
    x = RNG.standard_normal((4, 600, 512)).astype(np.float64)
    for v in (x.transpose(2, 0, 1), x[:, ::-1], np.broadcast_to(x[:1], x.shape)):
        r = B.reshape(v, (v.shape[0], -1))
        np.testing.assert_array_equal(r, v.reshape(v.shape[0], -1))
        c = B.contiguous(v)
        assert c.flags.c_contiguous and c.dtype == v.dtype
        np.testing.assert_array_equal(c, v)


# ===================================================== regression: softmax / layer_norm
_VIEWS = [  # (numpy view, the same view of a lazyt tensor)
    (lambda a: a, lambda t: t),
    (lambda a: a.transpose(2, 0, 1), lambda t: t.permute(2, 0, 1)),
    (lambda a: a[:, ::3], lambda t: t[:, ::3]),
    (lambda a: np.broadcast_to(a[:1], a.shape), lambda t: t[:1].expand(*t.shape)),
]


@pytest.mark.parametrize("dev", STACKS, ids=["cpu", "cpu-nofusion"])
@pytest.mark.parametrize("dtype, tol", [(np.float16, 2e-3), (np.float32, 2e-6),
                                        (np.float64, 1e-12)])
def test_softmax_on_views_negative_dims_and_dtypes(dev, dtype, tol):
    base = (RNG.standard_normal((6, 40, 50)) * 4).astype(dtype)
    for np_view, lz_view in _VIEWS:
        view = np_view(base)
        for dim in range(-3, 3):
            got = lz_view(_t(base, dev)).softmax(dim).numpy()
            assert got.dtype == dtype and got.shape == view.shape
            np.testing.assert_allclose(got, _softmax64(view, dim), rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", STACKS, ids=["cpu", "cpu-nofusion"])
def test_layer_norm_module_dtypes_views_and_no_grad_vs_grad(dev):
    for dtype, tol in ((np.float16, 3e-3), (np.float32, 1e-5), (np.float64, 1e-12)):
        dd = lazyt.float64 if dtype == np.float64 else None
        ln = nn.LayerNorm((4, 10), eps=1e-3, device=dev, dtype=dd)
        w = RNG.standard_normal((4, 10))
        b = RNG.standard_normal((4, 10))
        pdt = np.float64 if dtype == np.float64 else np.float32
        ln.weight = nn.Parameter(_t(w.astype(pdt), dev))
        ln.bias = nn.Parameter(_t(b.astype(pdt), dev))
        base = (RNG.standard_normal((10, 4, 3)) * 3 + 1).astype(dtype)
        x = _t(base, dev).permute(2, 0, 1).mT  # (3, 4, 10): a strided view
        ref = _layer_norm64(base.transpose(2, 0, 1).swapaxes(-1, -2), 2, 1e-3,
                            w.astype(pdt), b.astype(pdt))
        y_grad = ln(x)  # tracked parameters: the generic primitives
        with lazyt.no_grad():
            y_ng = ln(x)  # the inner backend's own helper
        assert not y_ng.is_tracked and y_grad.is_tracked
        for y in (y_grad, y_ng):
            assert y.dtype.np == dtype and y.shape == (3, 4, 10)
            np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", STACKS, ids=["cpu", "cpu-nofusion"])
@pytest.mark.parametrize("tracked", [(True, False, False), (False, True, False),
                                     (False, False, True), (True, True, True)],
                         ids=["x", "weight", "bias", "all"])
def test_layer_norm_helper_gradients_for_each_tracked_input(dev, tracked):
    x = _t(RNG.standard_normal((3, 2, 5)), dev)
    w = _t(RNG.standard_normal((2, 5)), dev)
    b = _t(RNG.standard_normal((2, 5)), dev)
    ins = [t.require_grad() if f else t for t, f in zip((x, w, b), tracked)]
    assert gradcheck(lambda x, w, b: Dispatch.helper("layer_norm", x, 2, 1e-5, w, b), ins)


def test_layer_norms_with_other_eps_in_one_stream_reuse_no_stale_scalar():
    x = (RNG.standard_normal((4, 8)) * 1e-2).astype(np.float32)
    for _ in range(2):  # the second round hits the plan cache
        with lazyt.no_grad():
            t = _t(x, CPU)
            ys = [nn.LayerNorm(8, eps=e)(t) for e in (1e-5, 1.0, 100.0)]
            got = [y.numpy() for y in ys]
        for g, e in zip(got, (1e-5, 1.0, 100.0)):
            np.testing.assert_allclose(g, _layer_norm64(x, 1, e), rtol=1e-4, atol=1e-6)


def test_helpers_from_several_python_threads_on_one_fusion_stack():
    xs = [(RNG.standard_normal((64, 96, 170)) * 3).astype(np.float32) for _ in range(4)]
    ln = nn.LayerNorm(170)
    want = [(B.softmax(x, 2), B.layer_norm(x, 1, 1e-5, np.ones(170, np.float32),
                                           np.zeros(170, np.float32))) for x in xs]
    bad = []

    def work(i):
        with lazyt.no_grad():
            for _ in range(3):
                t = _t(xs[i], CPU)
                s, n = t.softmax(-1).numpy(), ln(t).numpy()
                if not (np.array_equal(s, want[i][0]) and np.array_equal(n, want[i][1])):
                    bad.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


def test_native_helpers_fall_back_for_other_dtypes_and_keep_them():
    x16 = RNG.standard_normal((5, 7)).astype(np.float16)
    assert B.softmax(x16, 1).dtype == np.float16
    assert B.layer_norm(x16, 1, 1e-5).dtype == np.float16
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    w64 = RNG.standard_normal(7)  # weight of another dtype: the generic helper
    np.testing.assert_array_equal(B.layer_norm(x, 1, 1e-5, w64, None),
                                  Backend.layer_norm(B, x, 1, 1e-5, w64, None))


def test_dispatch_helper_rejects_a_tensor_argument_on_another_device():
    x = _t(np.ones((2, 3), np.float32), NOFUSION)
    w = _t(np.ones(3, np.float32), CPU)
    with pytest.raises(lazyt.DeviceError, match="layer_norm"):
        Dispatch.helper("layer_norm", x, 1, 1e-5, w, None)


# ====================================================================== wgpu
def _wgpu():
    try:
        dev = lazyt.device("wgpu")
        dev.backend  # noqa: B018 - builds the stack
    except lazyt.DeviceError as e:
        pytest.skip(f"no wgpu adapter here: {e}")
    return dev


def test_wgpu_small_matmul_tile_config_is_correct_when_forced():
    """Real GPUs pick `matmul_config_small` for grids of < SMALL_GRID tiles; lavapipe never
    does, so force it (vec4 and scalar loads, ragged edges, broadcast batch)."""
    from lazyt.backends.wgpu import codegen as cg
    wg = _wgpu().base_backend
    saved = wg.matmul_config_small
    wg.matmul_config_small = cg.MatmulConfig(bm=128, bn=64, bk=8, tm=8, tn=4)
    try:
        for a, b in [((3, 130, 36), (3, 36, 70)), ((2, 64, 64), (64, 128)), ((200, 8), (8, 4)),
                     ((4, 3, 33, 17), (3, 17, 5))]:
            x = RNG.standard_normal(a).astype(np.float32)
            y = RNG.standard_normal(b).astype(np.float32)
            got = wg.to_numpy(wg.matmul(wg.from_numpy(x), wg.from_numpy(y)))
            np.testing.assert_allclose(got, np.matmul(x, y), rtol=1e-4, atol=1e-4)
    finally:
        wg.matmul_config_small = saved


def test_wgpu_row_kernels_many_rows_and_special_values():
    wg = _wgpu().base_backend
    x = RNG.standard_normal((70_000, 3)).astype(np.float32)  # rows over 2 grid dims
    w = RNG.standard_normal(3).astype(np.float32)
    got = wg.to_numpy(wg.layer_norm(wg.from_numpy(x), 1, 1e-5, wg.from_numpy(w), None))
    np.testing.assert_allclose(got, B.layer_norm(x, 1, 1e-5, w, None), rtol=1e-4, atol=1e-4)
    r = np.array([[np.nan, 0, 1], [np.inf, 0, 1], [-np.inf] * 3, [5, 5, 5]], np.float32)
    sm = wg.to_numpy(wg.softmax(wg.from_numpy(r), 1))
    np.testing.assert_allclose(sm, B.softmax(r, 1), rtol=1e-6)
    lnr = wg.to_numpy(wg.layer_norm(wg.from_numpy(r), 1, 1e-5))
    np.testing.assert_allclose(lnr, B.layer_norm(r, 1, 1e-5), rtol=1e-6)


def test_float16_softmax_sums_in_float32():
    for dev in STACKS:
        x = lazyt.zeros(100_000, dtype=lazyt.float16, device=dev)
        for y in (x.softmax(-1), x.log_softmax(-1).exp()):
            assert y.dtype == lazyt.float16
            np.testing.assert_allclose(y.numpy().astype(np.float32), 1e-5, rtol=1e-2)


def test_layer_norm_and_rms_norm_reject_integer_input_and_empty_shapes():
    with pytest.raises(lazyt.ShapeError, match="at least one dim"):
        nn.LayerNorm(())
    for mod in (nn.LayerNorm(4), nn.RMSNorm(4)):
        with pytest.raises(lazyt.DTypeError, match="floating-point"):
            mod(lazyt.tensor([[1, 2, 4, 10]]))
    from lazyt.backends.base import Backend
    with pytest.raises(lazyt.ShapeError, match="trailing dims"):
        Backend.layer_norm(B, np.ones((2, 3), np.float32), 3, 1e-5)
    with pytest.raises(lazyt.ShapeError, match="trailing dims"):
        B.layer_norm(np.ones((2, 3), np.float32), 3, 1e-5)
