"""The ranking, embedding and likelihood losses of `lazyt.nn.functional` and their modules:
values against numpy references written here on every device, float64 gradients on cpu,
reductions, errors, and torch where installed."""
import math

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt import nn
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

RNG = np.random.default_rng(7)
A = RNG.standard_normal((6, 4))
B = RNG.standard_normal((6, 4))
C = RNG.standard_normal((6, 4))
Y = np.sign(RNG.standard_normal((6, 4)))
Y1 = np.sign(RNG.standard_normal(6))
LABELS = (RNG.random((6, 4)) > 0.5).astype(np.float64)
COUNTS = np.floor(np.abs(B) * 3)
VAR = np.abs(C) + 0.1


def softplus(x):
    return np.logaddexp(0, x)


def dist(x, y, p=2.0, eps=1e-6):
    return (np.abs(x - y + eps) ** p).sum(-1) ** (1 / p)


def cos(x, y):
    eps = 1e-12
    return (x * y).sum(-1) / np.sqrt((x * x).sum(-1) + eps) / np.sqrt((y * y).sum(-1) + eps)


def stirling(y):
    return np.where(y > 1, y * np.log(np.where(y > 1, y, 2)) - y +
                    0.5 * np.log(2 * math.pi * np.where(y > 1, y, 2)), 0)


# name: (lazyt fn of tensors, numpy reference of float64 arrays (elementwise loss), inputs)
CASES = {
    "margin_ranking": (lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.3, reduction="none"),
                       lambda a, b, y: np.maximum(0, -y * (a - b) + 0.3), (A, B, Y)),
    "hinge_embedding": (lambda a, y: F.hinge_embedding_loss(a, y, margin=0.5, reduction="none"),
                        lambda a, y: np.where(y == 1, a, np.maximum(0, 0.5 - a)), (A, Y)),
    "soft_margin": (lambda a, y: F.soft_margin_loss(a, y, reduction="none"),
                    lambda a, y: softplus(-y * a), (A, Y)),
    "multilabel_soft_margin": (
        lambda a, y: F.multilabel_soft_margin_loss(a, y, reduction="none"),
        lambda a, y: (y * softplus(-a) + (1 - y) * softplus(a)).mean(-1), (A, LABELS)),
    "cosine_embedding": (
        lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=0.2, reduction="none"),
        lambda a, b, y: np.where(y == 1, 1 - cos(a, b), np.maximum(0, cos(a, b) - 0.2)),
        (A, B, Y1)),
    "triplet_margin": (lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"),
                       lambda a, p, n: np.maximum(0, 1 + dist(a, p) - dist(a, n)), (A, B, C)),
    "triplet_margin_swap_p1": (
        lambda a, p, n: F.triplet_margin_loss(a, p, n, p=1, swap=True, reduction="none"),
        lambda a, p, n: np.maximum(0, 1 + dist(a, p, 1) -
                                   np.minimum(dist(a, n, 1), dist(p, n, 1))), (A, B, C)),
    "poisson_nll": (lambda x, y: F.poisson_nll_loss(x, y, reduction="none"),
                    lambda x, y: np.exp(x) - y * x, (A, COUNTS)),
    "poisson_nll_full": (
        lambda x, y: F.poisson_nll_loss(x, y, log_input=False, full=True, reduction="none"),
        lambda x, y: x - y * np.log(x + 1e-8) + stirling(y), (VAR, COUNTS)),
    "gaussian_nll": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="none"),
                     lambda x, y, v: 0.5 * (np.log(v) + (x - y) ** 2 / v), (A, B, VAR)),
    "gaussian_nll_per_sample_full": (
        lambda x, y, v: F.gaussian_nll_loss(x, y, v[:, 0], full=True, reduction="none"),
        lambda x, y, v: 0.5 * (np.log(v[:, :1]) + (x - y) ** 2 / v[:, :1] + math.log(2 * math.pi)),
        (A, B, VAR)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values(device, check, name):
    fn, ref, inputs = CASES[name]
    want = ref(*inputs)
    got = fn(*[lazyt.tensor(x.astype(np.float32), device=device) for x in inputs])
    check(got, want.astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["margin_ranking", "soft_margin", "cosine_embedding",
                                  "triplet_margin", "poisson_nll", "gaussian_nll",
                                  "multilabel_soft_margin"])
def test_reductions_and_gradients_float64(name):
    fn, ref, inputs = CASES[name]
    ts = [lazyt.tensor(x) for x in inputs]
    ts[0] = ts[0].require_grad()
    assert gradcheck(lambda x: fn(x, *ts[1:]), [ts[0]])
    elem = ref(*inputs)
    mod = {"none": None, "mean": elem.mean(), "sum": elem.sum()}
    for reduction in ("mean", "sum"):
        f = getattr(F, {"margin_ranking": "margin_ranking_loss",
                        "soft_margin": "soft_margin_loss",
                        "cosine_embedding": "cosine_embedding_loss",
                        "triplet_margin": "triplet_margin_loss",
                        "poisson_nll": "poisson_nll_loss", "gaussian_nll": "gaussian_nll_loss",
                        "multilabel_soft_margin": "multilabel_soft_margin_loss"}[name])
        kw = {"margin_ranking": dict(margin=0.3), "cosine_embedding": dict(margin=0.2)}.get(
            name, {})
        got = f(*ts, reduction=reduction, **kw)
        np.testing.assert_allclose(got.numpy(), mod[reduction], rtol=1e-10)


def test_modules_match_the_functions():
    a, b, c = (lazyt.tensor(x.astype(np.float32)) for x in (A, B, C))
    y, y1 = lazyt.tensor(Y.astype(np.float32)), lazyt.tensor(Y1.astype(np.float32))
    v = lazyt.tensor(VAR.astype(np.float32))
    pairs = [
        (nn.MarginRankingLoss(0.3)(a, b, y), F.margin_ranking_loss(a, b, y, 0.3)),
        (nn.HingeEmbeddingLoss(0.5, "sum")(a, y), F.hinge_embedding_loss(a, y, 0.5, "sum")),
        (nn.SoftMarginLoss()(a, y), F.soft_margin_loss(a, y)),
        (nn.MultiLabelSoftMarginLoss()(a, y), F.multilabel_soft_margin_loss(a, y)),
        (nn.CosineEmbeddingLoss(0.2)(a, b, y1), F.cosine_embedding_loss(a, b, y1, 0.2)),
        (nn.TripletMarginLoss(swap=True)(a, b, c), F.triplet_margin_loss(a, b, c, swap=True)),
        (nn.PoissonNLLLoss()(a, b), F.poisson_nll_loss(a, b)),
        (nn.GaussianNLLLoss(full=True)(a, b, v), F.gaussian_nll_loss(a, b, v, full=True)),
    ]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("call,err", [
    (lambda a: F.margin_ranking_loss(a, a, lazyt.ones(5)), lazyt.ShapeError),
    (lambda a: F.soft_margin_loss(a, a, reduction="avg"), lazyt.InvalidArgumentError),
    (lambda a: F.cosine_embedding_loss(a, a, lazyt.ones(4)), lazyt.ShapeError),
    (lambda a: F.triplet_margin_loss(a, a, a[:2]), lazyt.ShapeError),
    (lambda a: F.gaussian_nll_loss(a, a, lazyt.ones(3)), lazyt.ShapeError),
    (lambda a: F.gaussian_nll_loss(a, a, -lazyt.ones((6, 4))), lazyt.InvalidArgumentError),
], ids=["broadcast", "reduction", "cos-target", "triplet-shapes", "var-shape", "var-negative"])
def test_errors(call, err):
    with pytest.raises(err):
        call(lazyt.ones((6, 4)))


def test_gaussian_nll_clamps_the_variance_but_passes_its_gradient():
    v = lazyt.tensor(np.array([1e-9, 0.5])).require_grad()
    x, y = lazyt.tensor(np.array([0.1, 0.2])), lazyt.tensor(np.array([0.0, 0.0]))
    loss = F.gaussian_nll_loss(x, y, v, reduction="sum")
    want = 0.5 * (np.log(1e-6) + 0.01 / 1e-6) + 0.5 * (np.log(0.5) + 0.04 / 0.5)
    np.testing.assert_allclose(loss.item(), want, rtol=1e-12)
    loss.backward()
    g = v.grad.numpy()
    np.testing.assert_allclose(g, [0.5 / 1e-6 - 0.5 * 0.01 / 1e-12, 0.5 / 0.5 - 0.5 * 0.04 / 0.25],
                               rtol=1e-9)


@needs_torch
def test_against_torch():
    T = torch.tensor
    L = lazyt.tensor
    a, b, c = (x.astype(np.float32) for x in (A, B, C))
    y, y1, v = Y.astype(np.float32), Y1.astype(np.float32), VAR.astype(np.float32)
    cnt = COUNTS.astype(np.float32)
    for name, args, kw in [
        ("margin_ranking_loss", (a, b, y), dict(margin=0.3)),
        ("hinge_embedding_loss", (a, y), dict(margin=0.5)),
        ("soft_margin_loss", (a, y), {}),
        ("multilabel_soft_margin_loss", (a, LABELS.astype(np.float32)), {}),
        ("cosine_embedding_loss", (a, b, y1), dict(margin=0.2)),
        ("triplet_margin_loss", (a, b, c), dict(swap=True)),
        ("poisson_nll_loss", (v, cnt), dict(log_input=False, full=True)),
        ("gaussian_nll_loss", (a, b, v), dict(full=True)),
    ]:
        want = getattr(TF, name)(*[T(x) for x in args], **kw).numpy()
        got = getattr(F, name)(*[L(x) for x in args], **kw).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
