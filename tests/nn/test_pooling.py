"""Pooling (`lazyt.nn.functional` max/avg/adaptive-avg pooling, max unpooling and their `nn`
modules): values and indices against numpy references written here (loops over output
positions) on every device, output shapes for stride/padding/dilation/ceil_mode, gradients
(max pooling's to the maximum), modules, errors, and torch where installed. Inputs have no
ties, so max pooling's gradient is the one torch gives."""
import itertools

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


# ---------------------------------------------------------------------- numpy references
def _nd(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _out(size, k, s, p, d, ceil_mode):
    span = d * (k - 1) + 1
    if ceil_mode:
        o = -(-(size + 2 * p - span) // s) + 1
        if (o - 1) * s >= size + p:
            o -= 1
        return o
    return (size + 2 * p - span) // s + 1


def np_max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """(values, flat indices into each input plane) of x (N, C, *S)."""
    n = x.ndim - 2
    k, p, d = _nd(kernel_size, n), _nd(padding, n), _nd(dilation, n)
    s = k if stride is None else _nd(stride, n)
    size = x.shape[2:]
    out = [_out(*a, ceil_mode) for a in zip(size, k, s, p, d)]
    vals = np.full(x.shape[:2] + tuple(out), -np.inf)
    idx = np.zeros(x.shape[:2] + tuple(out), np.int64)
    for pos in itertools.product(*(range(o) for o in out)):
        for off in itertools.product(*(range(v) for v in k)):
            at = [o * st - pp + j * dl for o, st, pp, j, dl in zip(pos, s, p, off, d)]
            if any(a < 0 or a >= sz for a, sz in zip(at, size)):
                continue
            v = x[(slice(None), slice(None)) + tuple(at)]
            better = v > vals[(slice(None), slice(None)) + pos]
            vals[(slice(None), slice(None)) + pos] = np.where(
                better, v, vals[(slice(None), slice(None)) + pos])
            idx[(slice(None), slice(None)) + pos] = np.where(
                better, np.ravel_multi_index(at, size), idx[(slice(None), slice(None)) + pos])
    return vals, idx


def np_avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    n = x.ndim - 2
    k, p = _nd(kernel_size, n), _nd(padding, n)
    s = k if stride is None else _nd(stride, n)
    size = x.shape[2:]
    out = [_out(*a, 1, ceil_mode) for a in zip(size, k, s, p)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*(range(o) for o in out)):
        start = [o * st - pp for o, st, pp in zip(pos, s, p)]
        end = [min(a + kk, sz + pp) for a, kk, sz, pp in zip(start, k, size, p)]
        pool = np.prod([e - a for a, e in zip(start, end)])
        lo = [max(a, 0) for a in start]
        hi = [min(e, sz) for e, sz in zip(end, size)]
        window = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        count = np.prod([b - a for a, b in zip(lo, hi)])
        div = divisor_override or (pool if count_include_pad else count)
        y[(slice(None), slice(None)) + pos] = window.sum(axis=tuple(range(2, 2 + n))) / div
    return y


def np_adaptive_avg_pool(x, out):
    n = x.ndim - 2
    size = x.shape[2:]
    out = [sz if o is None else o for o, sz in zip(_nd(out, n), size)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*(range(o) for o in out)):
        window = tuple(slice(i * sz // o, -(-((i + 1) * sz) // o))
                       for i, sz, o in zip(pos, size, out))
        y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + window].mean(
            axis=tuple(range(2, 2 + n)))
    return y


def distinct(rng, shape):
    """Values without ties (a shuffled grid with noise) so the maxima are unique."""
    v = rng.permutation(int(np.prod(shape))).astype(np.float64) / 4
    return (v + rng.uniform(0.01, 0.2, v.shape)).reshape(shape) - v.size / 8


def _t(a, device, dtype=lazyt.float32):
    return lazyt.tensor(np.asarray(a), dtype=dtype, device=device)


# ---------------------------------------------------------------------- max pooling
MAX2D = {
    "k2": ((2, 3, 6, 5), dict(kernel_size=2)),
    "k3s2p1": ((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    "asym": ((1, 2, 7, 8), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1))),
    "dilation": ((1, 2, 7, 7), dict(kernel_size=2, stride=1, dilation=(2, 3))),
    "ceil": ((1, 2, 7, 6), dict(kernel_size=2, ceil_mode=True)),
    "ceil_pad": ((1, 1, 6, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "ceil_dilation": ((1, 1, 8, 7), dict(kernel_size=2, stride=3, dilation=2, ceil_mode=True)),
}


@pytest.mark.parametrize("case", sorted(MAX2D))
def test_max_pool2d_values_and_indices(device, case):
    shape, kw = MAX2D[case]
    x = distinct(np.random.default_rng(0), shape)
    want, want_idx = np_max_pool(x, **kw)
    y, idx = F.max_pool2d(_t(x, device), return_indices=True, **kw)
    assert y.shape == want.shape and idx.dtype == lazyt.int64
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    np.testing.assert_allclose(F.max_pool2d(_t(x, device), **kw).numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=2, stride=1, padding=1),
                                dict(kernel_size=3, stride=2, dilation=2, ceil_mode=True)],
                         ids=str)
def test_max_pool1d_values_and_indices(device, kw):
    x = distinct(np.random.default_rng(1), (2, 3, 10))
    want, want_idx = np_max_pool(x, **kw)
    y, idx = F.max_pool1d(_t(x, device), return_indices=True, **kw)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), want_idx)


def test_max_pool_unbatched_and_padding_is_minus_inf(device):
    x = -1 - distinct(np.random.default_rng(2), (2, 4, 4)) ** 2  # all negative: padding loses
    y, idx = F.max_pool2d(_t(x, device), 2, stride=1, padding=1, return_indices=True)
    want, want_idx = np_max_pool(x[None], 2, stride=1, padding=1)
    assert y.shape == (2, 5, 5) and idx.shape == (2, 5, 5)
    np.testing.assert_allclose(y.numpy(), want[0], rtol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), want_idx[0])
    assert np.all(y.numpy() < 0)


def test_max_pool_gradient_goes_to_the_maximum(device):
    rng = np.random.default_rng(3)
    x = distinct(rng, (2, 2, 6, 5))
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)
    xt = _t(x, device).require_grad()
    y = F.max_pool2d(xt, **kw)
    g = rng.standard_normal(y.shape)
    grad = y.backward(_t(g, device)).get(xt).numpy()
    _, idx = np_max_pool(x, **kw)
    want = np.zeros((2, 2, 30))
    for i in range(2):
        for c in range(2):  # overlapping windows may share a maximum: the gradients add up
            np.add.at(want[i, c], idx[i, c].ravel(), g[i, c].ravel())
    np.testing.assert_allclose(grad, want.reshape(x.shape), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- average pooling
AVG2D = {
    "k2": ((2, 3, 6, 4), dict(kernel_size=2)),
    "k3s2p1": ((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    "no_pad_count": ((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1,
                                        count_include_pad=False)),
    "ceil": ((1, 2, 7, 5), dict(kernel_size=(2, 3), stride=2, ceil_mode=True)),
    "ceil_pad_nocount": ((1, 1, 6, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                            count_include_pad=False)),
    "ceil_pad_count": ((1, 1, 6, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "divisor": ((1, 2, 5, 5), dict(kernel_size=2, stride=1, padding=1, divisor_override=3)),
}


@pytest.mark.parametrize("case", sorted(AVG2D))
def test_avg_pool2d_values(device, case):
    shape, kw = AVG2D[case]
    x = np.random.default_rng(4).standard_normal(shape)
    want = np_avg_pool(x, **kw)
    y = F.avg_pool2d(_t(x, device), **kw)
    assert y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=2, stride=1, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False)], ids=str)
def test_avg_pool1d_values(device, kw):
    x = np.random.default_rng(5).standard_normal((2, 3, 10))
    np.testing.assert_allclose(F.avg_pool1d(_t(x, device), **kw).numpy(), np_avg_pool(x, **kw),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.avg_pool1d(_t(x[0], device), **kw).numpy(),
                               np_avg_pool(x, **kw)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("out", [(3, 2), 2, (None, 3), (5, 7), (1, 1), (4, None)], ids=str)
def test_adaptive_avg_pool2d_values(device, out):
    x = np.random.default_rng(6).standard_normal((2, 3, 5, 7))
    want = np_adaptive_avg_pool(x, out)
    y = F.adaptive_avg_pool2d(_t(x, device), out)
    assert y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)


def test_adaptive_avg_pool_unbatched_and_1d(device):
    x = np.random.default_rng(7).standard_normal((3, 7, 4))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(_t(x, device), (3, 3)).numpy(),
                               np_adaptive_avg_pool(x[None], (3, 3))[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(_t(x, device), 3).numpy(),
                               np_adaptive_avg_pool(x, 3), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- unpooling
def test_max_unpool2d_inverts_max_pool2d(device):
    x = distinct(np.random.default_rng(8), (2, 2, 6, 4))
    y, idx = F.max_pool2d(_t(x, device), 2, return_indices=True)
    up = F.max_unpool2d(y, idx, 2)
    want = np.where(x == np.repeat(np.repeat(np_max_pool(x, 2)[0], 2, 2), 2, 3), x, 0)
    assert up.shape == x.shape
    np.testing.assert_allclose(up.numpy(), want, rtol=1e-6)


def test_max_unpool2d_output_size_and_gradient(device):
    x = distinct(np.random.default_rng(9), (1, 2, 7, 5))
    y, idx = F.max_pool2d(_t(x, device), 3, stride=2, return_indices=True)
    assert F.max_unpool2d(y, idx, 3, stride=2).shape == (1, 2, 7, 5)
    yt = y.detach().require_grad()
    up = F.max_unpool2d(yt, idx, 3, stride=2, output_size=(1, 2, 8, 6))
    assert up.shape == (1, 2, 8, 6)
    np.testing.assert_allclose(up.numpy().reshape(1, 2, -1)[0, 0, idx.numpy()[0, 0].ravel()],
                               y.numpy()[0, 0].ravel(), rtol=1e-6)
    g = np.random.default_rng(10).standard_normal(up.shape)
    grad = up.backward(_t(g, device)).get(yt).numpy()
    want = np.take_along_axis(g.reshape(1, 2, -1), idx.numpy().reshape(1, 2, -1), 2)
    np.testing.assert_allclose(grad, want.reshape(y.shape), rtol=1e-6)
    # overlapping windows share maxima: each index holds its value once (torch writes it)
    assert len(np.unique(idx.numpy()[0, 0])) < idx.numpy()[0, 0].size
    with pytest.raises(lazyt.ShapeError, match="max_unpool2d: invalid output_size"):
        F.max_unpool2d(y, idx, 3, stride=2, output_size=(9, 5))


def test_max_unpool1d_unbatched(device):
    x = distinct(np.random.default_rng(11), (3, 8))
    y, idx = F.max_pool1d(_t(x, device), 2, return_indices=True)
    up = F.max_unpool1d(y, idx, 2)
    assert up.shape == (3, 8)
    np.testing.assert_allclose(up.numpy().max(-1), x.max(-1), rtol=1e-6)
    assert ((up.numpy() != 0).sum(-1) == 4).all()


# ---------------------------------------------------------------------- gradients
GRAD_CASES = {
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
                   (1, 2, 5, 6)),
    "max_pool2d_dilation": (lambda x: F.max_pool2d(x, 2, stride=1, dilation=2), (1, 1, 5, 5)),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, stride=2, padding=1), (2, 2, 7)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                          count_include_pad=False), (1, 2, 6, 5)),
    "avg_pool2d_divisor": (lambda x: F.avg_pool2d(x, 2, stride=1, divisor_override=3),
                           (1, 1, 4, 4)),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2, padding=1), (2, 2, 5)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (1, 2, 5, 7)),
    "max_unpool2d": (lambda x: F.max_unpool2d(
        x, lazyt.tensor([[[[0, 3], [9, 7]]]]), 2, stride=2), (1, 1, 2, 2)),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradcheck_float64_cpu(case):
    fn, shape = GRAD_CASES[case]
    x = lazyt.tensor(distinct(np.random.default_rng(12), shape),
                     dtype=lazyt.float64).require_grad()
    assert gradcheck(fn, [x])


def test_gradients_every_device(device):
    x = _t(distinct(np.random.default_rng(13), (1, 2, 5, 4)), device).require_grad()
    assert gradcheck(lambda x: F.max_pool2d(x, 2, stride=1, padding=1)
                     + F.avg_pool2d(x, 2, stride=1, padding=1), [x])


# ---------------------------------------------------------------------- modules
def test_modules_match_functions(device):
    x = _t(distinct(np.random.default_rng(14), (2, 3, 6, 7)), device)
    x1 = x.reshape(2, 3, 42)
    pairs = [
        (nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)(x),
         F.max_pool2d(x, 3, 2, 1, ceil_mode=True)),
        (nn.MaxPool1d(4, stride=3, dilation=2)(x1), F.max_pool1d(x1, 4, 3, dilation=2)),
        (nn.AvgPool2d((2, 3), padding=1, count_include_pad=False, divisor_override=None)(x),
         F.avg_pool2d(x, (2, 3), padding=1, count_include_pad=False)),
        (nn.AvgPool1d(3, stride=2, padding=1)(x1), F.avg_pool1d(x1, 3, 2, 1)),
        (nn.AdaptiveAvgPool2d((2, None))(x), F.adaptive_avg_pool2d(x, (2, None))),
        (nn.AdaptiveAvgPool1d(5)(x1), F.adaptive_avg_pool1d(x1, 5)),
    ]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    np.testing.assert_array_equal(nn.MaxUnpool2d(2)(y, idx, output_size=x.shape).numpy(),
                                  F.max_unpool2d(y, idx, 2, output_size=x.shape).numpy())
    y1, idx1 = nn.MaxPool1d(2, return_indices=True)(x1)
    assert nn.MaxUnpool1d(2)(y1, idx1).shape == x1.shape


@pytest.mark.parametrize("module,text", [
    (lambda: nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                              "ceil_mode=False)"),
    (lambda: nn.MaxPool2d((3, 2), stride=1, padding=1, ceil_mode=True),
     "MaxPool2d(kernel_size=(3, 2), stride=1, padding=1, dilation=1, ceil_mode=True)"),
    (lambda: nn.MaxPool1d(3, 2), "MaxPool1d(kernel_size=3, stride=2, padding=0, dilation=1, "
                                 "ceil_mode=False)"),
    (lambda: nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.AdaptiveAvgPool2d((None, 3)), "AdaptiveAvgPool2d(output_size=(None, 3))"),
    (lambda: nn.AdaptiveAvgPool2d(1), "AdaptiveAvgPool2d(output_size=1)"),
    (lambda: nn.MaxUnpool2d(2), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), "
                                "padding=(0, 0))"),
])
def test_module_repr(module, text):
    assert repr(module()) == text


def test_modules_have_no_parameters_and_sit_in_sequential():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    y = model(lazyt.randn(2, 1, 6, 6))
    assert y.shape == (2, 2, 1, 1)
    grads = y.sum().backward()
    assert grads.get(model[0].weight).shape == (2, 1, 3, 3)


# ---------------------------------------------------------------------- errors
def _err(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_errors():
    x = lazyt.ones(1, 2, 5, 5)
    _err(lazyt.InvalidArgumentError, "max_pool2d: padding should be at most half of effective "
         "kernel size", F.max_pool2d, x, 2, padding=2)
    _err(lazyt.InvalidArgumentError, "avg_pool2d: padding should be at most half of kernel "
         "size", F.avg_pool2d, x, 3, padding=2)
    _err(lazyt.InvalidArgumentError, "max_pool2d: stride must be >= 1", F.max_pool2d, x, 2,
         stride=0)
    _err(lazyt.InvalidArgumentError, "max_pool2d: kernel_size must be >= 1", F.max_pool2d, x, 0)
    _err(lazyt.InvalidArgumentError, "avg_pool1d: kernel_size must be an int or a tuple of 1",
         F.avg_pool1d, lazyt.ones(1, 2, 5), (2, 2))
    _err(lazyt.ShapeError, r"max_pool2d: input of shape \(1, 2, 5, 5\) is too small for "
         r"kernel_size \(6, 6\)", F.max_pool2d, x, 6)
    _err(lazyt.ShapeError, r"max_pool1d: expected a 2-D \(unbatched\) or 3-D \(batched\) input",
         F.max_pool1d, x, 2)
    _err(lazyt.DTypeError, "avg_pool2d: input must be a floating-point tensor, got int64",
         F.avg_pool2d, lazyt.ones(1, 2, 4, 4, dtype=lazyt.int64), 2)
    _err(lazyt.InvalidArgumentError, "avg_pool2d: divisor_override must not be zero",
         F.avg_pool2d, x, 2, divisor_override=0)
    _err(lazyt.InvalidArgumentError, "adaptive_avg_pool2d: output_size must be positive",
         F.adaptive_avg_pool2d, x, (0, 2))
    _err(lazyt.InvalidArgumentError, "adaptive_avg_pool2d: output_size must be an int, None or "
         "a tuple of 2", F.adaptive_avg_pool2d, x, (1, 2, 3))
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    _err(lazyt.DTypeError, "max_unpool2d: indices must be int64", F.max_unpool2d, y,
         idx.to(lazyt.int32), 2)
    _err(lazyt.ShapeError, "max_unpool2d: indices of shape", F.max_unpool2d, y, idx[:, :1], 2)
    _err(lazyt.ShapeError, "max_unpool2d: output_size must have 2 or 4 elements",
         F.max_unpool2d, y, idx, 2, output_size=(4,))
    _err(lazyt.InvalidArgumentError, "MaxUnpool2d: stride must be >= 1", nn.MaxUnpool2d, 2, 0)
    _err(lazyt.InvalidArgumentError, "MaxPool2d: padding should be at most half",
         nn.MaxPool2d(2, padding=3), x)


# ---------------------------------------------------------------------- torch
TORCH_CASES = [
    ("max_pool2d", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool2d", (1, 2, 8, 7), dict(kernel_size=(2, 3), stride=(3, 1), dilation=(2, 1),
                                      ceil_mode=True)),
    ("max_pool1d", (2, 2, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ("avg_pool2d", (1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                      count_include_pad=False)),
    ("avg_pool2d", (1, 2, 6, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=2, stride=1, divisor_override=3)),
    ("avg_pool1d", (2, 2, 9), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ("adaptive_avg_pool2d", (2, 2, 7, 5), dict(output_size=(3, None))),
    ("adaptive_avg_pool2d", (1, 2, 5, 9), dict(output_size=(4, 4))),
]


@needs_torch
@pytest.mark.parametrize("name,shape,kw", TORCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TORCH_CASES)])
def test_against_torch_values_and_grads(name, shape, kw):
    rng = np.random.default_rng(15)
    x = distinct(rng, shape)
    lx = lazyt.tensor(x, dtype=lazyt.float64).require_grad()
    tx = torch.tensor(x, requires_grad=True)
    y = getattr(F, name)(lx, **kw)
    ty = getattr(TF, name)(tx, **kw)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(ty.shape)
    grad = y.backward(lazyt.tensor(g, dtype=lazyt.float64)).get(lx)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_indices_and_unpool_against_torch():
    x = distinct(np.random.default_rng(16), (2, 2, 7, 6))
    y, idx = F.max_pool2d(lazyt.tensor(x), 3, stride=2, padding=1, return_indices=True)
    ty, tidx = TF.max_pool2d(torch.tensor(x, dtype=torch.float32), 3, stride=2, padding=1,
                             return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    up = F.max_unpool2d(y, idx, 3, stride=2, padding=1, output_size=(7, 6))
    tup = TF.max_unpool2d(ty, tidx, 3, stride=2, padding=1, output_size=(7, 6))
    np.testing.assert_allclose(up.numpy(), tup.numpy(), rtol=1e-6)
    x1 = distinct(np.random.default_rng(17), (2, 9))
    _, i1 = F.max_pool1d(lazyt.tensor(x1), 2, ceil_mode=True, return_indices=True)
    _, t1 = TF.max_pool1d(torch.tensor(x1), 2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(i1.numpy(), t1.numpy())


@needs_torch
def test_module_reprs_match_torch():
    for name, args, kw in [("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True)),
                           ("MaxPool1d", (2,), {}), ("AvgPool2d", ((2, 3),), dict(padding=1)),
                           ("AvgPool1d", (3,), dict(stride=2)),
                           ("AdaptiveAvgPool2d", ((None, 3),), {}),
                           ("MaxUnpool2d", (2,), {})]:
        assert repr(getattr(nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))
