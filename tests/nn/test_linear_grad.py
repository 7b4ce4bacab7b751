"""`linear`'s own gradient rule: x's gradient is g @ weight, the weight's g^T @ x over the
folded rows (in the weight's [out, in] layout, not a transposed view), the bias's g summed back.
Checked by float64 gradchecks for every rank and every set of tracked inputs, against numpy
on each device, and for the layout of the weight gradient on cpu."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt.testing import gradcheck


def _linear(*args):
    return Dispatch.helper("linear", *args)


_CASES = [(bias, tracked) for bias in (True, False)
          for n in (1, 2, 3) for tracked in itertools.combinations("xwb" if bias else "xw", n)]


@pytest.mark.parametrize("xshape", [(3,), (5, 3), (2, 4, 3), (2, 1, 4, 3)])
@pytest.mark.parametrize("bias,tracked", _CASES)
def test_gradcheck_every_rank_and_tracked_set(xshape, bias, tracked):
    rng = np.random.default_rng(len(xshape) * 7 + len(tracked))
    x = lazyt.tensor(rng.standard_normal(xshape), dtype=lazyt.float64,
                     requires_grad="x" in tracked)
    w = lazyt.tensor(rng.standard_normal((2, 3)), dtype=lazyt.float64,
                     requires_grad="w" in tracked)
    b = lazyt.tensor(rng.standard_normal((2,)), dtype=lazyt.float64,
                     requires_grad="b" in tracked)
    assert gradcheck(_linear, (x, w, b) if bias else (x, w))


def test_gradients_match_numpy(device):
    rng = np.random.default_rng(3)
    xs, ws, bs = (rng.standard_normal(s).astype(np.float32) for s in ((2, 6, 5), (4, 5), (4,)))
    gs = rng.standard_normal((2, 6, 4)).astype(np.float32)
    x = lazyt.tensor(xs, device=device, requires_grad=True)
    w = lazyt.tensor(ws, device=device, requires_grad=True)
    b = lazyt.tensor(bs, device=device, requires_grad=True)
    y = _linear(x, w, b)
    grads = (y * lazyt.tensor(gs, device=device)).sum().backward()
    np.testing.assert_allclose(y.numpy(), xs @ ws.T + bs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[x].numpy(), gs @ ws, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[w].numpy(), gs.reshape(-1, 4).T @ xs.reshape(-1, 5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[b].numpy(), gs.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_the_weight_gradient_is_dense_in_the_weights_layout():
    x = lazyt.randn(8, 6)
    w = lazyt.randn(5, 6, requires_grad=True)
    g = _linear(x, w).sum().backward()[w]
    value = lazyt.device("cpu").backend.inner.materialize(g.primitive)
    assert value.shape == (5, 6) and value.flags.c_contiguous


def test_nn_linear_training_step_matches_numpy():
    rng = np.random.default_rng(4)
    layer = lazyt.nn.Linear(5, 3)
    w0, b0 = layer.weight.numpy().copy(), layer.bias.numpy().copy()
    xs = rng.standard_normal((7, 5)).astype(np.float32)
    opt = lazyt.optim.SGD(layer.parameters(), lr=0.1)
    loss = (layer(lazyt.tensor(xs)) ** 2).mean()
    opt.step(loss.backward())
    y = xs @ w0.T + b0
    gy = 2 * y / y.size
    np.testing.assert_allclose(layer.weight.numpy(), w0 - 0.1 * gy.T @ xs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.numpy(), b0 - 0.1 * gy.sum(0), rtol=1e-5, atol=1e-6)
