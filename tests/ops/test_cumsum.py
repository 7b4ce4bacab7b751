"""`cumsum`, the op added to prove the declaration layout: values against numpy on every
device, torch's dtype rules, gradients, one opaque op under Fusion, fused-vs-eager, errors."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.fusion import inspect
from lazyt.testing import gradcheck


@pytest.mark.parametrize("shape, dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((3, 5), -1),
                                        ((2, 3, 4), 1), ((4, 1, 300), 2), ((300, 3), 0),
                                        ((2, 1025), 1), ((0, 4), 0), ((3, 0), 1)])
def test_float_values_match_numpy(device, rng, check, shape, dim):
    # float32 running sums associate differently on a GPU (a tree per tile) than numpy's loop
    x = rng.standard_normal(shape).astype(np.float32)
    check(lazyt.tensor(x, device=device).cumsum(dim), np.cumsum(x, axis=dim),
          rtol=1e-4, atol=1e-4)


def test_views_and_function_form(device, rng, check):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    t = lazyt.tensor(x, device=device)
    check(lazyt.cumsum(t.T, 0), np.cumsum(x.T, axis=0), rtol=1e-5, atol=1e-5)
    check(t[:, ::2].cumsum(1), np.cumsum(x[:, ::2], axis=1), rtol=1e-5, atol=1e-5)
    check(t[1:, 1:].cumsum(0), np.cumsum(x[1:, 1:], axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.bool_])
def test_integers_and_bools_sum_in_int64(device, check, dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    check(lazyt.tensor(x, device=device).cumsum(1), np.cumsum(x, axis=1, dtype=np.int64))


def test_dtype_argument_casts_first(device, check):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    check(lazyt.tensor(x, device=device).cumsum(0, dtype=lazyt.float32),
          np.cumsum(x.astype(np.float32), axis=0))


def test_float16_sums_in_float32(rng, check):
    x = rng.uniform(0.5, 1.0, 3000).astype(np.float16)
    want = np.cumsum(x.astype(np.float32)).astype(np.float16)
    check(lazyt.tensor(x).cumsum(0), want, rtol=1e-3, atol=0)


def test_zero_d(device, check):
    check(lazyt.tensor(2.5, device=device).cumsum(0), np.float32(2.5))
    check(lazyt.tensor(3, device=device).cumsum(-1), np.int64(3))


def test_dim_errors_leave_the_runtime_usable(device):
    t = lazyt.ones(2, 3, device=device)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="cumsum"):
        t.cumsum(2)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="cumsum"):
        lazyt.cumsum(t, -3)
    np.testing.assert_array_equal(t.cumsum(1).numpy(), [[1, 2, 3], [1, 2, 3]])


def test_one_opaque_op_between_fused_blocks():
    x = lazyt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    with inspect() as report:
        y = ((x * 2 + 1).cumsum(1).exp() - 1).numpy()
    assert report.opaque_ops == ["cumsum"]
    assert [b.ops for b in report.blocks] == [("mul", "add"), ("exp", "sub")]
    np.testing.assert_allclose(y, np.exp(np.cumsum(np.arange(12).reshape(3, 4) * 2 + 1,
                                                    axis=1)) - 1, rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_fused_and_eager_agree(rng, dim):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    outs = []
    for dev in (lazyt.device("cpu"), lazyt.device("cpu", fusion=False)):
        t = lazyt.tensor(x, device=dev)
        outs.append(((t.sigmoid() * 3).cumsum(dim) * t).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("shape, dim", [((6,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1)])
def test_gradcheck(shape, dim, rng):
    for dev in (lazyt.device("cpu"), lazyt.device("cpu", fusion=False),
                lazyt.device("cpu", checkpointing="none")):
        x = lazyt.tensor(rng.uniform(-1, 1, shape), device=dev).require_grad()
        assert gradcheck(lambda a: a.cumsum(dim) * a, [x])


def test_gradient_values():
    x = lazyt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).require_grad()
    w = lazyt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    g = (x.cumsum(1) * w).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [[6, 5, 3], [15, 11, 6]])
    g = (x.cumsum(0) * w).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [[5, 7, 9], [4, 5, 6]])
