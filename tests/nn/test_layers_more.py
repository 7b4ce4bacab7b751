"""The padding modules, pixel shuffle, PReLU, Bilinear, instance norm and the parameter
containers: values against numpy references on every device, float64 gradients, errors, and
torch's modules where torch is installed."""
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


def arr(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("cls,padding,mode", [
    (nn.ZeroPad2d, (1, 2, 0, 3), "constant"), (nn.ZeroPad1d, 2, "constant"),
    (nn.ReflectionPad1d, (2, 1), "reflect"), (nn.ReflectionPad2d, 1, "reflect"),
    (nn.ReplicationPad2d, (1, 0, 2, 1), "edge"), (nn.ReplicationPad3d, 1, "edge"),
    (nn.CircularPad2d, (1, 1, 2, 0), "wrap"), (nn.CircularPad1d, 1, "wrap")])
def test_padding_modules(device, check, rng, cls, padding, mode):
    dims = cls._dims
    x = arr(rng, 2, 3, *(4, 5, 3)[:dims])  # batched: channels and `dims` padded dims
    pads = (padding,) * 2 * dims if isinstance(padding, int) else padding
    width = [(0, 0)] * 2 + [(pads[2 * k], pads[2 * k + 1]) for k in reversed(range(dims))]
    check(cls(padding)(lazyt.tensor(x, device=device)), np.pad(x, width, mode=mode))


def test_constant_pad_value_and_errors():
    x = np.ones((2, 3), np.float32)
    got = nn.ConstantPad1d((1, 0), 7.5)(lazyt.tensor(x)).numpy()
    np.testing.assert_array_equal(got[:, 0], 7.5)
    with pytest.raises(lazyt.InvalidArgumentError, match="ZeroPad2d"):
        nn.ZeroPad2d((1, 2, 3))
    with pytest.raises(lazyt.ShapeError, match="ReflectionPad2d"):
        nn.ReflectionPad2d(1)(lazyt.ones(4))
    assert repr(nn.ZeroPad2d(2)) == "ZeroPad2d((2, 2, 2, 2))"


def test_pixel_shuffle_round_trip(device, check, rng):
    x = arr(rng, 2, 8, 3, 5)
    y = F.pixel_shuffle(lazyt.tensor(x, device=device), 2)
    want = x.reshape(2, 2, 2, 2, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    check(y, want)
    check(nn.PixelUnshuffle(2)(y), x)
    check(nn.PixelShuffle(2)(lazyt.tensor(x[0], device=device)), want[0])  # no batch dim
    with pytest.raises(lazyt.ShapeError, match="pixel_shuffle"):
        F.pixel_shuffle(lazyt.ones((1, 6, 2, 2)), 2)
    with pytest.raises(lazyt.InvalidArgumentError, match="pixel_unshuffle"):
        F.pixel_unshuffle(lazyt.ones((1, 4, 2, 2)), 0)


def test_prelu(device, check, rng):
    x = arr(rng, 2, 3, 4)
    x[0, 0, 0] = 0.0
    w = np.array([0.1, 0.2, 0.3], np.float32)
    check(F.prelu(lazyt.tensor(x, device=device), lazyt.tensor(w, device=device)),
          np.where(x > 0, x, w[None, :, None] * x))
    m = nn.PReLU(device=device)
    check(m(lazyt.tensor(x, device=device)), np.where(x > 0, x, np.float32(0.25) * x))
    xg = lazyt.tensor(np.array([[-1.0, 0.0, 2.0]])).require_grad()
    wg = lazyt.tensor(np.array([0.3])).require_grad()
    F.prelu(xg, wg).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), [[0.3, 0.3, 1.0]])  # x = 0 takes the weight
    np.testing.assert_allclose(wg.grad.numpy(), [-1.0])
    with pytest.raises(lazyt.ShapeError, match="prelu"):
        F.prelu(lazyt.ones((2, 4)), lazyt.ones(3))


def test_bilinear(device, check, rng):
    a, b = arr(rng, 2, 4, 3), arr(rng, 2, 4, 5)
    w, bias = arr(rng, 6, 3, 5), arr(rng, 6)
    want = np.einsum("...i,kij,...j->...k", a.astype(np.float64), w, b) + bias
    got = F.bilinear(lazyt.tensor(a, device=device), lazyt.tensor(b, device=device),
                     lazyt.tensor(w, device=device), lazyt.tensor(bias, device=device))
    check(got, want.astype(np.float32), atol=1e-5)
    m = nn.Bilinear(3, 5, 6)
    assert m.weight.shape == (6, 3, 5) and m(lazyt.tensor(a), lazyt.tensor(b)).shape == (2, 4, 6)
    xa = lazyt.tensor(rng.standard_normal((2, 3))).require_grad()
    xw = lazyt.tensor(rng.standard_normal((2, 3, 4))).require_grad()
    xb = lazyt.tensor(rng.standard_normal((2, 4)))
    assert gradcheck(lambda a, w: F.bilinear(a, xb, w), [xa, xw])
    with pytest.raises(lazyt.ShapeError, match="bilinear"):
        F.bilinear(lazyt.ones((2, 3)), lazyt.ones((2, 4)), lazyt.ones((6, 3, 5)))


def np_instance(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    m = x.mean(axes, keepdims=True)
    return (x - m) / np.sqrt(x.var(axes, keepdims=True) + eps)


@pytest.mark.parametrize("cls,shape", [(nn.InstanceNorm1d, (2, 3, 7)),
                                       (nn.InstanceNorm2d, (2, 3, 4, 5)),
                                       (nn.InstanceNorm3d, (2, 3, 2, 3, 2))])
def test_instance_norm(device, check, rng, cls, shape):
    x = arr(rng, *shape) * 2 + 1
    check(cls(3, device=device)(lazyt.tensor(x, device=device)),
          np_instance(x.astype(np.float64)).astype(np.float32), atol=1e-5)
    unbatched = cls(3, device=device)(lazyt.tensor(x[0], device=device))
    check(unbatched, np_instance(x[:1].astype(np.float64))[0].astype(np.float32), atol=1e-5)
    m = cls(3, affine=True, track_running_stats=True, device=device)
    m(lazyt.tensor(x, device=device))
    n = np.prod([shape[a] for a in range(2, len(shape))])
    per = x.astype(np.float64).reshape(2, 3, -1)
    check(m.running_mean, (0.1 * per.mean(-1).mean(0)).astype(np.float32), atol=1e-6)
    check(m.running_var, (0.9 + 0.1 * (per.var(-1) * n / (n - 1)).mean(0)).astype(np.float32),
          atol=1e-6)
    m.eval()  # eval mode with tracked statistics normalizes by them
    rm = m.running_mean.numpy().reshape((1, 3) + (1,) * (len(shape) - 2))
    rv = m.running_var.numpy().reshape((1, 3) + (1,) * (len(shape) - 2))
    check(m(lazyt.tensor(x, device=device)), ((x - rm) / np.sqrt(rv + 1e-5)).astype(np.float32),
          atol=1e-5)


def test_parameter_containers():
    pl = nn.ParameterList([nn.Parameter(lazyt.ones(2)) for _ in range(2)])
    pl.append(nn.Parameter(lazyt.zeros(3)))
    assert len(pl) == 3 and pl[-1].shape == (3,)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"scale": nn.Parameter(lazyt.ones(2))})
    pd["shift"] = nn.Parameter(lazyt.zeros(2))
    assert list(pd.keys()) == ["scale", "shift"] and "scale" in pd and len(pd) == 2

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(lazyt.ones(2))])
            self.extra = nn.ParameterDict({"b": nn.Parameter(lazyt.zeros(2))})
    assert set(Model().state_dict()) == {"ws.0", "extra.b"}
    pl.append(lazyt.ones(2))  # a tensor is wrapped in a Parameter, as torch's
    assert isinstance(pl[-1], nn.Parameter) and len(pl) == 4
    assert len(pl[1:3]) == 2
    pl += [lazyt.zeros(1)]
    assert len(pl) == 5
    with pytest.raises(nn.ModuleError, match="ParameterList"):
        pl.append("weights")
    with pytest.raises(nn.ModuleError, match="ParameterDict"):
        pd["a.b"] = nn.Parameter(lazyt.ones(1))
    pairs = nn.ParameterDict([("w", lazyt.ones(2))])  # pairs and plain tensors, as torch's
    assert pairs.w.shape == (2,) and pairs.get("x") is None
    pairs.update({"b": lazyt.zeros(1)})
    assert pairs.pop("b").shape == (1,) and list(pairs) == ["w"]
    with pytest.raises(lazyt.IndexOutOfRangeError):
        pl[5]


@needs_torch
def test_against_torch(rng):
    x = arr(rng, 2, 8, 3, 4)
    T, L = torch.tensor, lazyt.tensor
    w = np.abs(arr(rng, 8))
    pairs = [
        (F.pixel_shuffle(L(x), 2), TF.pixel_shuffle(T(x), 2)),
        (F.pixel_unshuffle(L(x), 1), TF.pixel_unshuffle(T(x), 1)),
        (F.prelu(L(x), L(w)), TF.prelu(T(x), T(w))),
        (F.instance_norm(L(x)), TF.instance_norm(T(x))),
        (nn.ReflectionPad2d((1, 2, 2, 1))(L(x)), torch.nn.ReflectionPad2d((1, 2, 2, 1))(T(x))),
        (nn.CircularPad2d(1)(L(x)), torch.nn.CircularPad2d(1)(T(x))),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- adaptive max pooling
def np_adaptive_max(x, out):
    h, w = x.shape[-2:]
    y = np.empty(x.shape[:-2] + out, x.dtype)
    idx = np.empty(x.shape[:-2] + out, np.int64)
    for i in range(out[0]):
        h0, h1 = (i * h) // out[0], -(-((i + 1) * h) // out[0])
        for j in range(out[1]):
            w0, w1 = (j * w) // out[1], -(-((j + 1) * w) // out[1])
            win = x[..., h0:h1, w0:w1].reshape(x.shape[:-2] + (-1,))
            k = win.argmax(-1)
            y[..., i, j] = win.max(-1)
            idx[..., i, j] = (h0 + k // (w1 - w0)) * w + (w0 + k % (w1 - w0))
    return y, idx


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 9), (3, 4)), ((2, 3, 10, 10), (1, 1)),
                                       ((3, 5, 8), (3, 8)), ((1, 2, 5, 5), (7, 7))])
def test_adaptive_max_pool2d(device, check, rng, shape, out):
    x = arr(rng, *shape)
    y, idx = F.adaptive_max_pool2d(lazyt.tensor(x, device=device), out, return_indices=True)
    want, want_idx = np_adaptive_max(x, out)
    check(y, want)
    check(idx, want_idx)
    check(nn.AdaptiveMaxPool2d(out)(lazyt.tensor(x, device=device)), want)


def test_adaptive_max_pool1d_and_gradient(rng):
    x = arr(rng, 2, 3, 11)
    want, _ = np_adaptive_max(x[..., None, :], (1, 4))
    np.testing.assert_array_equal(F.adaptive_max_pool1d(lazyt.tensor(x), 4).numpy(),
                                  want[..., 0, :])
    xg = lazyt.tensor(rng.standard_normal((1, 2, 5, 6))).require_grad()
    assert gradcheck(lambda t: F.adaptive_max_pool2d(t, (2, 3)), [xg])


# ---------------------------------------------------------------------- channel dropout
@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (40, 30, 5)), (F.dropout2d, (40, 30, 3, 3)),
                                      (F.dropout3d, (20, 30, 2, 2, 2)),
                                      (F.dropout2d, (30, 3, 3))])
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    lazyt.manual_seed(0)
    y = fn(lazyt.ones(shape), 0.25).numpy()
    spatial = {F.dropout1d: 1, F.dropout2d: 2, F.dropout3d: 3}[fn]
    per = y.reshape(shape[:len(shape) - spatial] + (-1,))
    assert (per.min(-1) == per.max(-1)).all()  # a channel is kept or dropped as a whole
    assert abs((per[..., 0] == 0).mean() - 0.25) < 0.06
    np.testing.assert_allclose(per[per != 0], 1 / 0.75, rtol=1e-6)
    assert fn(lazyt.ones(shape), 0.25, training=False).numpy().min() == 1


def test_channel_dropout_modules_and_errors():
    x = lazyt.ones((4, 3, 2, 2))
    m = nn.Dropout2d(0.5).eval()
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())
    with pytest.raises(lazyt.ShapeError, match="dropout2d"):
        F.dropout2d(lazyt.ones((3, 4)))
    with pytest.raises(lazyt.InvalidArgumentError, match="dropout1d"):
        F.dropout1d(lazyt.ones((3, 4)), 1.5)
    lazyt.manual_seed(0)
    y = lazyt.ones((4, 3, 2, 2, 2))
    m3 = nn.Dropout3d(0.5, inplace=True)
    assert repr(m3) == "Dropout3d(p=0.5, inplace=True)"
    assert m3(y) is y                               # whole channels zeroed in place
    per_channel = y.numpy().reshape(12, 8)
    assert all(len(set(row)) == 1 for row in per_channel)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}


def test_alpha_dropout_keeps_mean_and_variance():
    lazyt.manual_seed(1)
    x = lazyt.tensor(np.random.default_rng(2).standard_normal(400000).astype(np.float32))
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert F.alpha_dropout(x, 0.2) is x  # training=False by default, as torch's function
    f = F.feature_alpha_dropout(lazyt.ones((30, 40, 6)), 0.5, training=True).numpy()
    assert (f.min(-1) == f.max(-1)).all()
    assert nn.AlphaDropout(0.3).eval()(x) is x


# ---------------------------------------------------------------------- shuffles, pdist
def test_channel_shuffle_softmax2d_and_pdist(device, check, rng):
    x = arr(rng, 2, 6, 3, 3)
    want = x.reshape(2, 3, 2, 3, 3).transpose(0, 2, 1, 3, 4).reshape(x.shape)
    check(F.channel_shuffle(lazyt.tensor(x, device=device), 3), want)
    check(nn.ChannelShuffle(3)(lazyt.tensor(x, device=device)), want)
    e = np.exp(x - x.max(1, keepdims=True))
    check(nn.Softmax2d()(lazyt.tensor(x, device=device)), e / e.sum(1, keepdims=True),
          atol=1e-6)
    r = arr(rng, 5, 4)
    i, j = np.triu_indices(5, 1)
    d = r[i].astype(np.float64) - r[j]
    for p, ref in [(2.0, np.sqrt((d * d).sum(1))), (1.0, np.abs(d).sum(1)),
                   (math.inf, np.abs(d).max(1))]:
        check(F.pdist(lazyt.tensor(r, device=device), p), ref.astype(np.float32), rtol=1e-5)
    assert F.pdist(lazyt.ones((1, 3))).shape == (0,)


# ---------------------------------------------------------------------- unfold / fold
def np_unfold(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c, k[0] * k[1], oh * ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            patch = xp[:, :, i * d[0]:i * d[0] + s[0] * oh:s[0], j * d[1]:j * d[1] + s[1] * ow:s[1]]
            cols[:, :, i * k[1] + j] = patch.reshape(n, c, -1)
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


@pytest.mark.parametrize("kw,args", [
    (dict(kernel_size=3), ((3, 3),)),
    (dict(kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2)),
     ((2, 3), (1, 2), (1, 1), (2, 2)))])
def test_unfold_and_fold_are_adjoint(device, check, rng, kw, args):
    x = arr(rng, 2, 3, 7, 8)
    cols = F.unfold(lazyt.tensor(x, device=device), **kw)
    check(cols, np_unfold(x, *args))
    check(nn.Unfold(**kw)(lazyt.tensor(x, device=device)), np_unfold(x, *args))
    y = arr(rng, *cols.shape)
    folded = F.fold(lazyt.tensor(y, device=device), (7, 8), **kw)
    # <fold(y), x> = <y, unfold(x)>: fold adds each column back where unfold read it
    lhs = (folded.numpy().astype(np.float64) * x).sum()
    rhs = (y.astype(np.float64) * np_unfold(x, *args)).sum()
    assert lhs == pytest.approx(rhs, rel=1e-5)
    check(nn.Fold((7, 8), **kw)(lazyt.tensor(y, device=device)), folded.numpy())
    with pytest.raises(lazyt.ShapeError, match="fold"):
        F.fold(lazyt.tensor(y[:, :5], device=device), (7, 8), **kw)


@needs_torch
def test_unfold_fold_against_torch(rng):
    x = arr(rng, 2, 3, 7, 8)
    kw = dict(kernel_size=(2, 3), stride=(2, 1), padding=1, dilation=(2, 1))
    tx, lx = torch.tensor(x, requires_grad=True), lazyt.tensor(x).require_grad()
    a, b = TF.unfold(tx, **kw), F.unfold(lx, **kw)
    np.testing.assert_array_equal(b.numpy(), a.detach().numpy())
    fa, fb = TF.fold(a, (7, 8), **kw), F.fold(b, (7, 8), **kw)
    np.testing.assert_allclose(fb.numpy(), fa.detach().numpy(), rtol=1e-6)
    (fa ** 2).sum().backward()
    (fb ** 2).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-5)


def test_padding_module_ranks_follow_torch():
    assert nn.ZeroPad1d(1)(lazyt.ones(3)).shape == (5,)  # constant: any rank >= the dims
    with pytest.raises(lazyt.ShapeError, match="ReplicationPad1d"):
        nn.ReplicationPad1d(1)(lazyt.ones((2, 3, 4, 5)))  # 2-D or 3-D only


def test_circular_padding_with_a_crop_wraps_what_is_left():
    x = lazyt.arange(5)
    np.testing.assert_array_equal(nn.CircularPad1d((-1, 1))(x.reshape(1, 5)).numpy()[0],
                                  [1, 2, 3, 4, 1])
    np.testing.assert_array_equal(F.pad(x, (1, -2), mode="circular").numpy(), [2, 0, 1, 2])


def test_dtype_mismatches_raise():
    with pytest.raises(lazyt.DTypeError, match="prelu"):
        F.prelu(lazyt.ones((2, 3), dtype=lazyt.float64), lazyt.ones(1))
    with pytest.raises(lazyt.DTypeError, match="bilinear"):
        nn.Bilinear(2, 2, 1)(lazyt.ones((1, 2), dtype=lazyt.float64),
                             lazyt.ones((1, 2), dtype=lazyt.float64))


def test_instance_norm_state_dict_has_torchs_keys():
    m = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
