"""torch ops of `lazyt/moreops2.py` (order statistics, searching, data-dependent ops,
cdist, heaviside, sinc, masked_scatter): values against numpy on every device, float64
gradients on cpu, errors, and the refusal of a data-dependent op under lazyt.compile."""
import numpy as np
import pytest

import lazyt
import lazyt.moreops2 as moreops2  # registers the ops (whether or not lazyt/__init__ does)
from lazyt.testing import gradcheck


class _Namespace:
    """`lazyt`, with the function forms of `lazyt.moreops2` (before lazyt re-exports them)."""

    def __getattr__(self, name):
        return getattr(moreops2 if name in moreops2.__all__ else lazyt, name)


L = _Namespace()


def _t(a, device, dtype=None):
    return L.tensor(np.asarray(a), dtype=dtype, device=device)


def _f32(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _lower_median(a, axis):
    s = np.sort(a, axis=axis)
    return np.take(s, (a.shape[axis] - 1) // 2, axis=axis)


# ---------------------------------------------------------------------- selection by order
def test_median_kthvalue_every_device(device, check, rng):
    x = _f32(rng, 3, 6)
    X = _t(x, device)
    check(L.median(X), np.float32(_lower_median(x.reshape(-1), 0)))
    v, i = L.median(X, 1)
    check(v, _lower_median(x, 1))
    check(L.gather(X, 1, i.unsqueeze(1)).reshape(3), _lower_median(x, 1))
    v, i = X.median(0, keepdim=True)
    check(v, _lower_median(x, 0)[None])
    v, i = L.kthvalue(X, 2, 0)
    check(v, np.sort(x, 0)[1])
    check(i, np.argsort(x, 0, kind="stable")[1].astype(np.int64))
    v, _ = X.kthvalue(6, keepdim=True)
    check(v, x.max(1, keepdims=True))
    check(L.msort(X), np.sort(x, 0))
    check(X.msort(), np.sort(x, 0))


def test_median_nan_and_ints():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 1.0, 2.0, 3.0]])
    v, i = L.median(L.tensor(x), 1)
    np.testing.assert_array_equal(v.numpy(), [np.nan, 2.0])
    assert i.numpy().tolist() == [1, 2]
    assert np.isnan(L.median(L.tensor(x)).numpy())
    np.testing.assert_array_equal(L.nanmedian(L.tensor(x)).numpy(), 2.0)
    v, _ = L.tensor(x).nanmedian(1)
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0])
    ints = L.tensor([5, 1, 4, 2])
    assert L.median(ints).numpy() == 2 and L.median(ints).dtype == L.int64
    assert L.median(L.tensor(3.0), 0).values.shape == ()


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_every_device(device, check, rng, interp):
    x = _f32(rng, 4, 5)
    X = _t(x, device)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], dtype=np.float32)
    x64 = x.astype(np.float64)
    check(L.quantile(X, 0.3, interpolation=interp),
          np.float32(np.quantile(x64, 0.3, method=interp)), atol=2e-6)
    check(L.quantile(X, _t(q, device), dim=1, interpolation=interp),
          np.quantile(x64, q, axis=1, method=interp).astype(np.float32), atol=2e-6)
    check(X.quantile(0.7, dim=0, keepdim=True, interpolation=interp),
          np.quantile(x64, 0.7, axis=0, keepdims=True, method=interp).astype(np.float32),
          atol=2e-6)


def test_quantile_nan_and_nanquantile():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, 1.0, 2.0, 3.0]])
    got = L.quantile(L.tensor(x), 0.4, dim=1).numpy()
    np.testing.assert_allclose(got, np.quantile(x, 0.4, axis=1), equal_nan=True)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(x, [0.2, 0.5], axis=1)
    got = L.tensor(x).nanquantile(L.tensor([0.2, 0.5], dtype=L.float64), dim=1).numpy()
    np.testing.assert_allclose(got, want, equal_nan=True, rtol=1e-14)
    assert L.quantile(L.tensor(x[2]), 0.5, keepdim=True).shape == (1,)


# ---------------------------------------------------------------------- searching
def test_searchsorted_bucketize_isin_every_device(device, check, rng):
    seq = np.sort(_f32(rng, 7))
    seq[3] = seq[2]
    v = np.concatenate([_f32(rng, 5), seq[:3]]).reshape(2, 4)
    S, V = _t(seq, device), _t(v, device)
    for right in (False, True):
        want = np.searchsorted(seq, v, side="right" if right else "left").astype(np.int64)
        check(L.searchsorted(S, V, right=right), want)
        check(L.bucketize(V, S, right=right), want)
    check(L.searchsorted(S, V, side="right", out_int32=True),
          np.searchsorted(seq, v, side="right").astype(np.int32))
    check(L.searchsorted(S, float(seq[2])), np.int64(2))
    seq2 = np.sort(_f32(rng, 2, 6), 1)
    v2 = _f32(rng, 2, 3)
    want = np.stack([np.searchsorted(seq2[i], v2[i]) for i in range(2)]).astype(np.int64)
    check(L.searchsorted(_t(seq2, device), _t(v2, device)), want)
    perm = rng.permutation(7)
    check(L.searchsorted(_t(seq[perm], device), V, sorter=_t(np.argsort(perm), device)),
          np.searchsorted(seq, v).astype(np.int64))
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    b = np.array([2, 6, 9], dtype=np.int32)
    check(L.isin(_t(a, device), _t(b, device)), np.isin(a, b))
    check(L.isin(_t(a, device), _t(b, device), invert=True), np.isin(a, b, invert=True))
    check(L.isin(_t(a, device), 5), np.isin(a, 5))


def test_searchsorted_nan_float64():
    seq = np.array([1.0, 2.0, np.nan])
    v = np.array([0.0, 2.0, 5.0, np.nan])
    for side in ("left", "right"):
        got = L.searchsorted(L.tensor(seq), L.tensor(v), side=side).numpy()
        np.testing.assert_array_equal(got, np.searchsorted(seq, v, side=side))


# ---------------------------------------------------------------------- data-dependent
def test_unique_every_device(device, check, rng):
    a = rng.integers(0, 5, (3, 4)).astype(np.int32)
    A = _t(a, device)
    u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True)
    check(L.unique(A), u)
    out, i, c = A.unique(return_inverse=True, return_counts=True)
    check(out, u), check(i, inv.reshape(a.shape).astype(np.int64)), check(c, cnt.astype(np.int64))
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 5], [0, 1]], dtype=np.int32)
    u, inv, cnt = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    out, i, c = L.unique(_t(rows, device), dim=0, return_inverse=True, return_counts=True)
    check(out, u), check(i, inv.reshape(-1).astype(np.int64)), check(c, cnt.astype(np.int64))
    b = np.array([1, 1, 2, 2, 3, 1, 1, 2], dtype=np.int32)
    out, i, c = L.unique_consecutive(_t(b, device), return_inverse=True, return_counts=True)
    check(out, np.array([1, 2, 3, 1, 2], dtype=np.int32))
    check(i, np.array([0, 0, 1, 1, 2, 3, 3, 4], dtype=np.int64))
    check(c, np.array([2, 2, 1, 2, 1], dtype=np.int64))
    out = _t(rows, device).unique_consecutive(dim=0)
    check(out, rows)


def test_unique_float_nans_and_grad():
    x = L.tensor([2.0, np.nan, 1.0, 2.0, np.nan]).require_grad()
    u = L.unique(x)
    np.testing.assert_array_equal(u.numpy(), [1.0, 2.0, np.nan, np.nan])
    u.sum().backward()
    assert x.grad is not None


def test_bincount_histc_every_device(device, check, rng):
    a = rng.integers(0, 6, 20).astype(np.int32)
    A = _t(a, device)
    check(L.bincount(A), np.bincount(a).astype(np.int64))
    check(A.bincount(minlength=10), np.bincount(a, minlength=10).astype(np.int64))
    w = _f32(rng, 20)
    check(L.bincount(A, _t(w, device)), np.bincount(a, w).astype(np.float32), atol=1e-5)
    check(L.bincount(_t(np.zeros(0, np.int32), device), minlength=3), np.zeros(3, np.int64))
    x = _f32(rng, 40, lo=-3.0, hi=3.0)
    X = _t(x, device)
    check(L.histc(X, bins=6, min=-2, max=2), np.histogram(x, 6, (-2, 2))[0].astype(np.float32))
    check(X.histc(bins=5), np.histogram(x, 5)[0].astype(np.float32))


def test_equal_masked_scatter_every_device(device, check, rng):
    x = _f32(rng, 3, 4)
    X = _t(x, device)
    assert L.equal(X, _t(x.copy(), device)) is True
    assert X.equal(X + 1) is False
    assert L.equal(X, X.reshape(4, 3)) is False
    mask = rng.random((3, 4)) > 0.5
    src = _f32(rng, 12)
    want = x.copy()
    want[mask] = src[:mask.sum()]
    check(L.masked_scatter(X, _t(mask, device), _t(src, device)), want)
    row = np.array([True, False, True, False])
    want = x.copy()
    want[:, row] = src[:6].reshape(3, 2)
    check(X.masked_scatter(_t(row, device), _t(src, device)), want)


# ---------------------------------------------------------------------- distances, elementwise
def test_cdist_heaviside_sinc_every_device(device, check, rng):
    a, b = _f32(rng, 2, 4, 3), _f32(rng, 2, 5, 3)
    A, B = _t(a, device), _t(b, device)
    d = np.abs(a[:, :, None, :].astype(np.float64) - b[:, None, :, :])
    for p, ref in [(2.0, np.sqrt((d ** 2).sum(-1))), (1.0, d.sum(-1)),
                   (3.0, ((d ** 3).sum(-1)) ** (1 / 3)), (np.inf, d.max(-1)),
                   (0.0, (d != 0).sum(-1).astype(np.float64))]:
        check(L.cdist(A, B, p=p), ref.astype(np.float32), rtol=1e-5, atol=1e-5)
    check(L.cdist(A, A[0]).reshape(2, 4, 4)[0].diagonal(), np.zeros(4, np.float32))
    x = np.array([-1.5, 0.0, 2.0, 0.0], dtype=np.float32)
    vals = np.array([0.5, 0.5, 0.5, 7.0], dtype=np.float32)
    check(L.heaviside(_t(x, device), _t(vals, device)), np.heaviside(x, vals))
    check(_t(x, device).heaviside(_t(np.float32(0.25), device)), np.heaviside(x, np.float32(0.25)))
    s = _f32(rng, 9, lo=-3.0, hi=3.0)
    s[0] = 0.0
    check(L.sinc(_t(s, device)), np.sinc(s.astype(np.float64)).astype(np.float32), atol=2e-6)
    check(_t(s, device).sinc(), np.sinc(s.astype(np.float64)).astype(np.float32), atol=2e-6)
    assert L.sinc(_t([0, 1], device)).dtype == L.float32


# ---------------------------------------------------------------------- gradients (cpu)
def _g(a):
    return L.tensor(np.asarray(a, dtype=np.float64)).require_grad()


def test_gradients():
    rng = np.random.default_rng(0)
    x = _g(rng.uniform(-2, 2, (3, 5)))
    assert gradcheck(lambda v: L.median(v), [x])
    assert gradcheck(lambda v: L.median(v, 1).values, [x])
    assert gradcheck(lambda v: L.kthvalue(v, 2, 0, keepdim=True).values, [x])
    assert gradcheck(lambda v: L.nanmedian(v, 0).values, [x])
    assert gradcheck(lambda v: L.msort(v), [x])
    q = L.tensor([0.1, 0.5, 0.8], dtype=L.float64)
    assert gradcheck(lambda v: L.quantile(v, q, dim=1), [x])
    assert gradcheck(lambda v: L.nanquantile(v, 0.35, dim=0, interpolation="midpoint"), [x])
    a, b = _g(rng.uniform(-2, 2, (4, 3))), _g(rng.uniform(-2, 2, (5, 3)))
    for p in (1.0, 2.0, 3.0, np.inf):
        assert gradcheck(lambda u, w, p=p: L.cdist(u, w, p=p), [a, b])
    s = _g([0.0, 0.3, -1.2, 2.5])
    assert gradcheck(L.sinc, [s])
    src, base = _g(rng.uniform(-1, 1, 6)), _g(rng.uniform(-1, 1, (2, 3)))
    mask = L.tensor(np.array([[True, False, True], [False, True, True]]))
    assert gradcheck(lambda u, w: L.masked_scatter(u, mask, w), [base, src])
    w = _g(rng.uniform(-1, 1, 5))
    assert gradcheck(lambda u: L.bincount(L.tensor([0, 2, 2, 1, 0]), u), [w])


def test_cdist_zero_distance_gradient_is_zero():
    a = _g([[1.0, 2.0]])
    L.cdist(a, L.tensor([[1.0, 2.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0.0, 0.0]])


# ---------------------------------------------------------------------- errors and capture
@pytest.mark.parametrize("call, exc, match", [
    (lambda: L.kthvalue(L.tensor([1.0, 2.0]), 3), lazyt.IndexOutOfRangeError, "kthvalue"),
    (lambda: L.median(L.tensor(np.zeros((2, 0))), 1), lazyt.IndexOutOfRangeError, "median"),
    (lambda: L.quantile(L.tensor([1.0]), 1.5), lazyt.InvalidArgumentError, "quantile"),
    (lambda: L.quantile(L.tensor([1, 2]), 0.5), lazyt.DTypeError, "quantile"),
    (lambda: L.quantile(L.tensor([1.0]), 0.5, interpolation="cubic"),
     lazyt.InvalidArgumentError, "interpolation"),
    (lambda: L.searchsorted(L.tensor([1.0]), L.tensor([1.0]), right=True, side="left"),
     lazyt.InvalidArgumentError, "searchsorted"),
    (lambda: L.searchsorted(L.tensor([[1.0, 2.0]]), L.tensor([[1.0], [2.0]])),
     lazyt.ShapeError, "searchsorted"),
    (lambda: L.bucketize(L.tensor([1.0]), L.tensor([[1.0]])), lazyt.ShapeError, "bucketize"),
    (lambda: L.bincount(L.tensor([1, -1])), lazyt.InvalidArgumentError, "bincount"),
    (lambda: L.bincount(L.tensor([1.0])), lazyt.DTypeError, "bincount"),
    (lambda: L.histc(L.tensor([1.0]), min=2, max=1), lazyt.InvalidArgumentError, "histc"),
    (lambda: L.histc(L.tensor([1, 2])), lazyt.DTypeError, "histc"),
    (lambda: L.cdist(L.tensor([[1.0]]), L.tensor([[1.0, 2.0]])), lazyt.ShapeError, "cdist"),
    (lambda: L.cdist(L.tensor([[1.0]]), L.tensor([[1.0]]), p=-1),
     lazyt.InvalidArgumentError, "cdist"),
    (lambda: L.masked_scatter(L.tensor([1.0, 2.0]), L.tensor([True, True]), L.tensor([1.0])),
     lazyt.ShapeError, "masked_scatter"),
    (lambda: L.masked_scatter(L.tensor([1.0]), L.tensor([1]), L.tensor([1.0])),
     lazyt.DTypeError, "masked_scatter"),
    (lambda: L.heaviside(L.tensor([1.0]), L.tensor([1])), lazyt.DTypeError, "heaviside"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_data_dependent_op_refuses_capture():
    c = lazyt.compile(lambda x: L.unique(x) * 2)
    with pytest.raises(lazyt.CaptureError, match="reading a tensor's values"):
        c(lazyt.tensor([3, 1, 3]))
