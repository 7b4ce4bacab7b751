"""3-D pooling (max, average, adaptive, unpooling) and power-average pooling against numpy
loops on every device, torch where installed, and gradcheck."""
import itertools

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt import nn
from lazyt.errors import InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _windows(x, k, s, p, fill):
    """numpy reference windows of (N, C, *sp): yields (out index, window values)."""
    n = len(k)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p], constant_values=fill)
    out = tuple((x.shape[2 + d] + 2 * p[d] - k[d]) // s[d] + 1 for d in range(n))
    for o in itertools.product(*(range(v) for v in out)):
        sl = tuple(slice(o[d] * s[d], o[d] * s[d] + k[d]) for d in range(n))
        yield o, xp[(slice(None), slice(None)) + sl]
    return out


def ref_pool(x, k, s, p, how):
    n = len(k)
    out = tuple((x.shape[2 + d] + 2 * p[d] - k[d]) // s[d] + 1 for d in range(n))
    y = np.zeros(x.shape[:2] + out, np.float64)
    for o, w in _windows(x, k, s, p, -np.inf if how == "max" else 0.0):
        flat = w.reshape(w.shape[0], w.shape[1], -1)
        y[(slice(None), slice(None)) + o] = flat.max(-1) if how == "max" else flat.mean(-1)
    return y


@pytest.mark.parametrize("k,s,p", [((2, 2, 2), (2, 2, 2), (0, 0, 0)),
                                   ((3, 2, 2), (1, 2, 1), (1, 0, 1))])
def test_max_and_avg_pool3d(device, k, s, p):
    x = r(2, 3, 5, 6, 4)
    t = lazyt.tensor(x, device=device)
    np.testing.assert_allclose(F.max_pool3d(t, k, s, p).numpy(), ref_pool(x, k, s, p, "max"),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.AvgPool3d(k, s, p)(t).numpy(), ref_pool(x, k, s, p, "avg"),
                               rtol=1e-5, atol=1e-6)
    assert nn.MaxPool3d(k, s, p)(t[0]).shape == F.max_pool3d(t, k, s, p).shape[1:]


def test_max_pool3d_indices_and_unpool(device):
    x = r(1, 2, 4, 4, 4)
    t = lazyt.tensor(x, device=device)
    y, idx = F.max_pool3d(t, 2, return_indices=True)
    flat = x.reshape(1, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(1, 2, -1), -1)
                                  .reshape(y.shape), y.numpy())
    back = nn.MaxUnpool3d(2)(y, idx)
    assert back.shape == (1, 2, 4, 4, 4)
    want = np.zeros_like(flat)
    np.put_along_axis(want, idx.numpy().reshape(1, 2, -1), y.numpy().reshape(1, 2, -1), -1)
    np.testing.assert_array_equal(back.numpy(), want.reshape(x.shape))


def test_adaptive_pool3d(device):
    x = r(2, 2, 5, 4, 6)
    t = lazyt.tensor(x, device=device)
    got = F.adaptive_avg_pool3d(t, (2, 4, 3)).numpy()
    gmax = nn.AdaptiveMaxPool3d((2, None, 3))(t).numpy()
    for o in itertools.product(range(2), range(4), range(3)):
        sl = []
        for i, (n_in, n_out) in enumerate(zip((5, 4, 6), (2, 4, 3))):
            sl.append(slice((o[i] * n_in) // n_out, -(-((o[i] + 1) * n_in) // n_out)))
        w = x[(slice(None), slice(None)) + tuple(sl)].reshape(2, 2, -1)
        np.testing.assert_allclose(got[(slice(None), slice(None)) + o], w.mean(-1),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gmax[(slice(None), slice(None)) + o], w.max(-1))
    assert nn.AdaptiveAvgPool3d(1)(t).shape == (2, 2, 1, 1, 1)


@pytest.mark.parametrize("p", [2, 3, 1.5])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool(device, p, n):
    x = np.abs(r(2, 3, *([6] * n))) + 0.1 if p == 1.5 else r(2, 3, *([6] * n))
    k, s = (2,) * n, (2,) * n
    t = lazyt.tensor(x, device=device)
    fn = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[n]
    mod = {1: nn.LPPool1d, 2: nn.LPPool2d, 3: nn.LPPool3d}[n]
    total = ref_pool(x.astype(np.float64) ** p, k, s, (0,) * n, "avg") * 2 ** n
    with np.errstate(invalid="ignore"):
        want = np.where(total < 0, np.nan, np.abs(total) ** (1 / p))
    np.testing.assert_allclose(fn(t, p, 2).numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mod(p, 2)(t).numpy(), want, rtol=1e-4, atol=1e-5)


def test_lp_pool_inf_is_the_max_and_bad_p_raises(device):
    x = r(1, 2, 8)
    t = lazyt.tensor(x, device=device)
    np.testing.assert_array_equal(F.lp_pool1d(t, float("inf"), 2).numpy(),
                                  F.max_pool1d(t, 2).numpy())
    with pytest.raises(InvalidArgumentError, match="lp_pool1d: norm_type"):
        F.lp_pool1d(t, 0, 2)
    with pytest.raises(ShapeError, match="max_pool3d"):
        F.max_pool3d(t, 2)


def test_gradients():
    x = lazyt.tensor(r(1, 2, 4, 4, 4).astype(np.float64)).require_grad()
    assert gradcheck(lambda a: F.avg_pool3d(a, 2, 1, 1), [x])
    assert gradcheck(lambda a: F.max_pool3d(a, 2), [x])
    y = lazyt.tensor(np.abs(r(1, 2, 6, 6)).astype(np.float64) + 0.2).require_grad()
    assert gradcheck(lambda a: F.lp_pool2d(a, 3, 2), [y])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = r(2, 3, 6, 5, 7)
    t, tt = lazyt.tensor(x), torch.tensor(x)
    tf = torch.nn.functional
    pairs = [
        (F.max_pool3d(t, 3, 2, 1, ceil_mode=True), tf.max_pool3d(tt, 3, 2, 1, ceil_mode=True)),
        (F.avg_pool3d(t, 3, 2, 1, count_include_pad=False),
         tf.avg_pool3d(tt, 3, 2, 1, count_include_pad=False)),
        (F.avg_pool3d(t, 2, divisor_override=3), tf.avg_pool3d(tt, 2, divisor_override=3)),
        (F.adaptive_avg_pool3d(t, (4, 3, 5)), tf.adaptive_avg_pool3d(tt, (4, 3, 5))),
        (F.adaptive_max_pool3d(t, (4, 3, 5)), tf.adaptive_max_pool3d(tt, (4, 3, 5))),
        (F.lp_pool2d(t[:, :, 0], 2, 3, 2), tf.lp_pool2d(tt[:, :, 0], 2, 3, 2)),
        (F.lp_pool3d(t, 2, 2), tf.lp_pool3d(tt, 2, 2)),
        (F.lp_pool1d(t[:, :, 0, 0], 3, 2), tf.lp_pool1d(tt[:, :, 0, 0], 3, 2)),
    ]
    for got, want in pairs:
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    y, i = F.max_pool3d(t, 2, return_indices=True)
    ty, ti = tf.max_pool3d(tt, 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(F.max_unpool3d(y, i, 2, output_size=x.shape).numpy(),
                                  tf.max_unpool3d(ty, ti, 2, output_size=x.shape).numpy())
