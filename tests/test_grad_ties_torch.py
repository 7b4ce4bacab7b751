"""Gradients at ties and bounds against torch: clamp with number and tensor bounds, the
whole-tensor median (shared by tied elements), mode (to its index), and in-place ops on
intermediates."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt

torch = pytest.importorskip("torch")

NAN = float("nan")
CASES = [
    ("clamp numbers", lambda m, x: x.clamp(0.0, 1.0), [0.0, 1.0, 0.5, 2.0, -1.0, NAN]),
    ("clamp min", lambda m, x: x.clamp(min=0.0), [0.0, 1.0, -0.5]),
    ("clamp max", lambda m, x: x.clamp(max=1.0), [0.0, 1.0, 3.0]),
    ("clip", lambda m, x: m.clip(x, -0.5, 0.5), [-0.5, 0.5, 0.0, 2.0]),
    ("clamp_min tensor", lambda m, x: x.clamp_min(m.zeros(4, dtype=m.float64)),
     [0.0, 1.0, -1.0, 0.0]),
    ("clamp tensors", lambda m, x: x.clamp(m.zeros(5, dtype=m.float64),
                                           m.ones(5, dtype=m.float64)),
     [0.0, 1.0, 0.5, 2.0, -1.0]),
    ("median ties", lambda m, x: x.median(), [1.0, 2.0, 2.0, 2.0, 3.0]),
    ("median even", lambda m, x: x.median(), [2.0, 2.0, 1.0, 3.0]),
    ("median NaN", lambda m, x: x.median(), [1.0, NAN, 2.0]),
    ("nanmedian ties", lambda m, x: x.nanmedian(), [2.0, NAN, 2.0, 1.0]),
    ("median dim", lambda m, x: x.reshape(1, 5).median(1).values, [2.0, 2.0, 1.0, 2.0, 3.0]),
    ("mode", lambda m, x: x.mode().values, [1.0, 1.0, 2.0, 3.0]),
    ("relu at NaN and 0", lambda m, x: x.relu(), [1.0, NAN, -3.0, 0.0]),
    ("abs at NaN and 0", lambda m, x: x.abs(), [1.0, NAN, -3.0, 0.0]),
    ("relu_ of an intermediate", lambda m, x: (x * 3).relu_(), [1.0, -2.0, 0.5]),
    ("sigmoid_ of an intermediate", lambda m, x: (x * 3).sigmoid_(), [1.0, -2.0, 0.5]),
    ("mul_ of an intermediate", lambda m, x: (x * 3).mul_(x), [1.0, -2.0, 0.5]),
]


@pytest.mark.parametrize("name,fn,values", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_torch(name, fn, values):
    v = np.array(values)
    x = lazyt.tensor(v, dtype=lazyt.float64).requires_grad_()
    tx = torch.tensor(v, requires_grad=True)
    out, tout = fn(lazyt, x), fn(torch, tx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-14)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
