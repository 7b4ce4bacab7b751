"""Starting pending work early on an asynchronous base: the Fusion layer drains when an op
that reads none of the pending results arrives and enough work is queued, so the device runs
while the host records. Dependent ops never cut a pending block; synchronous bases never drain
early."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import NumpyBackend
from lazyt.fusion import Fusion
from lazyt.ops import BinaryOp as B, UnaryOp as U


class AsyncNumpy(NumpyBackend):
    """A numpy base that says its launches are asynchronous (100 elements are enough)."""

    overlap_elements = 100


def up(F, a):
    return F.from_numpy(np.asarray(a, dtype=np.float32))


def test_an_independent_op_starts_the_pending_work():
    F = Fusion(AsyncNumpy())
    x = up(F, np.arange(200))
    y = F.unary(U.RELU, F.binary(B.MUL, x, 2.0))
    assert F.pending == 2
    z = F.binary(B.ADD, x, 1.0)               # reads only x: a new computation
    assert F.pending == 1                      # the first two ran before it was recorded
    np.testing.assert_array_equal(F.to_numpy(y), np.arange(200) * 2.0)
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(200) + 1.0)


def test_dependent_ops_keep_fusing():
    F = Fusion(AsyncNumpy())
    x = up(F, np.arange(200))
    y = F.binary(B.MUL, x, 2.0)
    for _ in range(5):
        y = F.binary(B.ADD, F.binary(B.MUL, y, x), 1.0)   # reads a pending result
    assert F.pending == 11


def test_small_pending_work_waits():
    F = Fusion(AsyncNumpy())
    x = up(F, np.arange(50))
    F.binary(B.MUL, x, 2.0)
    F.binary(B.ADD, x, 1.0)                    # 50 pending elements: below the bar
    assert F.pending == 2


def test_creation_ops_do_not_cut_and_custom_ops_do():
    F = Fusion(AsyncNumpy())
    x = up(F, np.arange(200))
    F.binary(B.MUL, x, 2.0)
    F.full((300,), 1.0, lazyt.float32)         # no inputs: not a new computation's start
    assert F.pending == 2
    out, = F.custom("double", lambda p: p * 2, [x], [((200,), lazyt.float32)])
    assert F.pending == 1
    np.testing.assert_array_equal(F.to_numpy(out), np.arange(200) * 2.0)


def test_synchronous_bases_never_drain_early():
    F = Fusion(NumpyBackend())
    x = up(F, np.arange(1 << 19))
    F.binary(B.MUL, x, 2.0)
    F.binary(B.ADD, x, 1.0)
    assert F.pending == 2


@pytest.mark.parametrize("n", [1 << 22])
def test_gpu_backends_declare_the_bar(device, n):
    base = device.base_backend
    if device.base == "cpu":
        assert base.overlap_elements is None
        return
    assert base.overlap_elements == n
    x = lazyt.tensor(np.ones(n, np.float32), device=device)
    outs = [(x * 2 + 1).relu() for _ in range(3)]   # three independent chains
    assert all(float(o.sum().item()) == 3.0 * n for o in outs)
