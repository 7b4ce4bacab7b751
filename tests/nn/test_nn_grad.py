"""Gradients through the layers: float64 finite differences (lazyt.testing.gradcheck) with the
parameters passed in through functional_call, and parameter gradients read from Gradients."""
import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.testing import gradcheck


def _float(device):
    """float64 where the backend has it (gradcheck compares float32 gradients otherwise)."""
    return lazyt.float64 if device.type == "cpu" else lazyt.float32


def _leaf(rng, *shape, device, scale=1.0, shift=0.0):
    arr = rng.standard_normal(shape) * scale + shift
    return lazyt.tensor(arr, dtype=_float(device), device=device).require_grad()


@pytest.mark.parametrize("make", [
    lambda d, f: nn.Linear(3, 2, dtype=f, device=d),
    lambda d, f: nn.LayerNorm(4, dtype=f, device=d),
    lambda d, f: nn.RMSNorm(4, dtype=f, device=d),
], ids=["linear", "layer_norm", "rms_norm"])
def test_layer_gradients(make, device, rng):
    m = make(device, _float(device))
    params = dict(m.named_parameters())
    leaves = {k: _leaf(rng, *p.shape, device=device, scale=0.5, shift=1.0)
              for k, p in params.items()}
    width = m.weight.shape[-1]
    x = _leaf(rng, 2, width, device=device)
    keys = list(leaves)

    def fn(x, *ps):
        return nn.functional_call(m, dict(zip(keys, ps)), x)

    assert gradcheck(fn, [x, *leaves.values()])


def test_embedding_gradient_accumulates_repeated_ids(device):
    emb = nn.Embedding(4, 2, dtype=lazyt.float32, device=device)
    ids = lazyt.tensor([1, 3, 1, 1], device=device)
    grads = emb(ids).sum().backward()
    np.testing.assert_array_equal(grads.get(emb.weight).numpy(),
                                  [[0, 0], [3, 3], [0, 0], [1, 1]])


def test_parameter_gradients_from_backward(device, rng):
    lin = nn.Linear(3, 2, device=device)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    grads = (lin(lazyt.tensor(x, device=device)) ** 2).sum().backward()
    y = x @ lin.weight.numpy().T + lin.bias.numpy()
    np.testing.assert_allclose(grads.get(lin.weight).numpy(), 2 * y.T @ x, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(grads.get(lin.bias).numpy(), 2 * y.sum(0), rtol=1e-5, atol=1e-4)
    frozen = nn.Linear(3, 2, device=device)
    frozen.weight.require_grad(False)
    grads = frozen(lazyt.tensor(x, device=device)).sum().backward()
    assert grads.get(frozen.weight) is None and grads.get(frozen.bias) is not None
