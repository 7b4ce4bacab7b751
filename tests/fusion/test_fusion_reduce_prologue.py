"""A fused block read only by a sum or mean over its trailing dims (or all of them) runs inside
the reduction on the numpy backend: one numba pass (`jit.try_reduce`) that never writes the
block's value, with the block's values computed as the block computes them and the sum
reassociated. Held to float64 references; the cases it does not take (a leading dim, float64,
a small block, an input broadcast along part of the reduced dims, numba switched off) keep the
block and numpy's reduction, with the same results."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import jit
from lazyt.fusion import inspect
from lazyt.fusion.plan import PrologueStep

needs_numba = pytest.mark.skipif(not jit.available(), reason="numba is not installed: the "
                                 "numpy backend runs the block, then numpy's reduction")


def arr(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _run(fn):
    """fn() -> a pending tensor: (its value, the plan's step types, numba reduction runs)."""
    before = jit.STATS["runs"]
    with inspect() as report:
        value = fn().numpy()
    return value, report, jit.STATS["runs"] - before


CASES = {
    # name: (input shapes, lazyt fn of the tensors, numpy fn of float64 arrays)
    "sq-diff mean(-1)": ([(256, 1024), (256, 1024)],
                         lambda a, b: ((a - b) * (a - b)).mean(-1),
                         lambda a, b: ((a - b) ** 2).mean(-1)),
    "exp sum(-1) keepdim": ([(512, 200)], lambda a: a.exp().sum(-1, keepdim=True),
                            lambda a: np.exp(a).sum(-1, keepdims=True)),
    "bias row sum((1, 2))": ([(4, 96, 300), (300,)], lambda a, c: (a * c + 1).sum((1, 2)),
                             lambda a, c: (a * c + 1).sum((1, 2))),
    "per-row scale mean(-1)": ([(300, 400), (300, 1)], lambda a, s: (a * s).mean(-1),
                               lambda a, s: (a * s).mean(-1)),
    "full mean": ([(128, 1000), (128, 1000)], lambda a, b: ((a - b).abs()).mean(),
                  lambda a, b: np.abs(a - b).mean()),
    "full sum keepdim 3-d": ([(8, 64, 200)], lambda a: (a * a).sum((0, 1, 2), keepdim=True),
                             lambda a: (a * a).sum(keepdims=True)),
    "rows longer than a chunk": ([(40, 5000)], lambda a: (a * 0.5 + 2).sum(-1),
                                 lambda a: (a * 0.5 + 2).sum(-1)),
    "leading size-1 dims": ([(1, 1, 70000)], lambda a: (a - 1).sum(-1),
                            lambda a: (a - 1).sum(-1)),
}


@needs_numba
@pytest.mark.parametrize("name", list(CASES))
def test_a_block_runs_inside_the_sum_or_mean(name):
    shapes, fn, ref = CASES[name]
    xs = [arr(*s, seed=i) for i, s in enumerate(shapes)]
    got, report, runs = _run(lambda: fn(*[lazyt.tensor(x) for x in xs]))
    want = ref(*[x.astype(np.float64) for x in xs])
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4)
    assert runs == 1, report.summary()
    assert report.kernels == 1 and len(report.opaque_ops) == 1  # the block ran inside it


@needs_numba
@pytest.mark.parametrize("threads", ["2", "16"])
def test_a_full_reduction_takes_rows_of_enough_leading_dims(monkeypatch, threads):
    # (8, 64, 200): on 16 threads dim 0's 8 rows would leave threads idle; rows of (8 * 64)
    # keep the block inside the sum on any pool size
    monkeypatch.setenv("LAZYT_NUM_THREADS", threads)
    x = arr(8, 64, 200)
    got, report, runs = _run(lambda: (lazyt.tensor(x) * 3).sum())
    np.testing.assert_allclose(got, (x.astype(np.float64) * 3).sum(), rtol=2e-5)
    assert runs == 1 and report.kernels == 1, report.summary()


@needs_numba
def test_the_plan_has_one_prologue_step():
    from lazyt.fusion import find_fusion
    dev = lazyt.device("cpu")
    fusion = find_fusion(dev.backend)
    a = lazyt.tensor(arr(256, 512), device=dev)
    y = (a * a + 1).sum(-1)
    plan = fusion._drain()
    assert [type(s) for s in plan.steps] == [PrologueStep]
    assert plan.steps[0].name == "sum[fused[mul+add]]"
    assert y.shape == (256,)


@pytest.mark.parametrize("case", ["leading dim", "float64", "small", "max", "part-broadcast",
                                  "middle dim"])
def test_cases_it_does_not_take_keep_the_block_and_numpys_reduction(case):
    a = arr(64, 32, 64)
    if case == "leading dim":
        fn, ref = (lambda t: (t * 2).sum(0)), (lambda x: (x * 2).sum(0))
    elif case == "float64":
        a = a.astype(np.float64)
        fn, ref = (lambda t: (t * 2).sum(-1)), (lambda x: (x * 2).sum(-1))
    elif case == "small":
        a = a[:2, :2]
        fn, ref = (lambda t: (t * 2).sum(-1)), (lambda x: (x * 2).sum(-1))
    elif case == "max":
        fn, ref = (lambda t: (t * 2).amax(-1)), (lambda x: (x * 2).max(-1))
    elif case == "middle dim":
        fn, ref = (lambda t: (t * 2).sum(1)), (lambda x: (x * 2).sum(1))
    else:  # an input spans the last reduced dim only: the plan hands the block over, the
        c = arr(1, 64, seed=3)  # kernel declines at run time (the block, then numpy's sum)
        t = lazyt.tensor(a)
        got = (t * lazyt.tensor(c)).sum((1, 2)).numpy()
        np.testing.assert_allclose(got, (a.astype(np.float64) * c).sum((1, 2)), rtol=1e-5,
                                   atol=1e-4)
        return
    before = jit.STATS["runs"]
    with inspect() as report:
        got = fn(lazyt.tensor(a)).numpy()
    want = ref(a)
    np.testing.assert_array_equal(got, want)  # the block's bits, then numpy's own reduction
    assert len(report.blocks) == 1 and report.blocks[0].outputs == 1, report.summary()
    if case in ("float64", "small", "max", "middle dim", "leading dim"):
        assert jit.STATS["runs"] - before <= 1  # at most the block's own numba kernel


@needs_numba
def test_numba_switched_off_gives_the_same_results(monkeypatch):
    a, b = arr(256, 1024), arr(256, 1024, seed=1)
    on = ((lazyt.tensor(a) - lazyt.tensor(b)).exp().sum(-1)).numpy()
    monkeypatch.setenv("LAZYT_NUMBA", "0")
    dev = lazyt.device("cpu")  # a fresh plan under the switch is not needed: the kernel
    off = ((lazyt.tensor(a, device=dev) - lazyt.tensor(b, device=dev)).exp().sum(-1)).numpy()
    np.testing.assert_allclose(on, off, rtol=2e-6)  # declines at run time as well


@needs_numba
def test_nan_and_inf_propagate():
    a = arr(128, 600)
    a[3, 10] = np.nan
    a[7, 0] = np.inf
    got = (lazyt.tensor(a) * 2).sum(-1).numpy()
    assert np.isnan(got[3]) and got[7] == np.inf
    assert np.isfinite(np.delete(got, [3, 7])).all()


@needs_numba
def test_gradients_through_a_fused_reduction():
    a, b = arr(256, 300), arr(256, 300, seed=1)
    ta, tb = lazyt.tensor(a).require_grad(), lazyt.tensor(b)
    loss = ((ta - tb) * (ta - tb)).mean()
    loss.backward()
    np.testing.assert_allclose(loss.item(), ((a.astype(np.float64) - b) ** 2).mean(),
                               rtol=1e-5)
    np.testing.assert_allclose(ta.grad.numpy(), 2 * (a - b) / a.size, rtol=1e-5, atol=1e-9)


@needs_numba
def test_a_compiled_function_replays_the_fused_reduction():
    a = arr(256, 512)

    @lazyt.compile
    def f(x):
        return (x * x + 1).mean(-1)
    first = f(lazyt.tensor(a)).numpy()
    for _ in range(2):  # a second recording checks the first, then replays
        again = f(lazyt.tensor(a)).numpy()
        np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, (a.astype(np.float64) ** 2 + 1).mean(-1), rtol=1e-5)
    assert f.cache_info().hits >= 1


@needs_numba
@pytest.mark.parametrize("shape", [(1, 1 << 22), (2, 1 << 22)])
def test_long_rows_keep_their_accuracy(shape):
    """Chunk sums add in float64: a long row's mean is as good as numpy's pairwise one."""
    c = np.full(shape, 0.1, np.float32)
    got = (lazyt.tensor(c) + 1).mean(-1).numpy()
    np.testing.assert_allclose(got, 1.1, rtol=2e-7)
    x = arr(*shape, seed=5)
    total = (lazyt.tensor(x) * lazyt.tensor(x)).sum().numpy()
    want = (x.astype(np.float64) ** 2).sum()
    assert abs(total - want) / want < 2e-7


@needs_numba
@pytest.mark.parametrize("case", ["tall narrow full", "pow block", "one row full"])
def test_the_plan_keeps_the_block_where_the_kernel_would_not_pay(case):
    from lazyt.config import max_threads
    from lazyt.fusion import find_fusion
    if case == "one row full" and max_threads() < 2:
        pytest.skip("one thread: a single row is one row per thread")
    dev = lazyt.device("cpu")
    fusion = find_fusion(dev.backend)
    shape = {"tall narrow full": (1 << 17, 4), "pow block": (256, 512),
             "one row full": (1, 1 << 17)}[case]
    x = arr(*shape)
    a = lazyt.tensor(x, device=dev)
    if case == "pow block":  # numba does not compile `**`: the block stays a step of its own
        y, want = ((a - 1) ** 2).mean(-1), ((x.astype(np.float64) - 1) ** 2).mean(-1)
    else:
        y, want = (a * 2 + 1).sum(), (x.astype(np.float64) * 2 + 1).sum()
    plan = fusion._drain()
    assert not any(isinstance(s, PrologueStep) for s in plan.steps)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)


def test_a_subclass_with_its_own_reduce_gets_the_block_and_the_reduce():
    from lazyt.backends.numpy import NumpyBackend
    from lazyt.fusion import Fusion

    class Counting(NumpyBackend):
        calls = 0

        def reduce(self, op, x, dims, keepdim):
            Counting.calls += 1
            return super().reduce(op, x, dims, keepdim)
    F = Fusion(Counting())
    x = F.from_numpy(arr(256, 512))
    from lazyt.ops import BinaryOp, ReduceOp
    y = F.reduce(ReduceOp.SUM, F.binary(BinaryOp.MUL, x, x), (1,), False)
    got = F.to_numpy(y)
    assert Counting.calls == 1
    np.testing.assert_allclose(got, (arr(256, 512).astype(np.float64) ** 2).sum(1), rtol=1e-5)
