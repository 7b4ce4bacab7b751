"""What the Fusion layer runs, seen through `lazyt.fusion.inspect()`."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.fusion import inspect

DEVICES = [lazyt.device("cpu", autodiff=False), lazyt.device("cpu")]
IDS = ["fusion", "autodiff+fusion"]
CHAIN_OPS = ("mul", "add", "relu", "mul", "sub", "exp", "add", "sqrt")


def _inputs(dev, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    return arrays, [lazyt.tensor(a, device=dev) for a in arrays]


def _chain(a, b, c):
    return ((((a * b + c).relu() * 0.5 - a).exp() + 1).sqrt())


def _chain_np(a, b, c):
    return np.sqrt(np.exp(np.maximum(a * b + c, 0) * np.float32(0.5) - a) + 1)


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_eight_op_chain_is_one_block(dev):
    (na, nb, nc), (a, b, c) = _inputs(dev)
    with inspect() as report:
        out = _chain(a, b, c)
        assert report.kernels == 0  # recorded, nothing ran
        got = out.numpy()
    np.testing.assert_allclose(got, _chain_np(na, nb, nc), rtol=1e-6)
    assert report.kernels == 1
    assert len(report.blocks) == 1
    assert report.blocks[0].ops == CHAIN_OPS
    assert report.blocks[0].outputs == 1  # the 7 intermediates are never materialized
    assert report.bytes_written == 1000 * 4
    assert report.opaque_ops == []


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_matmul_in_the_middle_splits_into_two_blocks(dev):
    rng = np.random.default_rng(1)
    nx_, nw = rng.standard_normal((8, 16)).astype(np.float32), \
        rng.standard_normal((16, 4)).astype(np.float32)
    x, w = lazyt.tensor(nx_, device=dev), lazyt.tensor(nw, device=dev)
    with inspect() as report:
        h = (x * 2 + 1).relu()
        y = h @ w
        out = ((y * 3 - 1).tanh() + y).numpy()
    hn = np.maximum(nx_ * 2 + 1, 0)
    yn = hn @ nw
    np.testing.assert_allclose(out, np.tanh(yn * 3 - 1) + yn, rtol=1e-5, atol=1e-6)
    assert report.kernels == 3
    assert [b.ops for b in report.blocks] == [("mul", "add", "relu"),
                                              ("mul", "sub", "tanh", "add")]
    assert report.opaque_ops == ["matmul"]


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_second_run_of_the_same_code_is_all_cache_hits(dev):
    def step(a, b, c):
        y = _chain(a, b, c)
        s = (y * y).sum(0)          # a reduction: an opaque boundary
        return (y - s).numpy(), (s + 1).numpy()

    _, first = _inputs(dev, 64, seed=2)
    step(*first)  # warm: may miss
    arrays, second = _inputs(dev, 64, seed=3)  # other values, other tensor ids
    with inspect() as report:
        y_got, s_got = step(*second)
    assert report.drains == 2
    assert report.cache_hits == 2 and report.cache_misses == 0
    y = _chain_np(*arrays)
    s = (y * y).sum(0)
    np.testing.assert_allclose(y_got, y - s, rtol=1e-5)
    np.testing.assert_allclose(s_got, s + 1, rtol=1e-5)


def test_other_scalars_hit_the_cache_other_shapes_miss():
    dev = DEVICES[0]
    x = lazyt.tensor(np.arange(6, dtype=np.float32), device=dev)
    (x * 2 + 1).numpy()
    with inspect() as report:
        got = (x * 5 + -3).numpy()
    assert (report.cache_hits, report.cache_misses) == (1, 0)
    np.testing.assert_array_equal(got, np.arange(6, dtype=np.float32) * 5 - 3)
    y = lazyt.tensor(np.arange(7, dtype=np.float32), device=dev)
    with inspect() as report:
        (y * 2 + 1).numpy()
    assert (report.cache_hits, report.cache_misses) == (0, 1)


def test_a_held_intermediate_is_materialized_too():
    dev = DEVICES[0]
    (na, nb, nc), (a, b, c) = _inputs(dev, 10)
    with inspect() as report:
        kept = a * b + c          # the user holds this one
        out = (kept.relu() * 2).numpy()
    assert len(report.blocks) == 1 and report.blocks[0].outputs == 2
    np.testing.assert_allclose(kept.numpy(), na * nb + nc, rtol=1e-6)
    np.testing.assert_allclose(out, np.maximum(na * nb + nc, 0) * 2, rtol=1e-6)


def test_backward_ops_are_recorded_and_fused():
    dev = lazyt.device("cpu")
    rng = np.random.default_rng(4)
    nx_ = rng.standard_normal((4, 5)).astype(np.float32)
    x = lazyt.tensor(nx_, device=dev).require_grad()
    with inspect() as report:
        loss = ((x * 2 + 1).tanh() * x).sum()
        grads = loss.backward()
        g = grads.get(x).numpy()
    t = np.tanh(nx_ * 2 + 1)
    np.testing.assert_allclose(g, (1 - t * t) * 2 * nx_ + t, rtol=1e-5, atol=1e-6)
    assert any(len(b.ops) >= 3 for b in report.blocks), report.summary()
    assert report.kernels < report.fused_ops  # several ops per kernel on average


def test_nested_inspects_both_see_the_work():
    dev = DEVICES[0]
    x = lazyt.tensor(np.ones(3, np.float32), device=dev)
    with inspect() as outer:
        with inspect() as inner:
            (x + 1).numpy()
        (x * 3).numpy()
    assert inner.kernels == 1 and outer.kernels == 2
    assert "fused blocks" in outer.summary()
