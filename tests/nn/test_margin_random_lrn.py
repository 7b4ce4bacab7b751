"""multi_margin_loss, multilabel_margin_loss, rrelu, gumbel_softmax and local_response_norm
(and their modules) against numpy references on every device, gradcheck and torch."""
import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt import nn
from lazyt.errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ref_multi_margin(x, y, p=1, margin=1.0, w=None):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != y[i]:
                h = max(0.0, margin - x[i, y[i]] + x[i, j]) ** p
                out[i] += h * (w[y[i]] if w is not None else 1.0)
    return out / c


def ref_multilabel(x, y):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        ids = []
        for v in y[i]:
            if v == -1:
                break
            ids.append(v)
        for j in ids:
            for k in range(c):
                if k not in ids:
                    out[i] += max(0.0, 1 - (x[i, j] - x[i, k]))
    return out / c


@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.5, True)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multi_margin_loss(device, p, margin, weighted, reduction):
    x, y = r(4, 5), np.array([0, 3, 4, 3])
    w = np.abs(r(5, seed=1)) if weighted else None
    got = F.multi_margin_loss(lazyt.tensor(x, device=device), lazyt.tensor(y, device=device),
                              p, margin, lazyt.tensor(w, device=device) if weighted else None,
                              reduction)
    want = ref_multi_margin(x, y, p, margin, w)
    want = {"none": want, "mean": want.mean(), "sum": want.sum()}[reduction]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    mod = nn.MultiMarginLoss(p, margin, lazyt.tensor(w, device=device) if weighted else None,
                             reduction)
    np.testing.assert_allclose(mod(lazyt.tensor(x, device=device),
                                   lazyt.tensor(y, device=device)).numpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_multi_margin_loss_unbatched_and_errors(device):
    x = lazyt.tensor(r(5), device=device)
    got = F.multi_margin_loss(x, lazyt.tensor(2, device=device), reduction="none")
    assert got.shape == ()
    np.testing.assert_allclose(got.numpy(), ref_multi_margin(r(5)[None], [2])[0], rtol=1e-5)
    xb = lazyt.tensor(r(3, 5), device=device)
    if device.type == "cpu":
        with pytest.raises(IndexOutOfRangeError, match="multi_margin_loss: target holds"):
            F.multi_margin_loss(xb, lazyt.tensor([0, 5, 1], device=device))
    with pytest.raises(InvalidArgumentError, match="p must be 1 or 2"):
        F.multi_margin_loss(xb, lazyt.tensor([0, 1, 1], device=device), p=3)
    with pytest.raises(ShapeError, match="multi_margin_loss: target"):
        F.multi_margin_loss(xb, lazyt.tensor([0, 1], device=device))
    with pytest.raises(DTypeError, match="integer"):
        F.multi_margin_loss(xb, lazyt.tensor([0.0, 1.0, 1.0], device=device))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(device, reduction):
    x = r(3, 4)
    y = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 2, 0, 0]])
    got = F.multilabel_margin_loss(lazyt.tensor(x, device=device),
                                   lazyt.tensor(y, device=device), reduction)
    want = ref_multilabel(x, y)
    want = {"none": want, "mean": want.mean(), "sum": want.sum()}[reduction]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    got1 = nn.MultiLabelMarginLoss()(lazyt.tensor(x[0], device=device),
                                     lazyt.tensor(y[0], device=device))
    np.testing.assert_allclose(got1.numpy(), ref_multilabel(x[:1], y[:1])[0], rtol=1e-5)
    with pytest.raises(ShapeError, match="multilabel_margin_loss: target"):
        F.multilabel_margin_loss(lazyt.tensor(x, device=device),
                                 lazyt.tensor(y[:, :2], device=device))


def test_rrelu(device):
    x = lazyt.tensor(r(200), device=device)
    ev = F.rrelu(x)
    a = x.numpy()
    np.testing.assert_allclose(ev.numpy(), np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2),
                               rtol=1e-6)
    lazyt.manual_seed(3)
    tr = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    neg = a < 0
    slope = tr[neg] / a[neg]
    assert np.all(slope >= 0.1 - 1e-6) and np.all(slope <= 0.3 + 1e-6) and slope.std() > 0
    np.testing.assert_array_equal(tr[~neg], a[~neg])
    m = nn.RReLU(0.1, 0.3)
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), np.where(a >= 0, a, a * 0.2), rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="rrelu: lower"):
        F.rrelu(x, 0.5, 0.1)


def test_gumbel_softmax(device):
    lazyt.manual_seed(0)
    logits = lazyt.tensor(np.log(np.array([[0.7, 0.2, 0.1]] * 4000, np.float32)), device=device)
    soft = F.gumbel_softmax(logits, tau=0.5)
    s = soft.numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)
    freq = h.mean(0)   # a Gumbel-max sample is distributed as softmax(logits)
    np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.03)
    with pytest.raises(InvalidArgumentError, match="tau"):
        F.gumbel_softmax(logits, tau=0)


def test_gumbel_softmax_hard_passes_the_soft_gradient():
    lazyt.manual_seed(1)
    x = lazyt.tensor(r(2, 5)).require_grad()
    w = lazyt.tensor(r(2, 5, seed=1))
    (F.gumbel_softmax(x, hard=True) * w).sum().backward()
    g_hard = x.grad.numpy()
    assert np.abs(g_hard).sum() > 0


def ref_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = x.astype(np.float64) ** 2
    pad = [(0, 0)] * x.ndim
    pad[1] = (size // 2, (size - 1) // 2)
    sp = np.pad(sq, pad)
    tot = sum(sp[:, j:j + c] for j in range(size))
    return x / (k + alpha * tot / size) ** beta


@pytest.mark.parametrize("shape,size", [((2, 6, 5), 3), ((2, 5, 3, 4), 2), ((1, 4, 2, 2, 3), 5)])
def test_local_response_norm(device, shape, size):
    x = r(*shape)
    got = F.local_response_norm(lazyt.tensor(x, device=device), size, 0.1, 0.6, 2.0)
    np.testing.assert_allclose(got.numpy(), ref_lrn(x, size, 0.1, 0.6, 2.0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(nn.LocalResponseNorm(size)(lazyt.tensor(x, device=device))
                               .numpy(), ref_lrn(x, size, 1e-4, 0.75, 1.0), rtol=1e-5)
    with pytest.raises(ShapeError, match="local_response_norm"):
        F.local_response_norm(lazyt.tensor(r(3, 4), device=device), 2)


def test_gradients():
    x = lazyt.tensor(r(3, 4).astype(np.float64)).require_grad()
    y = lazyt.tensor(np.array([1, 0, 3]))
    assert gradcheck(lambda a: F.multi_margin_loss(a, y, p=2, reduction="none"), [x])
    yl = lazyt.tensor(np.array([[1, -1, 0, 0], [2, 0, -1, 0], [3, 1, 0, 2]]))
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, yl, reduction="none"), [x])
    z = lazyt.tensor(r(2, 5, 3).astype(np.float64)).require_grad()
    assert gradcheck(lambda a: F.local_response_norm(a, 3, 0.5, 0.75, 1.0), [z])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = r(4, 6)
    y = np.array([5, 0, 2, 2])
    w = np.abs(r(6, seed=2))
    yl = np.array([[3, 0, -1, 1, 2, 2], [1, 2, 3, 0, 5, 4], [-1, 2, 0, 0, 0, 0],
                   [5, -1, 2, 2, 2, 2]])
    img = r(2, 7, 3, 4)
    pairs = [
        (F.multi_margin_loss(lazyt.tensor(x), lazyt.tensor(y), 2, 0.7, lazyt.tensor(w)),
         tf.multi_margin_loss(torch.tensor(x), torch.tensor(y), 2, 0.7, torch.tensor(w))),
        (F.multilabel_margin_loss(lazyt.tensor(x), lazyt.tensor(yl), reduction="none"),
         tf.multilabel_margin_loss(torch.tensor(x), torch.tensor(yl), reduction="none")),
        (F.local_response_norm(lazyt.tensor(img), 4, 0.3, 0.5, 1.5),
         tf.local_response_norm(torch.tensor(img), 4, 0.3, 0.5, 1.5)),
        (F.rrelu(lazyt.tensor(x)), tf.rrelu(torch.tensor(x))),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
