"""Convolutions (`lazyt.nn.functional.conv*d`, `conv_transpose*d` and the `nn.Conv*` modules):
values against numpy references written here (loops over output positions) on every device,
output shapes for stride/padding/dilation/groups/"same"/output_padding, float64 gradients on
cpu, modules (parameters, init, repr), errors, and torch where installed."""
import itertools
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


# ---------------------------------------------------------------------- numpy references
def _nd(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of x (N, C, *S) by w (O, C/groups, *k), one output position at a
    time; padding is an int, a tuple, or (before, after) pairs per dim."""
    n = x.ndim - 2
    stride, dilation = _nd(stride, n), _nd(dilation, n)
    kernel = w.shape[2:]
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        pads = [(t // 2, t - t // 2) for t in total]
    elif padding == "valid":
        pads = [(0, 0)] * n
    else:
        pads = [(p, p) for p in _nd(padding, n)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(n)]
    o_ch, cg = w.shape[0], w.shape[1]
    og = o_ch // groups
    y = np.zeros((x.shape[0], o_ch, *out))
    for pos in itertools.product(*(range(o) for o in out)):
        window = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                       for p, s, d, k in zip(pos, stride, dilation, kernel))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            wg = w[g * og:(g + 1) * og]
            y[(slice(None), slice(g * og, (g + 1) * og)) + pos] = \
                np.tensordot(patch, wg, axes=(list(range(1, n + 2)), list(range(1, n + 2))))
    if b is not None:
        y += b.reshape((1, -1) + (1,) * n)
    return y


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                      dilation=1):
    """Transposed convolution by its definition: every input element scatters x * w into the
    full output, which is then cropped by `padding` (output_padding adds at the end)."""
    n = x.ndim - 2
    stride, padding = _nd(stride, n), _nd(padding, n)
    output_padding, dilation = _nd(output_padding, n), _nd(dilation, n)
    kernel = w.shape[2:]
    cin_g, og = x.shape[1] // groups, w.shape[1]
    full = [(i - 1) * s + d * (k - 1) + 1 + op
            for i, s, d, k, op in zip(x.shape[2:], stride, dilation, kernel, output_padding)]
    y = np.zeros((x.shape[0], og * groups, *full))
    for pos in itertools.product(*(range(i) for i in x.shape[2:])):
        for off in itertools.product(*(range(k) for k in kernel)):
            at = tuple(p * s + o * d for p, s, o, d in zip(pos, stride, off, dilation))
            for g in range(groups):
                xin = x[(slice(None), slice(g * cin_g, (g + 1) * cin_g)) + pos]  # (N, Cg)
                wg = w[(slice(g * cin_g, (g + 1) * cin_g), slice(None)) + off]  # (Cg, Og)
                y[(slice(None), slice(g * og, (g + 1) * og)) + at] += xin @ wg
    crop = tuple(slice(p, f - op - p + op) for p, f, op in zip(padding, full, output_padding))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * n)
    return y


def _arrays(rng, *shapes):
    return [rng.standard_normal(s) for s in shapes]


def _t(a, device, dtype=lazyt.float32):
    return lazyt.tensor(np.asarray(a), dtype=dtype, device=device)


# ---------------------------------------------------------------------- conv values
# (input shape, weight shape, kwargs)
CONV2D = {
    "plain": ((2, 3, 5, 6), (4, 3, 3, 3), {}),
    "stride_pad": ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=2, padding=1)),
    "asym": ((1, 2, 7, 8), (3, 2, 3, 2), dict(stride=(2, 3), padding=(2, 1), dilation=(1, 2))),
    "dilation": ((1, 2, 8, 7), (2, 2, 3, 3), dict(dilation=2, padding=2)),
    "groups": ((2, 4, 5, 5), (6, 2, 3, 3), dict(groups=2, padding=1)),
    "depthwise": ((1, 3, 5, 4), (6, 1, 2, 2), dict(groups=3, stride=2)),
    "same_even": ((1, 2, 5, 6), (3, 2, 4, 2), dict(padding="same")),
    "same_dilated": ((1, 2, 6, 5), (2, 2, 3, 2), dict(padding="same", dilation=(2, 3))),
    "valid": ((1, 2, 4, 5), (2, 2, 2, 3), dict(padding="valid")),
    "one_by_one": ((2, 3, 4, 4), (5, 3, 1, 1), {}),
    "kernel_eq_input": ((1, 2, 3, 3), (2, 2, 3, 3), {}),
}


@pytest.mark.parametrize("case", sorted(CONV2D))
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
def test_conv2d_values(device, case, with_bias):
    xs, ws, kw = CONV2D[case]
    rng = np.random.default_rng(0)
    x, w, b = _arrays(rng, xs, ws, (ws[0],))
    b = b if with_bias else None
    got = F.conv2d(_t(x, device), _t(w, device), None if b is None else _t(b, device), **kw)
    want = np_conv(x, w, b, **kw)
    assert got.shape == want.shape and got.dtype == lazyt.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, dict(stride=2, padding=1), dict(dilation=2, groups=2),
                                dict(padding="same")], ids=str)
def test_conv1d_values(device, kw):
    rng = np.random.default_rng(1)
    x, w, b = _arrays(rng, (2, 4, 9), (6, 4 // kw.get("groups", 1), 3), (6,))
    got = F.conv1d(_t(x, device), _t(w, device), _t(b, device), **kw)
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, b, **kw), rtol=1e-5, atol=1e-5)


def test_conv3d_values(device):
    rng = np.random.default_rng(2)
    x, w, b = _arrays(rng, (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,))
    kw = dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1))
    got = F.conv3d(_t(x, device), _t(w, device), _t(b, device), **kw)
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, b, **kw), rtol=1e-5, atol=1e-5)


def test_unbatched_input(device):
    rng = np.random.default_rng(3)
    x, w = _arrays(rng, (3, 5, 5), (2, 3, 3, 3))
    got = F.conv2d(_t(x, device), _t(w, device), padding=1)
    assert got.shape == (2, 5, 5)
    np.testing.assert_allclose(got.numpy(), np_conv(x[None], w, padding=1)[0], rtol=1e-5,
                               atol=1e-5)
    x1, w1 = _arrays(rng, (2, 6), (3, 2, 2))
    got = F.conv1d(_t(x1, device), _t(w1, device), stride=2)
    np.testing.assert_allclose(got.numpy(), np_conv(x1[None], w1, stride=2)[0], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("size,k,s,p,d,want", [
    (7, 3, 1, 0, 1, 5), (7, 3, 2, 0, 1, 3), (7, 3, 2, 1, 1, 4), (8, 3, 3, 1, 2, 2),
    (5, 5, 1, 0, 1, 1), (4, 1, 4, 0, 1, 1), (6, 2, 1, 3, 1, 11),
])
def test_conv_output_shapes(size, k, s, p, d, want):
    x = lazyt.zeros(1, 1, size, size + 1)
    w = lazyt.zeros(1, 1, k, k)
    y = F.conv2d(x, w, stride=s, padding=p, dilation=d)
    assert y.shape == (1, 1, want, (size + 1 + 2 * p - d * (k - 1) - 1) // s + 1)


@pytest.mark.parametrize("k,d", [(1, 1), (2, 1), (3, 1), (4, 2), (5, 3)])
def test_same_padding_keeps_size(k, d):
    x = lazyt.ones(1, 2, 7, 6)
    assert F.conv2d(x, lazyt.ones(3, 2, k, k), padding="same", dilation=d).shape == (1, 3, 7, 6)
    assert F.conv1d(x[0, 0], lazyt.ones(3, 7, k), padding="same", dilation=d).shape == (3, 6)


# ---------------------------------------------------------------------- transposed convolution
CONVT2D = {
    "plain": ((2, 3, 3, 4), (3, 2, 3, 3), {}),
    "stride": ((1, 2, 3, 3), (2, 3, 3, 3), dict(stride=2)),
    "stride_pad_outpad": ((2, 2, 3, 4), (2, 3, 3, 2),
                          dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    "dilation": ((1, 2, 3, 3), (2, 2, 2, 3), dict(dilation=(2, 1), padding=1)),
    "outpad_dilation": ((1, 1, 3, 3), (1, 2, 3, 3), dict(dilation=3, output_padding=2)),
    "groups": ((1, 4, 3, 3), (4, 3, 2, 2), dict(groups=2, stride=2, padding=1)),
    "big_padding": ((1, 2, 4, 4), (2, 1, 3, 3), dict(padding=2, stride=2)),
}


@pytest.mark.parametrize("case", sorted(CONVT2D))
def test_conv_transpose2d_values(device, case):
    xs, ws, kw = CONVT2D[case]
    rng = np.random.default_rng(4)
    x, w, b = _arrays(rng, xs, ws, (ws[1] * kw.get("groups", 1),))
    got = F.conv_transpose2d(_t(x, device), _t(w, device), _t(b, device), **kw)
    want = np_conv_transpose(x, w, b, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, dict(stride=3, padding=1, output_padding=2),
                                dict(groups=2, dilation=2)], ids=str)
def test_conv_transpose1d_values(device, kw):
    rng = np.random.default_rng(5)
    x, w = _arrays(rng, (2, 4, 5), (4, 3, 3))
    got = F.conv_transpose1d(_t(x, device), _t(w, device), **kw)
    np.testing.assert_allclose(got.numpy(), np_conv_transpose(x, w, **kw), rtol=1e-5,
                               atol=1e-5)


def test_conv_transpose3d_and_unbatched(device):
    rng = np.random.default_rng(6)
    x, w = _arrays(rng, (2, 2, 3, 2), (2, 2, 2, 2, 3))
    kw = dict(stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 0))
    got = F.conv_transpose3d(_t(x, device), _t(w, device), **kw)
    np.testing.assert_allclose(got.numpy(), np_conv_transpose(x[None], w, **kw)[0],
                               rtol=1e-5, atol=1e-5)


def test_conv_transpose_is_the_input_gradient_of_conv():
    """conv_transpose2d(g, w) is d/dx <conv2d(x, w), g> (the adjoint), on cpu in float64."""
    rng = np.random.default_rng(7)
    x, w = _arrays(rng, (2, 4, 7, 8), (6, 2, 3, 2))
    kw = dict(stride=(2, 3), padding=(1, 1), dilation=(1, 2), groups=2)
    xt = lazyt.tensor(x, dtype=lazyt.float64).require_grad()
    y = F.conv2d(xt, lazyt.tensor(w, dtype=lazyt.float64), **kw)
    g = lazyt.tensor(rng.standard_normal(y.shape), dtype=lazyt.float64)
    grad = y.backward(g).get(xt)
    op = tuple(i - ((o - 1) * s - 2 * p + d * (k - 1) + 1)
               for i, o, s, p, d, k in zip((7, 8), y.shape[2:], (2, 3), (1, 1), (1, 2), (3, 2)))
    back = F.conv_transpose2d(g, lazyt.tensor(w, dtype=lazyt.float64), output_padding=op, **kw)
    np.testing.assert_allclose(back.numpy(), grad.numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- gradients
GRAD_CASES = {
    "conv2d": (F.conv2d, (1, 4, 5, 4), (2, 2, 3, 2), 2,
               dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    "conv2d_same": (F.conv2d, (2, 2, 4, 4), (2, 2, 2, 2), 2, dict(padding="same")),
    "conv1d": (F.conv1d, (2, 2, 7), (3, 2, 3), 3, dict(stride=2, padding=1, dilation=2)),
    "conv3d": (F.conv3d, (1, 2, 3, 3, 3), (2, 1, 2, 2, 2), 2, dict(padding=1, groups=2)),
    "conv_transpose2d": (F.conv_transpose2d, (1, 2, 3, 3), (2, 2, 3, 2), 4,
                         dict(stride=2, padding=1, output_padding=1, groups=2)),
    "conv_transpose1d": (F.conv_transpose1d, (2, 3, 4), (3, 2, 3), 2,
                         dict(stride=3, dilation=2, padding=2)),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradcheck_float64_cpu(case):
    fn, xs, ws, n_out, kw = GRAD_CASES[case]
    rng = np.random.default_rng(8)
    x, w, b = (lazyt.tensor(a, dtype=lazyt.float64).require_grad()
               for a in _arrays(rng, xs, ws, (n_out,)))
    assert gradcheck(lambda x, w, b: fn(x, w, b, **kw), [x, w, b])


def test_gradients_every_device(device):
    """Gradients of x, weight and bias against float64 finite differences (taken on cpu)."""
    rng = np.random.default_rng(9)
    x, w, b = (_t(a, device).require_grad() for a in _arrays(rng, (1, 2, 4, 5), (3, 2, 2, 3),
                                                             (3,)))
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1), [x, w, b])


# ---------------------------------------------------------------------- modules
def test_conv_modules_parameters_and_forward(device):
    lazyt.manual_seed(0)
    m = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, device=device)
    assert m.weight.shape == (6, 2, 3, 2) and m.bias.shape == (6,)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert m.weight.device == device and m.weight.dtype == lazyt.float32
    x = np.random.default_rng(10).standard_normal((2, 4, 5, 5))
    got = m(_t(x, device))
    want = np_conv(x, m.weight.numpy().astype(np.float64), m.bias.numpy().astype(np.float64),
                   stride=2, padding=1, groups=2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    grads = got.sum().backward()
    assert grads.get(m.weight).shape == m.weight.shape
    assert grads.get(m.bias).shape == m.bias.shape


def test_conv_transpose_module_forward_and_output_size(device):
    lazyt.manual_seed(1)
    m = nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, device=device)
    assert m.weight.shape == (2, 4, 3, 3) and m.bias.shape == (4,)
    x = np.random.default_rng(11).standard_normal((1, 2, 3, 4))
    w, b = m.weight.numpy().astype(np.float64), m.bias.numpy().astype(np.float64)
    np.testing.assert_allclose(m(_t(x, device)).numpy(),
                               np_conv_transpose(x, w, b, stride=2, padding=1),
                               rtol=1e-5, atol=1e-5)
    y = m(_t(x, device), output_size=(6, 8))
    assert y.shape == (1, 4, 6, 8)
    np.testing.assert_allclose(y.numpy(), np_conv_transpose(x, w, b, stride=2, padding=1,
                                                            output_padding=1),
                               rtol=1e-5, atol=1e-5)
    assert m(_t(x, device), output_size=[1, 4, 5, 7]).shape == (1, 4, 5, 7)
    with pytest.raises(lazyt.ShapeError, match="ConvTranspose2d: requested an output size"):
        m(_t(x, device), output_size=(7, 7))


@pytest.mark.parametrize("cls,args,shape,fan_in", [
    (nn.Conv1d, (3, 5, 4), (5, 3, 4), 12),
    (nn.Conv2d, (4, 6, (2, 3)), (6, 4, 2, 3), 24),
    (nn.Conv2d, (4, 6, 3, 1, 0, 1, 2), (6, 2, 3, 3), 18),
    (nn.Conv3d, (2, 3, 2), (3, 2, 2, 2, 2), 16),
    (nn.ConvTranspose1d, (3, 4, 3), (3, 4, 3), 12),
    (nn.ConvTranspose2d, (4, 6, 2, 1, 0, 0, 2), (4, 3, 2, 2), 12),
    (nn.ConvTranspose3d, (2, 2, 2), (2, 2, 2, 2, 2), 16),
])
def test_default_init_is_torchs(cls, args, shape, fan_in):
    """kaiming_uniform(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias,
    fan_in = weight.shape[1] * prod(kernel_size), drawn from lazyt's generator."""
    lazyt.manual_seed(3)
    m = cls(*args)
    assert m.weight.shape == shape
    bound = 1 / math.sqrt(fan_in)
    for p in (m.weight.numpy(), m.bias.numpy()):
        assert np.all(np.abs(p) <= bound) and np.abs(p).max() > 0.3 * bound
    lazyt.manual_seed(3)
    np.testing.assert_array_equal(cls(*args).weight.numpy(), m.weight.numpy())


def test_module_dtype_and_no_bias():
    m = nn.Conv1d(2, 3, 2, bias=False, dtype=lazyt.float64)
    assert m.bias is None and m.weight.dtype == lazyt.float64
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert m(lazyt.ones(1, 2, 4, dtype=lazyt.float64)).dtype == lazyt.float64
    with pytest.raises(lazyt.DTypeError, match="Conv1d: input dtype float32 and weight dtype "
                                               "float64"):
        m(lazyt.ones(1, 2, 4))


@pytest.mark.parametrize("module,text", [
    (lambda: nn.Conv2d(3, 8, 3), "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"),
    (lambda: nn.Conv2d(4, 8, (3, 5), stride=2, padding=1, dilation=2, groups=2, bias=False),
     "Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
     "groups=2, bias=False)"),
    (lambda: nn.Conv1d(2, 2, 3, padding="same"),
     "Conv1d(2, 2, kernel_size=(3,), stride=(1,), padding=same)"),
    (lambda: nn.Conv3d(1, 2, 2), "Conv3d(1, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))"),
    (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1),
     "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    (lambda: nn.ConvTranspose1d(2, 3, 2), "ConvTranspose1d(2, 3, kernel_size=(2,), stride=(1,))"),
])
def test_module_repr(module, text):
    assert repr(module()) == text


def test_module_in_a_trained_sequential():
    lazyt.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(2, 1, 3, stride=2))
    x = lazyt.randn(2, 1, 6, 6)
    opt = lazyt.optim.SGD(model.parameters(), lr=0.1)
    first = None
    for _ in range(3):
        loss = (model(x) ** 2).mean()
        first = loss.item() if first is None else first
        opt.step(loss.backward())
    assert loss.item() < first
    assert sorted(model.state_dict()) == ["0.bias", "0.weight", "2.bias", "2.weight"]


# ---------------------------------------------------------------------- errors
def _err(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_functional_errors():
    x, w = lazyt.ones(1, 4, 5, 5), lazyt.ones(6, 2, 3, 3)
    _err(lazyt.ShapeError, r"conv2d: weight must be 4-D \(out_channels, in_channels/groups, "
         r"kH, kW\), got shape \(6, 2, 3\)", F.conv2d, x, lazyt.ones(6, 2, 3))
    _err(lazyt.ShapeError, r"conv2d: expected a 3-D \(unbatched\) or 4-D \(batched\) input",
         F.conv2d, lazyt.ones(4, 5), w)
    _err(lazyt.ShapeError, r"conv2d: .* with groups=1 expects 2 input channels, got input of "
         r"shape \(1, 4, 5, 5\)", F.conv2d, x, w)
    _err(lazyt.ShapeError, r"conv2d: out_channels \(6, .*\) must be divisible by groups \(4\)",
         F.conv2d, x, lazyt.ones(6, 1, 3, 3), groups=4)
    _err(lazyt.InvalidArgumentError, "conv2d: groups must be a positive int", F.conv2d, x, w,
         groups=0)
    _err(lazyt.ShapeError, r"conv2d: the padded input size per channel \(5, 5\) is smaller than "
         r"the \(dilated\) kernel size \(7, 7\)", F.conv2d, x, lazyt.ones(6, 2, 4, 4), groups=2,
         dilation=2)
    _err(lazyt.InvalidArgumentError, "conv2d: stride must be >= 1", F.conv2d, x, w, groups=2,
         stride=0)
    _err(lazyt.InvalidArgumentError, "conv2d: padding must be >= 0", F.conv2d, x, w, groups=2,
         padding=-1)
    _err(lazyt.InvalidArgumentError, "conv2d: dilation must be an int or a tuple of 2 ints",
         F.conv2d, x, w, groups=2, dilation=(1, 2, 3))
    _err(lazyt.InvalidArgumentError, "conv2d: padding='same' is not supported for strided",
         F.conv2d, x, w, groups=2, padding="same", stride=2)
    _err(lazyt.InvalidArgumentError, "conv2d: padding must be .* 'valid' or 'same', got 'full'",
         F.conv2d, x, w, groups=2, padding="full")
    _err(lazyt.ShapeError, r"conv2d: bias must have shape \(6,\)", F.conv2d, x, w,
         lazyt.ones(4), groups=2)
    _err(lazyt.DTypeError, "conv2d: input must be a floating-point tensor, got int64",
         F.conv2d, lazyt.ones(1, 4, 5, 5, dtype=lazyt.int64), w, groups=2)
    _err(lazyt.DTypeError, "conv2d: input dtype float64 and weight dtype float32",
         F.conv2d, lazyt.ones(1, 4, 5, 5, dtype=lazyt.float64), w, groups=2)
    _err(lazyt.DTypeError, "conv1d: weight must be a lazyt.Tensor", F.conv1d,
         lazyt.ones(1, 2, 3), np.ones((1, 2, 2)))
    _err(lazyt.ShapeError, r"conv_transpose2d: weight \(in_channels, out_channels/groups, kH, "
         r"kW\) of shape \(3, 2, 3, 3\) expects 3 input channels", F.conv_transpose2d, x,
         lazyt.ones(3, 2, 3, 3))
    _err(lazyt.InvalidArgumentError, "conv_transpose2d: output_padding .* must be smaller than "
         "either stride", F.conv_transpose2d, x, lazyt.ones(4, 2, 3, 3), stride=2,
         output_padding=2)
    _err(lazyt.InvalidArgumentError, "conv_transpose1d: padding must be an int",
         F.conv_transpose1d, lazyt.ones(1, 2, 3), lazyt.ones(2, 2, 2), padding="same")
    _err(lazyt.ShapeError, "conv_transpose1d: the output size .* is not positive",
         F.conv_transpose1d, lazyt.ones(1, 2, 2), lazyt.ones(2, 2, 2), padding=2)
    _err(lazyt.ShapeError, r"conv_transpose2d: input channels \(4\) must be divisible by "
         r"groups \(3\)", F.conv_transpose2d, x, lazyt.ones(4, 1, 2, 2), groups=3)
    # every one is a LazytError (no assert, no bare ValueError)
    with pytest.raises(lazyt.LazytError):
        F.conv3d(x, w)


def test_module_errors():
    _err(lazyt.InvalidArgumentError, r"Conv2d: in_channels \(3\) must be divisible by groups",
         nn.Conv2d, 3, 4, 3, groups=2)
    _err(lazyt.InvalidArgumentError, r"Conv2d: out_channels \(3\) must be divisible by groups",
         nn.Conv2d, 4, 3, 3, groups=2)
    _err(lazyt.InvalidArgumentError, "ConvTranspose2d: only padding_mode='zeros'",
         nn.ConvTranspose2d, 2, 2, 3, padding_mode="reflect")
    _err(lazyt.InvalidArgumentError, "Conv1d: padding_mode must be one of", nn.Conv1d, 2, 2, 3,
         padding_mode="mirror")
    _err(lazyt.InvalidArgumentError, "Conv2d: padding='same' is not supported for strided",
         nn.Conv2d, 2, 2, 3, stride=2, padding="same")
    _err(lazyt.InvalidArgumentError, "Conv2d: kernel_size must be >= 1", nn.Conv2d, 2, 2, 0)
    _err(lazyt.InvalidArgumentError, "ConvTranspose2d: output_padding", nn.ConvTranspose2d,
         2, 2, 3, output_padding=1)
    _err(lazyt.ShapeError, r"Conv2d: .* expects 2 input channels", nn.Conv2d(2, 2, 1),
         lazyt.ones(1, 3, 4, 4))


def test_functional_reexports():
    from lazyt.nn import conv
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d"):
        assert getattr(F, name) is getattr(conv, name) and name in F.__all__
    for name in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                 "ConvTranspose3d"):
        assert getattr(nn, name) is getattr(conv, name) and name in nn.__all__


# ---------------------------------------------------------------------- torch
TORCH_CASES = [
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                                groups=2)),
    ("conv2d", (1, 3, 6, 6), (4, 3, 4, 3), dict(padding="same", dilation=(1, 2))),
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(stride=2, padding=2, dilation=2)),
    ("conv3d", (1, 2, 4, 4, 5), (2, 2, 2, 3, 2), dict(stride=(1, 2, 2), padding=1)),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 3, 3, 2),
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2)),
    ("conv_transpose1d", (1, 2, 5), (2, 3, 3), dict(stride=2, padding=1, dilation=2,
                                                    output_padding=1)),
]


@needs_torch
@pytest.mark.parametrize("name,xs,ws,kw", TORCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TORCH_CASES)])
def test_against_torch_values_and_grads(name, xs, ws, kw):
    rng = np.random.default_rng(12)
    transposed = "transpose" in name
    n_out = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    x, w, b = _arrays(rng, xs, ws, (n_out,))
    lx, lw, lb = (lazyt.tensor(a, dtype=lazyt.float64).require_grad() for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = getattr(F, name)(lx, lw, lb, **kw)
    ty = getattr(TF, name)(tx, tw, tb, **kw)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    g = rng.standard_normal(ty.shape)
    grads = y.backward(lazyt.tensor(g, dtype=lazyt.float64))
    ty.backward(torch.tensor(g))
    for lt, tt in ((lx, tx), (lw, tw), (lb, tb)):
        np.testing.assert_allclose(grads.get(lt).numpy(), tt.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)


@needs_torch
def test_module_shapes_and_repr_match_torch():
    for lz, tc in [(nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, bias=False),
                    torch.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, bias=False)),
                   (nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2),
                    torch.nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2)),
                   (nn.Conv1d(2, 3, 3, padding="same", dilation=2),
                    torch.nn.Conv1d(2, 3, 3, padding="same", dilation=2))]:
        assert repr(lz) == repr(tc)
        assert {k: tuple(v.shape) for k, v in lz.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in tc.state_dict().items()}
