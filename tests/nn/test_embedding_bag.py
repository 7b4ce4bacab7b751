"""embedding_bag / EmbeddingBag (sum, mean, max; 2-D ids or 1-D ids with offsets; padding,
per-sample weights, include_last_offset, empty bags) and Embedding.from_pretrained, against a
numpy reference on every device, gradcheck and torch."""
import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt import nn
from lazyt.errors import DTypeError, InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck

W = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
IDS = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
OFFS = np.array([0, 4, 4, 7])


def ref(ids, offsets, mode, pad=None, psw=None):
    bounds = list(offsets) + [len(ids)]
    out = []
    for b in range(len(offsets)):
        sel = [i for i in range(bounds[b], bounds[b + 1]) if ids[i] != pad]
        rows = W[ids[sel]].astype(np.float64)
        if psw is not None:
            rows = rows * psw[sel][:, None]
        if not sel:
            out.append(np.zeros(3))
        else:
            out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.array(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2])
def test_offsets(device, mode, pad):
    got = F.embedding_bag(lazyt.tensor(IDS, device=device), lazyt.tensor(W, device=device),
                          lazyt.tensor(OFFS, device=device), mode=mode, padding_idx=pad)
    np.testing.assert_allclose(got.numpy(), ref(IDS, OFFS, mode, pad), rtol=1e-5, atol=1e-6)
    last = F.embedding_bag(lazyt.tensor(IDS, device=device), lazyt.tensor(W, device=device),
                           lazyt.tensor(np.append(OFFS, len(IDS)), device=device), mode=mode,
                           padding_idx=pad, include_last_offset=True)
    np.testing.assert_allclose(last.numpy(), got.numpy())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_bags_and_module(device, mode):
    ids = IDS[:8].reshape(2, 4)
    m = nn.EmbeddingBag(10, 3, mode=mode, device=device)
    m.weight = nn.Parameter(lazyt.tensor(W, device=device))
    np.testing.assert_allclose(m(lazyt.tensor(ids, device=device)).numpy(),
                               ref(IDS[:8], [0, 4], mode), rtol=1e-5, atol=1e-6)


def test_per_sample_weights(device):
    psw = np.random.default_rng(1).standard_normal(9).astype(np.float32)
    got = F.embedding_bag(lazyt.tensor(IDS, device=device), lazyt.tensor(W, device=device),
                          lazyt.tensor(OFFS, device=device), mode="sum",
                          per_sample_weights=lazyt.tensor(psw, device=device))
    np.testing.assert_allclose(got.numpy(), ref(IDS, OFFS, "sum", psw=psw), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(InvalidArgumentError, match="per_sample_weights is only supported"):
        F.embedding_bag(lazyt.tensor(IDS, device=device), lazyt.tensor(W, device=device),
                        lazyt.tensor(OFFS, device=device), mode="mean",
                        per_sample_weights=lazyt.tensor(psw, device=device))


def test_errors(device):
    ids, w = lazyt.tensor(IDS, device=device), lazyt.tensor(W, device=device)
    with pytest.raises(InvalidArgumentError, match="needs offsets"):
        F.embedding_bag(ids, w)
    with pytest.raises(InvalidArgumentError, match="offsets must be None"):
        F.embedding_bag(ids.reshape(3, 3), w, lazyt.tensor([0], device=device))
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        F.embedding_bag(ids, w, lazyt.tensor(OFFS, device=device), mode="min")
    with pytest.raises(DTypeError, match="integer"):
        F.embedding_bag(ids.to(lazyt.float32), w, lazyt.tensor(OFFS, device=device))
    with pytest.raises(InvalidArgumentError, match="max_norm"):
        nn.EmbeddingBag(10, 3, max_norm=1.0)
    with pytest.raises(ShapeError, match="weight must be a 2-D"):
        F.embedding_bag(ids, w[0], lazyt.tensor(OFFS, device=device))


def test_gradients_and_from_pretrained():
    w = lazyt.tensor(W.astype(np.float64)).require_grad()
    ids, offs = lazyt.tensor(IDS), lazyt.tensor(OFFS)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda t: F.embedding_bag(ids, t, offs, mode=mode), [w])
    frozen = nn.EmbeddingBag.from_pretrained(lazyt.tensor(W), mode="sum")
    assert not frozen.weight.requires_grad
    np.testing.assert_allclose(frozen(ids, offs).numpy(), ref(IDS, OFFS, "sum"), rtol=1e-5,
                               atol=1e-6)
    e = nn.Embedding.from_pretrained(lazyt.tensor(W), freeze=False, padding_idx=0)
    assert e.weight.requires_grad and e.padding_idx == 0
    np.testing.assert_array_equal(e(lazyt.tensor([3, 0])).numpy(), W[[3, 0]])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    offs = np.append(OFFS, len(IDS))
    for mode in ("sum", "mean", "max"):
        for pad in (None, 4):
            got = F.embedding_bag(lazyt.tensor(IDS), lazyt.tensor(W), lazyt.tensor(offs),
                                  mode=mode, padding_idx=pad, include_last_offset=True)
            want = tf.embedding_bag(torch.tensor(IDS), torch.tensor(W), torch.tensor(offs),
                                    mode=mode, padding_idx=pad, include_last_offset=True)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
