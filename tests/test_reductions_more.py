"""torch's reductions and statistics as composites (`lazyt/reductions.py`): logsumexp,
var_mean/std_mean, nn.functional.normalize, linspace, sum/prod with dtype=, and the in-place
random fills; values against numpy on every device, float64 gradients on cpu, errors, and
torch where installed."""
import math

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")
pytestmark = pytest.mark.filterwarnings("ignore:(overflow|divide by zero|invalid value):"
                                        "RuntimeWarning")

X = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11) * 0.75


def _t(a, device):
    return lazyt.tensor(np.asarray(a), device=device)


def _f64(shape, seed=0):
    rng = np.random.default_rng(seed)
    return lazyt.tensor(rng.normal(size=shape), dtype=lazyt.float64).require_grad()


def np_logsumexp(a, axis, keepdims=False):
    a = np.asarray(a, np.float64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


# ---------------------------------------------------------------------- logsumexp
@pytest.mark.parametrize("dim, keepdim", [(0, False), (-1, False), (1, True), ((0, 2), False),
                                          ((1, 2), True)])
def test_logsumexp_every_device(device, check, dim, keepdim):
    got = lazyt.logsumexp(_t(X, device), dim, keepdim)
    check(got, np_logsumexp(X, dim, keepdim).astype(np.float32), rtol=1e-5)
    check(_t(X, device).logsumexp(dim, keepdim=keepdim), np_logsumexp(X, dim, keepdim)
          .astype(np.float32), rtol=1e-5)


def test_logsumexp_stability_and_dtypes(device, check):
    big = np.array([[1000.0, 999.0, -1000.0], [-np.inf, -np.inf, -np.inf],
                    [np.inf, 1.0, 2.0]], np.float32)
    check(lazyt.logsumexp(_t(big, device), 1),
          np.array([1000 + math.log(1 + math.exp(-1)), -np.inf, np.inf], np.float32))
    check(lazyt.logsumexp(_t([1, 2, 3], device), 0),
          np.float32(np_logsumexp([1, 2, 3], 0)))                      # ints: default float
    h = np.array([10.0, 11.0, 9.5], np.float16)
    check(lazyt.logsumexp(_t(h, device), 0), np.float16(np_logsumexp(h, 0)))
    check(lazyt.logsumexp(_t(np.zeros((2, 0), np.float32), device), 1),
          np.full(2, -np.inf, np.float32))
    check(lazyt.logsumexp(lazyt.tensor(2.5, device=device), 0), np.float32(2.5))


def test_logsumexp_gradients():
    assert gradcheck(lambda t: lazyt.logsumexp(t, 1), [_f64((3, 4))])
    assert gradcheck(lambda t: t.logsumexp((0, 2), keepdim=True), [_f64((2, 3, 2))])
    x = lazyt.tensor([1000.0, 1000.0, -1000.0], dtype=lazyt.float64).require_grad()
    g = lazyt.logsumexp(x, 0).backward()
    np.testing.assert_allclose(g.get(x).numpy(), [0.5, 0.5, 0.0])        # the softmax


def test_logsumexp_errors():
    with pytest.raises(lazyt.IndexOutOfRangeError):
        lazyt.logsumexp(lazyt.ones(2, 3), 2)
    with pytest.raises(lazyt.DTypeError):
        lazyt.logsumexp([1.0, 2.0], 0)


# ---------------------------------------------------------------------- var_mean, std_mean
def test_var_mean_std_mean_every_device(device, check):
    x = _t(X, device)
    v, m = lazyt.var_mean(x, 1)
    check(v, X.var(1, ddof=1), rtol=1e-5)
    check(m, X.mean(1), rtol=1e-5)
    v, m = lazyt.var_mean(x, (0, 2), keepdim=True, correction=0)
    check(v, X.var((0, 2), keepdims=True), rtol=1e-5)
    check(m, X.mean((0, 2), keepdims=True), rtol=1e-5)
    s, m = lazyt.std_mean(x)
    check(s, np.float32(X.std(ddof=1)), rtol=1e-5)
    check(m, np.float32(X.mean()), rtol=1e-5, atol=1e-6)
    s, m = lazyt.std_mean(x, False)                                    # (input, unbiased)
    check(s, np.float32(X.std()), rtol=1e-5)
    s, m = lazyt.std_mean(x, 2, False, True)               # (input, dim, unbiased, keepdim)
    check(s, X.std(2, keepdims=True), rtol=1e-5)
    s, m = lazyt.std_mean(x, -1, correction=2)
    check(s, X.std(-1, ddof=2), rtol=1e-5)
    i = np.arange(6).reshape(2, 3)
    v, m = lazyt.var_mean(_t(i, device), 1)
    check(v, i.var(1, ddof=1).astype(np.float32))
    check(m, i.mean(1).astype(np.float32))


def test_var_mean_gradients():
    assert gradcheck(lambda t: lazyt.var_mean(t, 1), [_f64((3, 4))])
    assert gradcheck(lambda t: lazyt.std_mean(t, (0, 1), correction=0), [_f64((2, 3))])


def test_var_mean_errors():
    with pytest.raises(lazyt.InvalidArgumentError, match="var_mean: pass unbiased or correction"):
        lazyt.var_mean(lazyt.ones(3), 0, True, correction=1)
    with pytest.raises(lazyt.InvalidArgumentError, match="std_mean: got unbiased twice"):
        lazyt.std_mean(lazyt.ones(3), True, False)


# ---------------------------------------------------------------------- normalize
def np_normalize(a, p, dim, eps=1e-12):
    if p == math.inf:
        n = np.abs(a).max(dim, keepdims=True)
    else:
        n = (np.abs(a) ** p).sum(dim, keepdims=True) ** (1 / p)
    return a / np.maximum(n, eps)


@pytest.mark.parametrize("p, dim", [(2.0, 1), (1, 0), (3, -1), (math.inf, 1), (0.5, 2)])
def test_normalize_every_device(device, check, p, dim):
    x = X.copy()
    x[0, :, 1] = 0                                               # a zero slice stays zero
    check(F.normalize(_t(x, device), p=p, dim=dim),
          np_normalize(x.astype(np.float64), p, dim).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_normalize_defaults_and_eps(device, check):
    x = np.array([[3.0, 4.0], [1e-14, 0.0]], np.float32)
    check(F.normalize(_t(x, device)), np.array([[0.6, 0.8], [0.01, 0.0]], np.float32),
          rtol=1e-5)
    check(F.normalize(_t(x, device), eps=10.0), x / 10)
    check(F.normalize(_t(x[0], device), dim=0), np.array([0.6, 0.8], np.float32))


def test_normalize_gradients():
    assert gradcheck(lambda t: F.normalize(t), [_f64((3, 4))])
    assert gradcheck(lambda t: F.normalize(t, p=1, dim=0), [_f64((3, 4))])
    assert gradcheck(lambda t: F.normalize(t, p=3, dim=-1), [_f64((2, 3))])
    x = lazyt.zeros(2, 3, dtype=lazyt.float64).require_grad()
    g = F.normalize(x).sum().backward()
    # no NaN from the norm's square root at zero: only x / eps's own slope
    np.testing.assert_array_equal(g.get(x).numpy(), np.full((2, 3), 1e12))


def test_normalize_errors():
    with pytest.raises(lazyt.DTypeError, match="normalize: expected a floating-point"):
        F.normalize(lazyt.ones(2, 3, dtype=lazyt.int64))
    with pytest.raises(lazyt.InvalidArgumentError, match="normalize: p must be positive"):
        F.normalize(lazyt.ones(2, 3), p=0)
    with pytest.raises(lazyt.IndexOutOfRangeError):
        F.normalize(lazyt.ones(2, 3), dim=2)


# ---------------------------------------------------------------------- linspace
def np_linspace(start, end, steps, dtype):
    """torch's formula: up from start for the first half, down from end for the rest."""
    acc = np.float64 if dtype in (np.float64, np.int64, np.int32) else np.float32
    if steps == 1:
        return np.array([start], dtype)
    i = np.arange(steps, dtype=acc)
    step = (acc(end) - acc(start)) / acc(steps - 1)
    vals = np.where(i < steps // 2, acc(start) + step * i, acc(end) - step * (steps - 1 - i))
    return vals.astype(dtype)


@pytest.mark.parametrize("start, end, steps, dtype", [
    (0, 1, 5, None), (-2.5, 7.0, 11, None), (3, -3, 4, None), (0, 10, 4, "int64"),
    (-7, 5, 6, "int32"), (1.0, 2.0, 1, None), (1.0, 2.0, 0, None), (0, 1, 7, "float16"),
])
def test_linspace_every_device(device, check, start, end, steps, dtype):
    np_dtype = np.float32 if dtype is None else np.dtype(dtype).type
    got = lazyt.linspace(start, end, steps, dtype=dtype, device=device)
    check(got, np_linspace(start, end, steps, np_dtype), device=device)


def test_linspace_ends_exact_and_errors():
    t = lazyt.linspace(0.1, 0.7, 13).numpy()
    assert t[0] == np.float32(0.1) and t[-1] == np.float32(0.7)
    t = lazyt.linspace(lazyt.tensor(1.0), lazyt.tensor(3.0), 3, dtype=lazyt.float64,
                       requires_grad=True)
    assert t.requires_grad and t.numpy().tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(lazyt.ShapeError, match="linspace: number of steps"):
        lazyt.linspace(0, 1, -1)
    with pytest.raises(lazyt.DTypeError, match="linspace: steps must be an int"):
        lazyt.linspace(0, 1, 2.5)
    with pytest.raises(lazyt.DTypeError, match="linspace: start must be a real number"):
        lazyt.linspace("a", 1, 2)


# ---------------------------------------------------------------------- sum/prod with dtype=
def test_sum_prod_dtype(device, check):
    i = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    check(lazyt.sum(_t(i, device), dtype=lazyt.float32), np.float32(21))
    check(_t(i, device).sum(1, dtype=lazyt.float32), i.sum(1).astype(np.float32))
    check(_t(i, device).prod(0, dtype=lazyt.int64), i.prod(0).astype(np.int64))
    check(lazyt.prod(_t(i, device), 1, keepdim=True, dtype="float32"),
          i.prod(1, keepdims=True).astype(np.float32))
    check(_t(i, device).sum(), np.int64(21))                     # integers sum in int64


# ---------------------------------------------------------------------- normal_, uniform_
def test_normal_uniform_in_place(device):
    lazyt.manual_seed(0)
    t = lazyt.zeros(4000, device=device)
    alias = t
    assert t.normal_(2.0, 3.0) is t
    a = alias.numpy()
    assert abs(a.mean() - 2.0) < 0.2 and abs(a.std() - 3.0) < 0.2
    assert t.uniform_(-1.0, 2.0) is t
    a = t.numpy()
    assert a.min() >= -1.0 and a.max() < 2.0 and abs(a.mean() - 0.5) < 0.1
    assert t.dtype is lazyt.float32 and t.device == device
    lazyt.manual_seed(7)
    first = lazyt.zeros(5, device=device).normal_().numpy()
    lazyt.manual_seed(7)
    np.testing.assert_array_equal(lazyt.zeros(5, device=device).normal_().numpy(), first)


def test_normal_uniform_errors():
    with pytest.raises(lazyt.DTypeError, match="normal_: expects a floating-point tensor"):
        lazyt.zeros(3, dtype=lazyt.int64).normal_()
    with pytest.raises(lazyt.InvalidArgumentError, match="normal_: std must be non-negative"):
        lazyt.zeros(3).normal_(0.0, -1.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="uniform_: expects a <= b"):
        lazyt.zeros(3).uniform_(2.0, 1.0)
    with pytest.raises(lazyt.GradError):
        lazyt.zeros(3).require_grad().normal_()
    w = lazyt.zeros(3).require_grad()
    with lazyt.no_grad():
        w.normal_()
    assert w.is_leaf and w.requires_grad


# ---------------------------------------------------------------------- API
def test_functions_and_methods_are_exported():
    for name in lazyt.reductions.__all__:
        assert name in lazyt.__all__ and callable(getattr(lazyt, name)), name
    assert hasattr(lazyt.Tensor, "logsumexp")
    for name in ("var_mean", "std_mean", "linspace"):     # functions only, as in torch
        assert not hasattr(lazyt.Tensor, name), name
    for name in ("normal_", "uniform_"):                  # methods only
        assert hasattr(lazyt.Tensor, name) and name not in lazyt.__all__, name
    assert "normalize" in F.__all__ and not hasattr(lazyt, "normalize")


# ---------------------------------------------------------------------- torch
@needs_torch
def test_against_torch():
    x = torch.tensor(X, dtype=torch.float64)
    lx = lazyt.tensor(X, dtype=lazyt.float64)
    for dim in (0, (1, 2), -1):
        np.testing.assert_allclose(lazyt.logsumexp(lx, dim).numpy(),
                                   torch.logsumexp(x, dim).numpy(), rtol=1e-12)
    for fn, tfn in ((lazyt.var_mean, torch.var_mean), (lazyt.std_mean, torch.std_mean)):
        for args, kw in (((1,), {}), (((0, 2),), dict(correction=0, keepdim=True)),
                         ((False,), {})):
            for a, b in zip(fn(lx, *args, **kw), tfn(x, *args, **kw)):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    for p, dim in ((2.0, 1), (1, 0), (3, -1), (math.inf, 1)):
        np.testing.assert_allclose(F.normalize(lx, p=p, dim=dim).numpy(),
                                   TF.normalize(x, p=p, dim=dim).numpy(), rtol=1e-12)
    for args, dtype in (((0, 1, 5), None), ((-2.5, 7.1, 11), None), ((0, 10, 4), "int64"),
                        ((-7, 5, 6), "int32"), ((0.1, 0.7, 13), "float64"), ((1, 2, 1), None)):
        want = torch.linspace(*args, dtype=getattr(torch, dtype) if dtype else None)
        np.testing.assert_array_equal(lazyt.linspace(*args, dtype=dtype).numpy(), want.numpy())
    # gradients of normalize and logsumexp
    t = torch.tensor(X[0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor(np.random.default_rng(3).normal(size=(3, 4)))
    (gt,) = torch.autograd.grad((TF.normalize(t, dim=0) * w).sum(), t)
    lt = lazyt.tensor(X[0], dtype=lazyt.float64).require_grad()
    g = (F.normalize(lt, dim=0) * lazyt.tensor(w.numpy())).sum().backward()
    np.testing.assert_allclose(g.get(lt).numpy(), gt.numpy(), rtol=1e-10)
    z = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    (gz,) = torch.autograd.grad(TF.normalize(z).sum(), z)
    lz = lazyt.zeros(2, 3, dtype=lazyt.float64).require_grad()
    np.testing.assert_array_equal(F.normalize(lz).sum().backward().get(lz).numpy(), gz.numpy())
