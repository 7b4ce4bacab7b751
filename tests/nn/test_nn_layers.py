"""Layers against numpy references, on every device stack present."""
import math

import numpy as np
import pytest

import lazyt
from lazyt import nn


def _erf(x):
    return np.vectorize(math.erf)(x)


def test_linear(device, check, rng):
    lin = nn.Linear(4, 3, device=device)
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert w.shape == (3, 4) and np.all(np.abs(w) <= 0.5)  # U(-1/sqrt(4), 1/sqrt(4))
    check(lin(lazyt.tensor(x, device=device)), x @ w.T + b, device=device)
    nobias = nn.Linear(4, 3, bias=False, device=device)
    assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]
    check(nobias(lazyt.tensor(x, device=device)), x @ nobias.weight.numpy().T)


def test_embedding(device, check):
    emb = nn.Embedding(6, 3, padding_idx=0, device=device)
    w = emb.weight.numpy()
    np.testing.assert_array_equal(w[0], 0)
    ids = np.array([[1, 0, 5], [2, 2, 3]])
    check(emb(lazyt.tensor(ids, device=device)), w[ids])
    with pytest.raises(lazyt.DTypeError, match="integer"):
        emb(lazyt.ones(2, device=device))


def _layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def test_layer_norm(device, check, rng):
    ln = nn.LayerNorm(5, eps=1e-5, device=device)
    w = rng.standard_normal(5).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    ln.load_state_dict({"weight": w, "bias": b})
    x = rng.standard_normal((3, 5)).astype(np.float32) * 4 + 1
    check(ln(lazyt.tensor(x, device=device)), _layer_norm(x, w, b, 1e-5), atol=1e-5)


def test_rms_norm(device, check, rng):
    rms = nn.RMSNorm(5, eps=1e-6, device=device)
    w = rng.standard_normal(5).astype(np.float32)
    rms.load_state_dict({"weight": w})
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    check(rms(lazyt.tensor(x, device=device)), _rms_norm(x, w, 1e-6), atol=1e-5)


@pytest.mark.parametrize("make", [lambda: nn.LayerNorm(8), lambda: nn.RMSNorm(8)],
                         ids=["layer_norm", "rms_norm"])
def test_norms_compute_float16_in_float32(make):
    """Values around 300 square to ~9e4, past float16's max (65504): a norm computed in float16
    would return inf/nan; computed in float32 it matches the float32 result."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 8)) * 50 + 300).astype(np.float16)
    norm = make()
    norm.to(lazyt.float16)
    out = norm(lazyt.tensor(x))
    assert out.dtype == lazyt.float16
    ref = make()(lazyt.tensor(x.astype(np.float32))).numpy()
    got = out.numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    # float16 weights with float32 input: the output keeps the input dtype
    assert norm(lazyt.tensor(x.astype(np.float32))).dtype == lazyt.float32


def test_activations(device, check, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32) * 3
    t = lazyt.tensor(x, device=device)
    check(nn.GELU()(t), (0.5 * x * (1 + _erf(x / np.sqrt(2)))).astype(np.float32), atol=1e-5)
    tanh_ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    check(nn.GELU(approximate="tanh")(t), tanh_ref.astype(np.float32), atol=1e-5)
    check(nn.SiLU()(t), (x / (1 + np.exp(-x))).astype(np.float32), atol=1e-5)
    check(nn.ReLU()(t), np.maximum(x, 0))
    with pytest.raises(lazyt.LazytError, match="approximate"):
        nn.GELU(approximate="fast")


def test_dropout(device):
    x = lazyt.ones(200, 50, device=device)
    drop = nn.Dropout(0.25)
    lazyt.manual_seed(7)
    a = drop(x).numpy()
    lazyt.manual_seed(7)
    b = drop(x).numpy()
    np.testing.assert_array_equal(a, b)  # same seed, same mask
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.02
    drop.eval()
    assert drop(x) is x
    assert nn.Dropout(0.0)(x) is x
    np.testing.assert_array_equal(nn.Dropout(1.0)(x).numpy(), 0)
    with pytest.raises(lazyt.LazytError):
        nn.Dropout(1.5)


def test_identity_sequential_and_module_list(device, check, rng):
    seq = nn.Sequential(nn.Linear(3, 4, device=device), nn.ReLU(), nn.Identity(),
                        nn.Linear(4, 2, device=device))
    x = rng.standard_normal((5, 3)).astype(np.float32)
    h = np.maximum(x @ seq[0].weight.numpy().T + seq[0].bias.numpy(), 0)
    check(seq(lazyt.tensor(x, device=device)), h @ seq[3].weight.numpy().T + seq[3].bias.numpy(),
          atol=1e-5)
    assert len(seq) == 4 and isinstance(seq[-1], nn.Linear) and len(seq[1:3]) == 2
    ml = nn.ModuleList([nn.Identity()])
    ml.append(nn.ReLU()).extend([nn.SiLU()])
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Identity", "ReLU", "SiLU"]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3"]
    del ml[1]
    assert [type(m).__name__ for m in ml] == ["Tanh", "ReLU", "SiLU"]
    with pytest.raises(IndexError):
        ml[3]
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Linear(1, 1)
    assert list(md) == ["a", "b"] and "b" in md
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
