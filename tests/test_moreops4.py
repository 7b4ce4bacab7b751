"""lazyt/moreops4.py against numpy references on every device, gradcheck on cpu, and torch
where it is installed."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import DTypeError, IndexOutOfRangeError, ShapeError
from lazyt.testing import gradcheck


def r(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def T(a, device):
    return lazyt.tensor(a, device=device)


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (2, 0)])
def test_select_scatter(device, dim, index):
    x = r(2, 3, 4)
    want = x.copy()
    src_shape = tuple(s for i, s in enumerate(x.shape) if i != dim)
    s = r(*src_shape, seed=1)
    sl = [slice(None)] * 3
    sl[dim] = index
    want[tuple(sl)] = s
    got = lazyt.select_scatter(T(x, device), T(s, device), dim, index)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(T(x, device).select_scatter(T(s, device), dim, index).numpy(),
                                  want)


@pytest.mark.parametrize("dim,start,end,step", [(0, None, None, 1), (1, 1, 3, 1),
                                                (2, 1, None, 2), (2, -3, -1, 1), (1, 2, 2, 1)])
def test_slice_scatter(device, dim, start, end, step):
    x = r(2, 3, 4)
    want = x.copy()
    sl = [slice(None)] * 3
    sl[dim] = slice(start, end, step)
    s = r(*want[tuple(sl)].shape, seed=1)
    want[tuple(sl)] = s
    got = lazyt.slice_scatter(T(x, device), T(s, device), dim, start, end, step)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 1, 2), (-1, 1, 2), (0, 0, 2),
                                          (2, 2, 1), (-2, 0, 1), (5, 1, 2)])
def test_diagonal_scatter(device, offset, d1, d2):
    x = r(2, 3, 4)
    want = x.copy()
    view = np.diagonal(want, offset, d1, d2)
    s = r(*view.shape, seed=1)
    # numpy's diagonal is read-only: write through the index grids instead
    idx = np.indices(x.shape)
    on = (idx[d2] - idx[d1]) == offset
    full = np.zeros_like(x)
    k = np.minimum(idx[d1], idx[d2])
    rest = [i for i in range(3) if i not in (d1, d2)][0]
    if s.size:
        full[on] = s[idx[rest][on], k[on]]
    want = np.where(on, full, x)
    got = lazyt.diagonal_scatter(T(x, device), T(s, device), offset, d1, d2)
    np.testing.assert_array_equal(got.numpy(), want)


def test_scatter_errors(device):
    x = T(r(2, 3), device)
    with pytest.raises(ShapeError, match="select_scatter: src has shape"):
        lazyt.select_scatter(x, T(r(2), device), 0, 0)
    with pytest.raises(IndexOutOfRangeError, match="select_scatter: index 3"):
        lazyt.select_scatter(x, T(r(2), device), 1, 3)
    with pytest.raises(ShapeError, match="slice_scatter: src has shape"):
        lazyt.slice_scatter(x, T(r(2, 3), device), 1, 0, None, 2)
    with pytest.raises(ShapeError, match="diagonal_scatter: src has shape"):
        lazyt.diagonal_scatter(x, T(r(3), device))
    with pytest.raises(DTypeError, match="select_scatter: src has dtype"):
        lazyt.select_scatter(x, T(np.zeros(2, np.int32), device), 1, 0)
    # the runtime stays usable
    np.testing.assert_array_equal(lazyt.select_scatter(x, T(np.zeros(2, np.float32), device),
                                                       1, 0).numpy()[:, 0], 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int16])
def test_gcd_lcm(device, dtype):
    if dtype is np.int64 and device.type == "wgpu":
        pytest.skip("wgpu stores int64 as int32")
    rng = np.random.default_rng(0)
    hi = min(np.iinfo(dtype).max, 1 << 20)
    a = rng.integers(-hi, hi, 64).astype(dtype)
    b = rng.integers(-hi, hi, 64).astype(dtype)
    a[:4], b[:4] = [0, 0, 7, 12], [0, 5, 0, 18]
    np.testing.assert_array_equal(lazyt.gcd(T(a, device), T(b, device)).numpy(), np.gcd(a, b))
    m = 100 if dtype is np.int16 else 1000     # (lcms that fit the dtype)
    small_a, small_b = (a % m).astype(dtype), (b % m).astype(dtype)
    np.testing.assert_array_equal(lazyt.lcm(T(small_a, device), T(small_b, device)).numpy(),
                                  np.lcm(small_a, small_b))
    # the slowest pairs: consecutive Fibonacci numbers
    fa = np.array([832040, 514229, 46368], dtype) if dtype is not np.int16 else \
        np.array([28657, 17711, 6765], dtype)
    fb = np.array([514229, 317811, 28657], dtype) if dtype is not np.int16 else \
        np.array([17711, 10946, 4181], dtype)
    np.testing.assert_array_equal(T(fa, device).gcd(T(fb, device)).numpy(), np.gcd(fa, fb))


def test_gcd_refuses_floats(device):
    with pytest.raises(DTypeError, match="gcd: integer tensors expected"):
        lazyt.gcd(T(r(3), device), T(r(3), device))


def test_remainder(device):
    a = np.array([5, -7, 9, -3], np.int32)
    np.testing.assert_array_equal(lazyt.remainder(T(a, device), 4).numpy(), np.remainder(a, 4))
    np.testing.assert_array_equal(lazyt.remainder(7, T(a, device)).numpy(), np.remainder(7, a))
    x = r(6)
    np.testing.assert_allclose(T(x, device).remainder(0.7).numpy(), np.remainder(x, 0.7),
                               rtol=1e-5, atol=1e-6)


def test_fmin_fmax_signbit(device):
    a = np.array([1, np.nan, np.nan, 3, -0.0], np.float32)
    b = np.array([np.nan, 2, np.nan, 1, 0.0], np.float32)
    np.testing.assert_array_equal(lazyt.fmin(T(a, device), T(b, device)).numpy(), np.fmin(a, b))
    np.testing.assert_array_equal(lazyt.fmax(T(a, device), T(b, device)).numpy(), np.fmax(a, b))
    np.testing.assert_array_equal(lazyt.fmax(T(a, device), np.nan).numpy(), np.fmax(a, np.nan))
    np.testing.assert_array_equal(T(a, device).fmin(2.0).numpy(), np.fmin(a, 2.0))
    i = np.array([3, -1, 5], np.int32)
    np.testing.assert_array_equal(lazyt.fmin(T(i, device), T(i[::-1].copy(), device)).numpy(),
                                  np.fmin(i, i[::-1]))
    s = np.array([-0.0, 0.0, -1.5, 2.0, -np.inf], np.float32)
    np.testing.assert_array_equal(lazyt.signbit(T(s, device)).numpy(), np.signbit(s))
    np.testing.assert_array_equal(T(i, device).signbit().numpy(), np.signbit(i))


def test_splits_and_names(device):
    x = r(4, 6, 2)
    for op, npop in (("hsplit", np.hsplit), ("vsplit", np.vsplit), ("dsplit", np.dsplit)):
        for arg in (2, [1, 3]):
            got = getattr(lazyt, op)(T(x, device), arg)
            want = npop(x, arg)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(lazyt.hsplit(T(x[0, :, 0].copy(), device), 3)[1].numpy(),
                                  np.hsplit(x[0, :, 0], 3)[1])
    with pytest.raises(ShapeError, match="vsplit: needs a tensor of at least 2 dims"):
        lazyt.vsplit(T(r(4), device), 2)
    with pytest.raises(ShapeError, match="hsplit: dim 1 of size 6 does not split into 4"):
        lazyt.hsplit(T(x, device), 4)
    np.testing.assert_array_equal(lazyt.row_stack([T(x[0], device), T(x[1], device)]).numpy(),
                                  np.vstack([x[0], x[1]]))
    np.testing.assert_array_equal(lazyt.narrow(T(x, device), 1, 2, 3).numpy(), x[:, 2:5])
    np.testing.assert_array_equal(T(x, device).narrow_copy(0, 1, 2).numpy(), x[1:3])
    np.testing.assert_array_equal(lazyt.clone(T(x, device)).numpy(), x)


def test_gradients():
    a = lazyt.tensor(r(3, 4).astype(np.float64)).require_grad()
    s = lazyt.tensor(r(3, seed=1).astype(np.float64)).require_grad()
    assert gradcheck(lambda x, y: lazyt.select_scatter(x, y, 1, 2), [a, s])
    assert gradcheck(lambda x, y: lazyt.diagonal_scatter(x, y, 1), [a, s])
    s2 = lazyt.tensor(r(3, 2, seed=2).astype(np.float64)).require_grad()
    assert gradcheck(lambda x, y: lazyt.slice_scatter(x, y, 1, 0, None, 2), [a, s2])
    b = lazyt.tensor(r(3, 4, seed=3).astype(np.float64)).require_grad()
    assert gradcheck(lambda x, y: lazyt.fmin(x, y) + lazyt.fmax(x, y) * 2, [a, b])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = r(3, 5, 4)
    cases = [
        (lazyt.select_scatter(lazyt.tensor(x), lazyt.tensor(r(3, 4, seed=1)), 1, -2),
         torch.select_scatter(torch.tensor(x), torch.tensor(r(3, 4, seed=1)), 1, -2)),
        (lazyt.slice_scatter(lazyt.tensor(x), lazyt.tensor(r(3, 2, 4, seed=1)), 1, 1, 5, 2),
         torch.slice_scatter(torch.tensor(x), torch.tensor(r(3, 2, 4, seed=1)), 1, 1, 5, 2)),
        (lazyt.diagonal_scatter(lazyt.tensor(x), lazyt.tensor(r(5, 2, seed=1)), -1, 0, 2),
         torch.diagonal_scatter(torch.tensor(x), torch.tensor(r(5, 2, seed=1)), -1, 0, 2)),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    a = np.array([0, 0, 12, -18, 2 ** 30, -7], np.int32)
    b = np.array([0, 9, 8, 27, 3 * 2 ** 20, 0], np.int32)
    np.testing.assert_array_equal(lazyt.gcd(lazyt.tensor(a), lazyt.tensor(b)).numpy(),
                                  torch.gcd(torch.tensor(a), torch.tensor(b)).numpy())
    np.testing.assert_array_equal(lazyt.lcm(lazyt.tensor(a[:4]), lazyt.tensor(b[:4])).numpy(),
                                  torch.lcm(torch.tensor(a[:4]), torch.tensor(b[:4])).numpy())
    np.testing.assert_array_equal(lazyt.remainder(-5, lazyt.tensor(a[2:])).numpy(),
                                  torch.remainder(-5, torch.tensor(a[2:])).numpy())


@pytest.mark.parametrize("dim,keepdim", [(-1, False), (0, True), (1, False)])
def test_mode(device, dim, keepdim):
    a = np.random.default_rng(0).integers(0, 4, (3, 5, 6)).astype(np.float32)
    v, i = lazyt.mode(T(a, device), dim, keepdim)
    moved = np.moveaxis(a, dim, -1)
    # numpy reference: the smallest most frequent value, the index of its last occurrence
    flat = moved.reshape(-1, moved.shape[-1])
    wv, wi = [], []
    for row in flat:
        vals, counts = np.unique(row, return_counts=True)
        best = vals[counts == counts.max()].min()
        wv.append(best)
        wi.append(np.nonzero(row == best)[0].max())
    wv = np.array(wv, np.float32).reshape(moved.shape[:-1])
    wi = np.array(wi).reshape(moved.shape[:-1])
    if keepdim:
        wv, wi = np.expand_dims(wv, dim), np.expand_dims(wi, dim)
    np.testing.assert_array_equal(v.numpy(), wv)
    np.testing.assert_array_equal(i.numpy(), wi)
    assert T(a, device).mode(dim).indices.dtype is lazyt.int64


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(device, edge_order):
    a = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    for kw, npargs in (({}, ()), ({"spacing": 2.0}, (2.0,)), ({"spacing": [0.5, 3.0]}, (0.5, 3.0))):
        got = lazyt.gradient(T(a, device), edge_order=edge_order, **kw)
        want = np.gradient(a, *npargs, edge_order=edge_order)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)
    c = np.cumsum(np.random.default_rng(2).random(5)).astype(np.float32)
    got = lazyt.gradient(T(a, device), spacing=[T(c, device)], dim=1, edge_order=edge_order)
    np.testing.assert_allclose(got[0].numpy(), np.gradient(a, c, axis=1, edge_order=edge_order),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ShapeError, match="gradient: dim 0 has 2 samples"):
        lazyt.gradient(T(a[:2], device), edge_order=2)


def test_histogram(device):
    x = np.random.default_rng(3).standard_normal(500).astype(np.float32)
    h, e = lazyt.histogram(T(x, device), 7)
    wh, we = np.histogram(x, 7)
    np.testing.assert_array_equal(h.numpy(), wh)
    np.testing.assert_allclose(e.numpy(), we, rtol=1e-6, atol=1e-6)
    w = np.abs(x)
    h, e = lazyt.histogram(T(x, device), 4, range=(-1.0, 2.0), weight=T(w, device),
                           density=True)
    wh, we = np.histogram(x, 4, range=(-1.0, 2.0), weights=w, density=True)
    np.testing.assert_allclose(h.numpy(), wh, rtol=1e-5)
    edges = np.array([-3.0, -0.5, 0.0, 0.7, 4.0], np.float32)
    h, _ = lazyt.histogram(T(x, device), T(edges, device))
    np.testing.assert_array_equal(h.numpy(), np.histogram(x, edges)[0])
    h, e = lazyt.histogram(T(np.full(3, 2.0, np.float32), device), 2)
    np.testing.assert_array_equal(e.numpy(), [1.5, 2.0, 2.5])
    np.testing.assert_array_equal(h.numpy(), [0, 3])
    with pytest.raises(DTypeError, match="histogram: expected a floating-point input"):
        lazyt.histogram(T(np.arange(3), device), 2)


def test_mode_gradient_histogram_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).integers(0, 5, (4, 9))
    v, i = lazyt.mode(lazyt.tensor(a), 1)
    tv, ti = torch.mode(torch.tensor(a), 1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    f = np.random.default_rng(5).standard_normal((3, 6))
    c = np.cumsum(np.random.default_rng(6).random(6))
    for eo in (1, 2):
        got = lazyt.gradient(lazyt.tensor(f), spacing=[lazyt.tensor(np.arange(3.0)),
                                                       lazyt.tensor(c)], edge_order=eo)
        want = torch.gradient(torch.tensor(f), spacing=[torch.tensor(np.arange(3.0)),
                                                        torch.tensor(c)], edge_order=eo)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
    x = np.random.default_rng(7).standard_normal(300)
    h, e = lazyt.histogram(lazyt.tensor(x), 6, weight=lazyt.tensor(np.abs(x)))
    th, te = torch.histogram(torch.tensor(x), 6, weight=torch.tensor(np.abs(x)))
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.numpy(), te.numpy(), rtol=1e-12, atol=1e-12)
