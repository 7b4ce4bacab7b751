"""The numpy backend's numba kernels (`lazyt.backends.numpy.jit`): the float32 math they use,
broadcasting and layouts, in-place outputs, the disk cache, the slow-compile line, and the
`LAZYT_NUMBA=0` fallback. Skipped without numba (every other test then runs the fallback)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import lazyt
import lazyt.testing
from lazyt.backends.numpy import NumpyBackend, jit
from lazyt.backends.numpy.ufuncs import erf_f32_into

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed "
                                "(pip install -e '.[cpu]'); the numpy fallback runs instead")

CPU = lazyt.device("cpu", autodiff=False)


def _ulp_error(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest error in float32 ulps of the exact (float64) value."""
    exact32 = exact.astype(np.float32)
    ulp = np.spacing(np.abs(exact32)).astype(np.float64)
    ok = np.isfinite(exact32)
    return float(np.max(np.abs(got[ok].astype(np.float64) - exact[ok]) / ulp[ok]))


def _sweep(lo: float, hi: float, n: int = 1 << 20) -> np.ndarray:
    x = np.linspace(lo, hi, n, dtype=np.float32)
    return np.concatenate([x, np.float32([0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8])])


def _elementwise(fn_name: str):
    import numba
    from lazyt.backends.numpy import jitmath
    f = getattr(jitmath, fn_name)

    @numba.njit
    def run(x, o):
        for i in range(x.size):
            o[i] = f(x[i])

    def call(x):
        o = np.empty_like(x)
        run(x, o)
        return o
    return call


def test_exp_f32_is_within_one_ulp():
    x = _sweep(-103.9, 88.7)
    got = _elementwise("exp_f32")(x)
    assert _ulp_error(got, np.exp(x.astype(np.float64))) <= 1.0
    edge = np.float32([np.nan, np.inf, -np.inf, 89.0, -104.5, 88.72, -87.5, -100.0])
    want = np.exp(edge)  # overflow to inf, underflow to 0 or a subnormal, NaN stays NaN
    np.testing.assert_array_equal(_elementwise("exp_f32")(edge)[[0, 1, 2, 3, 4]],
                                  want[[0, 1, 2, 3, 4]])
    np.testing.assert_allclose(_elementwise("exp_f32")(edge)[5:], want[5:], rtol=2e-7)


def test_exp_shifted_f32_has_exp_f32s_bits_in_its_range():
    """The softmax weights' exp (attention kernel): exp_f32's bits over [-87, 88], NaN kept."""
    x = _sweep(-87.0, 88.0)
    x = x[(x >= -87.0) & (x <= 88.0)]
    np.testing.assert_array_equal(_elementwise("exp_shifted_f32")(x),
                                  _elementwise("exp_f32")(x))
    assert np.isnan(_elementwise("exp_shifted_f32")(np.float32([np.nan]))).all()


def test_tanh_f32_is_within_two_ulp():
    x = _sweep(-12, 12)
    got = _elementwise("tanh_f32")(x)
    assert _ulp_error(got, np.tanh(x.astype(np.float64))) <= 2.0
    edge = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 50.0, -50.0])
    np.testing.assert_array_equal(_elementwise("tanh_f32")(edge), np.tanh(edge))


def test_erf_f32_has_the_numpy_backends_bits():
    x = _sweep(-6, 6)
    want = np.empty_like(x)
    erf_f32_into(x, want)
    np.testing.assert_array_equal(_elementwise("erf_f32")(x), want)
    edge = np.float32([np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(_elementwise("erf_f32")(edge), np.float32([np.nan, 1, -1]))


@pytest.fixture
def every_block(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "0")
    return jit.STATS


def _run_both(fn, *arrays, monkeypatch):
    """fn on lazyt tensors with numba kernels and with the numpy fallback."""
    ts = [lazyt.tensor(a, device=CPU) for a in arrays]
    before = jit.STATS["runs"]
    got = fn(*ts).numpy()
    assert jit.STATS["runs"] > before, "no numba kernel ran"
    monkeypatch.setenv("LAZYT_NUMBA", "0")
    want = fn(*[lazyt.tensor(a, device=CPU) for a in arrays]).numpy()
    monkeypatch.setenv("LAZYT_NUMBA", "1")
    return got, want


@pytest.mark.parametrize("shapes", [
    [(64, 33), (33,)],            # a bias along the last dim
    [(64, 33), (64, 1)],          # a per-row value
    [(4, 5, 6, 7), (5, 1, 7)],    # broadcast in the middle: several collapsed dims
    [(3, 1, 8), (1, 9, 1)],       # an outer product
    [(1000,), (1,)],              # a one-element input
])
def test_broadcast_patterns_equal_the_numpy_program(shapes, every_block, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)

    def fn(x, y):
        return ((x * y + 1.5).relu() - y / (x.abs() + 1)).maximum(y)

    got, want = _run_both(fn, a, b, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)


def test_strided_inputs_and_integer_wraparound(every_block, monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    # a strided input (a transposed leaf) is copied, then runs in the kernel
    got, want = _run_both(lambda x: (x.T * 2 + x.T.exp()).sqrt(), a, monkeypatch=monkeypatch)
    # an ulp of exp, scaled by the cancellation in 2x + exp(x) near its root
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=2e-6, equal_nan=True)
    big = np.array([2**31 - 1, -2**31, 5, -7], np.int32)
    got, want = _run_both(lambda x: (x + x) * 3 - 1, big, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)  # int32 overflow wraps as numpy's does
    got, want = _run_both(lambda x: (x > 0) & (x < 6) | (x == -7), big,
                          monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)


def test_nan_inf_and_division_by_zero_follow_numpy(every_block, monkeypatch):
    a = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3.0])
    b = np.float32([1.0, 0.0, np.nan, 0.0, -1.0, 0.0, -0.0, np.inf])

    def fn(x, y):
        return lazyt.maximum(x, y) + lazyt.minimum(x, y) * (x / y) + x.sign() + x.relu()

    got, want = _run_both(fn, a, b, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)
    got, want = _run_both(lambda x: x.tanh() + x.sigmoid() + x.exp() + x.erf(), a,
                          monkeypatch=monkeypatch)
    np.testing.assert_allclose(got, want, rtol=4e-7)


def test_small_integer_dtypes_wrap_as_numpy(every_block, monkeypatch):
    u = np.array([0, 1, 200, 255, 128, 7], np.uint8)
    i = np.array([-128, -1, 0, 127, 5, -7], np.int8)
    got, want = _run_both(lambda a: ((a + a) * 3 - a) ^ (a & 15), u,
                          monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.uint8
    got, want = _run_both(lambda a, b: (-b).abs() * 2 + (a > b).to(lazyt.int8), u, i,
                          monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)
    got, want = _run_both(lambda a: a.to(lazyt.float32) * 0.5 + 1, i, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)


def test_where_casts_and_float64(every_block, monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(500).astype(np.float64)
    i = rng.integers(-5, 5, 500).astype(np.int64)

    def fn(x, k):
        y = lazyt.where(k > 0, x, k.to(lazyt.float64) * 0.5)
        return (y.float() * 2).double() + (k != 0).double()

    got, want = _run_both(fn, a, i, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(got, want)


def test_in_place_output_is_exact(every_block):
    """A block whose output takes a dead input's buffer reads each element before writing."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4096).astype(np.float32)
    x = lazyt.tensor(a.copy(), device=CPU)
    y = ((x * 2 + 1) * x).numpy()
    np.testing.assert_array_equal(y, (a * 2 + 1) * a)


def test_blocks_with_other_ops_stay_numpy_programs(every_block):
    """Ops the kernels do not compile (here float16 and integer floor division) leave the
    block to the numpy program: same results, no kernel run."""
    before = jit.STATS["runs"]
    h = lazyt.tensor(np.float16([1.5, -2.0, 3.25]), device=CPU)
    np.testing.assert_array_equal((h * 2 + 1).numpy(), np.float16([4.0, -3.0, 7.5]))
    k = lazyt.tensor(np.int64([7, -7, 9]), device=CPU)
    np.testing.assert_array_equal(((k + 1) // 3).numpy(), np.int64([2, -2, 3]))
    assert jit.STATS["runs"] == before


def test_a_kernel_numba_cannot_compile_runs_as_a_numpy_program(every_block, monkeypatch):
    """A typing failure inside numba (here forced) is not the user's error: the block runs as
    its numpy program, once and for all."""
    def refuse(source):
        def kernel(*args):
            raise TypeError("forced typing failure")
        kernel.signatures = []
        return kernel
    monkeypatch.setattr(jit, "_dispatcher", refuse)
    x = lazyt.tensor(np.arange(6, dtype=np.float32), device=CPU)
    before = jit.STATS["runs"]
    np.testing.assert_array_equal((x * 3.25 + 0.5).numpy(), np.arange(6) * 3.25 + 0.5)
    assert jit.STATS["runs"] == before


def test_a_plan_that_ran_calls_its_kernel_once_per_piece(every_block, monkeypatch):
    """After a block's first run for an input shape, later runs neither look the kernel up
    again nor make the empty compiling call: one numba call per piece of work, the same
    bits; a new input shape of the block compiles its own plan."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 33)).astype(np.float32)

    def fn(x):
        return (x * 1.5 + 0.25).relu() - x / 3

    first = fn(lazyt.tensor(a, device=CPU)).numpy()
    looked_up = []
    real = jit._dispatcher

    def counting(source):
        looked_up.append(source)
        return real(source)

    monkeypatch.setattr(jit, "_dispatcher", counting)
    calls, real_launch = [], jit.jitpar.launch
    monkeypatch.setattr(jit.jitpar, "launch", lambda kernel, args, n, *a: (
        calls.append(n), real_launch(kernel, args, n, *a))[1])
    runs = jit.STATS["runs"]
    again = fn(lazyt.tensor(a, device=CPU)).numpy()
    np.testing.assert_array_equal(again, first)
    assert jit.STATS["runs"] == runs + 1 and looked_up == [] and len(calls) == 1
    b = rng.standard_normal((8, 5)).astype(np.float32)   # another plan of the same block
    np.testing.assert_array_equal(fn(lazyt.tensor(b, device=CPU)).numpy(),
                                  (b * np.float32(1.5) + np.float32(0.25)).clip(0) - b / 3)
    assert len(looked_up) == 1


def test_small_blocks_stay_numpy_programs_by_default(monkeypatch):
    monkeypatch.delenv("LAZYT_NUMBA_MIN", raising=False)
    before = jit.STATS["runs"]
    x = lazyt.tensor(np.ones(100, np.float32), device=CPU)
    (x * 2 + 1).numpy()
    assert jit.STATS["runs"] == before
    big = lazyt.tensor(np.ones(1 << 16, np.float32), device=CPU)
    np.testing.assert_array_equal((big * 2 + 1).numpy(), np.full(1 << 16, 3, np.float32))
    assert jit.STATS["runs"] == before + 1


def test_numba_off_runs_the_fallback(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA", "0")
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "0")
    assert not jit.available()
    before = jit.STATS["runs"]
    x = lazyt.tensor(np.arange(5, dtype=np.float32), device=CPU)
    np.testing.assert_array_equal((x * 2 + 1).numpy(), np.arange(5) * 2 + 1)
    assert jit.STATS["runs"] == before


@pytest.mark.parametrize("shape", [(300, 257), (4, 33, 1000), (70000, 3)])
def test_softmax_rows_against_float64(shape, every_block):
    x = (np.random.default_rng(4).standard_normal(shape) * 6).astype(np.float32)
    x.reshape(-1, shape[-1])[0, :2] = [np.inf, 0.0]
    before = jit.STATS["runs"]
    got = NumpyBackend().softmax(x, x.ndim - 1)
    assert jit.STATS["runs"] == before + 1
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    assert np.isnan(got.reshape(-1, shape[-1])[0]).all()  # a row with +inf is NaN, as numpy
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-6, atol=1e-7)


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_rows_against_float64(affine, every_block):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 7, 384)) * 3 + 2).astype(np.float32)
    w = rng.standard_normal(384).astype(np.float32) if affine[0] else None
    b = rng.standard_normal(384).astype(np.float32) if affine[1] else None
    before = jit.STATS["runs"]
    got = NumpyBackend().layer_norm(x, 1, 1e-5, w, b)
    assert jit.STATS["runs"] == before + 1
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    want = want * (1 if w is None else w) + (0 if b is None else b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(300, 1000), (2, 3, 40000)])
def test_log_softmax_rows_against_float64(shape, every_block):
    x = (np.random.default_rng(8).standard_normal(shape) * 4).astype(np.float32)
    before = jit.STATS["runs"]
    got = lazyt.tensor(x, device=CPU).log_softmax(-1).numpy()
    assert jit.STATS["runs"] == before + 1              # one row kernel, recorded as one op
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    want = x64 - m - np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=3e-6)
    # and its gradient, through the composite's primitives
    t = lazyt.tensor(x.reshape(-1, shape[-1])[:3, :40].astype(np.float64)).require_grad()
    assert lazyt.testing.gradcheck(lambda a: a.log_softmax(-1), (t,))


def test_log_softmax_rows_keep_precision_at_large_offsets(every_block):
    """(x - max) - lse, not x - (max + lse): the latter rounds at max's scale (an error of
    1.3e-5 for rows near 1000)."""
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    before = jit.STATS["runs"]
    got = lazyt.tensor(x, device=CPU).log_softmax(-1).numpy()
    assert jit.STATS["runs"] == before + 1
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    want = (x64 - m) - np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_small_log_softmax_stays_fused_primitives(monkeypatch):
    """Below the threshold the Fusion layer records log_softmax's primitives, which fuse with
    their neighbours, not the row kernel."""
    monkeypatch.delenv("LAZYT_NUMBA_MIN", raising=False)
    x = np.random.default_rng(9).standard_normal((4, 10)).astype(np.float32)
    before = jit.STATS["runs"]
    got = (lazyt.tensor(x, device=CPU).log_softmax(-1) * 2).numpy()
    assert jit.STATS["runs"] == before
    m = x.max(-1, keepdims=True)
    np.testing.assert_allclose(got, 2 * (x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))),
                               rtol=1e-6, atol=1e-6)


def test_row_kernels_skip_other_dtypes(every_block):
    before = jit.STATS["runs"]
    x = np.random.default_rng(6).standard_normal((100, 50))
    np.testing.assert_allclose(NumpyBackend().softmax(x, 1).sum(-1), 1.0)
    assert jit.STATS["runs"] == before


def test_without_numba_installed_blocks_run_as_numpy_programs(monkeypatch):
    """What a machine without numba runs (the module's import failed): numpy programs, the
    same values within an ulp of the transcendentals."""
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "0")
    x = lazyt.tensor(np.linspace(-3, 3, 5000, dtype=np.float32), device=CPU)
    with_numba = ((x * 1.5).tanh() + x.sigmoid()).numpy()
    monkeypatch.setattr(jit, "_state", {"numba": None, "tried": True})
    assert not jit.available()
    before = jit.STATS["runs"]
    without = ((x * 1.5).tanh() + x.sigmoid()).numpy()
    assert jit.STATS["runs"] == before
    np.testing.assert_allclose(without, with_numba, rtol=4e-7, atol=1e-7)


_CHILD = r"""
import numpy as np, lazyt
from lazyt.backends.numpy import NumpyBackend, jit
x = lazyt.tensor(np.linspace(-3, 3, 1000, dtype=np.float32), device=lazyt.device("cpu"))
y = ((x * 1.25 - 0.5).tanh() * x + 2.0).sqrt().numpy()
print(jit.STATS["compiled"], jit.STATS["loaded"], float(y.sum()))
"""


def test_disk_cache_serves_a_later_process(tmp_path):
    env = dict(os.environ, LAZYT_CACHE_DIR=str(tmp_path), LAZYT_NUMBA_MIN="0")

    def child():
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    first, second = child(), child()
    assert first[:2] == ["1", "0"]       # compiled
    assert second[:2] == ["0", "1"]      # loaded from the cache
    assert first[2] == second[2]
    assert list((tmp_path / "numba").glob("lazyt_kernel_*.py"))


def test_a_slow_compile_prints_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LAZYT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "0")
    monkeypatch.setattr(jit, "SLOW_COMPILE_S", 0.0)
    x = lazyt.tensor(np.ones(10, np.float32), device=CPU)
    (x * 3.5 - x.exp() * 0.25).numpy()  # a block no other test compiles
    assert "lazyt: compiled a numba kernel for a fused block of" in capfd.readouterr().err
