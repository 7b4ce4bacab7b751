"""lazyt.linalg against numpy.linalg on every device, gradcheck on cpu, torch where
installed."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def mats(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    if shape[-1] == shape[-2]:
        a = a + 2 * np.eye(shape[-1])              # well conditioned
    return a.astype(np.float32)


def T(a, device):
    return lazyt.tensor(a, device=device)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 5), (2, 3, 4, 4)])
def test_det_slogdet_inv(device, shape):
    a = mats(*shape)
    np.testing.assert_allclose(lazyt.linalg.det(T(a, device)).numpy(), np.linalg.det(a),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(T(a, device).det().numpy(), np.linalg.det(a), rtol=1e-4,
                               atol=1e-5)
    s, la = lazyt.linalg.slogdet(T(a, device))
    ws, wla = np.linalg.slogdet(a)
    np.testing.assert_array_equal(s.numpy(), ws)
    np.testing.assert_allclose(la.numpy(), wla, rtol=1e-4, atol=1e-5)
    assert lazyt.slogdet(T(a, device)).logabsdet.shape == wla.shape
    np.testing.assert_allclose(lazyt.linalg.inv(T(a, device)).numpy(), np.linalg.inv(a),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(lazyt.inverse(T(a, device)).numpy(), np.linalg.inv(a),
                               rtol=1e-3, atol=1e-4)


def test_pivoting_and_singular(device):
    # a zero leading entry needs a row swap; a singular matrix has det 0
    a = np.array([[0, 1, 2], [1, 0, 3], [4, -3, 8]], np.float32)
    np.testing.assert_allclose(lazyt.det(T(a, device)).numpy(), np.linalg.det(a), rtol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.inv(T(a, device)).numpy(), np.linalg.inv(a),
                               rtol=1e-4, atol=1e-5)
    sing = np.array([[1, 2], [2, 4]], np.float32)
    assert lazyt.det(T(sing, device)).numpy() == 0
    s, la = lazyt.slogdet(T(sing, device))
    assert s.numpy() == 0 and la.numpy() == -np.inf
    assert lazyt.logdet(T(sing, device)).numpy() == -np.inf
    neg = np.array([[0, 1], [1, 0]], np.float32)
    assert np.isnan(lazyt.logdet(T(neg, device)).numpy())


@pytest.mark.parametrize("bshape", [(4, 2), (4,), (3, 4, 1), (3, 4)])
def test_solve(device, bshape):
    a = mats(3, 4, 4)
    b = np.random.default_rng(1).standard_normal(bshape).astype(np.float32)
    got = lazyt.linalg.solve(T(a, device), T(b, device))
    if len(bshape) == 1:
        want = np.linalg.solve(a, b[None, :, None])[..., 0]
    elif bshape == (3, 4):                       # a batch of vectors
        want = np.linalg.solve(a, b[..., None])[..., 0]
    else:
        want = np.linalg.solve(a, b)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-3, atol=1e-4)
    xr = lazyt.linalg.solve(T(a, device), T(mats(3, 2, 4, seed=2), device), left=False)
    np.testing.assert_allclose(xr.numpy() @ a, mats(3, 2, 4, seed=2), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("ord", ["fro", 1, -1, np.inf, -np.inf])
def test_matrix_norm(device, ord):
    a = mats(2, 3, 4)
    np.testing.assert_allclose(lazyt.linalg.matrix_norm(T(a, device), ord).numpy(),
                               np.linalg.norm(a, ord, axis=(-2, -1)), rtol=1e-5)
    got = lazyt.linalg.matrix_norm(T(a, device), ord, dim=(0, 2), keepdim=True)
    want = np.linalg.norm(a, ord, axis=(0, 2), keepdims=True)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_norms_and_products(device):
    a = mats(3, 4)
    for o in (2, 1, np.inf, -np.inf, 0, 3.5):
        np.testing.assert_allclose(lazyt.linalg.vector_norm(T(a, device), o).numpy(),
                                   np.linalg.norm(a.ravel(), o), rtol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.norm(T(a, device)).numpy(), np.linalg.norm(a),
                               rtol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.norm(T(a, device), 1).numpy(),
                               np.linalg.norm(a, 1), rtol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.norm(T(a, device), 3, dim=1).numpy(),
                               np.linalg.norm(a, 3, axis=1), rtol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.vecdot(T(a, device), T(a, device)).numpy(),
                               (a * a).sum(-1), rtol=1e-5)
    b, c = mats(4, 2, seed=1), mats(2, 5, seed=2)
    np.testing.assert_allclose(lazyt.linalg.multi_dot([T(a, device), T(b, device),
                                                       T(c, device)]).numpy(),
                               a @ b @ c, rtol=1e-4, atol=1e-5)
    m = mats(3, 3, seed=3)
    np.testing.assert_allclose(lazyt.linalg.matrix_power(T(m, device), -2).numpy(),
                               np.linalg.matrix_power(m.astype(np.float64), -2),
                               rtol=1e-3, atol=1e-4)


def spd(*shape, seed=0):
    m = np.random.default_rng(seed).standard_normal(shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5)])
def test_cholesky(device, shape):
    a = spd(*shape)
    low = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_allclose(lazyt.linalg.cholesky(T(a, device)).numpy(), low, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(lazyt.linalg.cholesky(T(a, device), upper=True).numpy(),
                               np.swapaxes(low, -1, -2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(device, upper, left, unit):
    a = mats(2, 4, 4)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        used = tri.copy()
        idx = np.arange(4)
        used[..., idx, idx] = 1
    else:
        used = tri
    b = mats(2, 4, 3, seed=1) if left else mats(2, 3, 4, seed=1)
    # only the triangle is read: garbage in the other half changes nothing
    given = np.where(np.triu(np.ones((4, 4), bool)) if upper else
                     np.tril(np.ones((4, 4), bool)), tri, a + 5)
    got = lazyt.linalg.solve_triangular(T(given, device), T(b, device), upper=upper, left=left,
                                        unitriangular=unit).numpy()
    want = np.linalg.solve(used, b) if left else \
        np.swapaxes(np.linalg.solve(np.swapaxes(used, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(device, shape, mode):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    q, r = lazyt.linalg.qr(T(a, device), mode)
    # numpy's Householder signs are LAPACK's; its "r" mode returns R alone
    got = np.linalg.qr(a.astype(np.float64), mode)
    wq, wr = (None, got) if mode == "r" else got
    np.testing.assert_allclose(r.numpy(), wr, rtol=1e-4, atol=1e-5)
    if mode != "r":
        np.testing.assert_allclose(q.numpy(), wq, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(q.numpy() @ r.numpy(), a, rtol=1e-4, atol=1e-5)
    else:
        assert q.numel() == 0
    assert lazyt.linalg.qr(T(a, device)).R.shape == np.linalg.qr(a)[1].shape


def test_qr_triangular_input_kept(device):
    """A column already zero below the diagonal gets no reflection (LAPACK's tau = 0), so a
    triangular matrix comes back as R with Q the identity."""
    a = np.triu(mats(4, 4))
    q, r = lazyt.linalg.qr(T(a, device))
    np.testing.assert_allclose(q.numpy(), np.eye(4), atol=1e-6)
    np.testing.assert_allclose(r.numpy(), a, rtol=1e-6)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4), (1, 1)])
def test_lu(device, shape):
    a = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    p, low, up = lazyt.linalg.lu(T(a, device))
    k = min(shape[-2:])
    assert low.shape == shape[:-1] + (k,) and up.shape == shape[:-2] + (k, shape[-1])
    np.testing.assert_allclose(p.numpy() @ low.numpy() @ up.numpy(), a, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.triu(low.numpy(), 1), 0)
    np.testing.assert_array_equal(np.diagonal(low.numpy(), 0, -2, -1), 1)
    np.testing.assert_array_equal(np.tril(up.numpy(), -1), 0)
    assert np.all(np.abs(low.numpy()) <= 1 + 1e-6)          # partial pivoting
    packed, piv = lazyt.linalg.lu_factor(T(a, device))
    assert piv.dtype is lazyt.int32 and piv.shape == shape[:-2] + (k,)
    np.testing.assert_allclose(np.triu(packed.numpy()), np.pad(
        up.numpy(), [(0, 0)] * (len(shape) - 2) + [(0, shape[-2] - k), (0, 0)]),
        rtol=1e-6, atol=1e-7)


def test_cross_diagonal_matmul(device):
    x, y = mats(4, 3), mats(4, 3, seed=1)
    np.testing.assert_allclose(lazyt.linalg.cross(T(x, device), T(y, device)).numpy(),
                               np.cross(x, y), rtol=1e-5, atol=1e-6)
    a = mats(2, 3, 3)
    np.testing.assert_array_equal(lazyt.linalg.diagonal(T(a, device), offset=1).numpy(),
                                  np.diagonal(a, 1, -2, -1))
    np.testing.assert_allclose(lazyt.linalg.matmul(T(a, device), T(a, device)).numpy(), a @ a,
                               rtol=1e-5, atol=1e-5)


def test_errors(device):
    with pytest.raises(ShapeError, match="det: expected a batch of square matrices"):
        lazyt.linalg.det(T(mats(2, 3, 3)[:, :2], device))
    with pytest.raises(ShapeError, match="solve: B has 3 rows"):
        lazyt.linalg.solve(T(mats(4, 4), device), T(mats(3, 3), device))
    with pytest.raises(InvalidArgumentError, match="matrix_norm: ord=3 is not a matrix norm"):
        lazyt.linalg.matrix_norm(T(mats(3, 3), device), 3)
    np.testing.assert_allclose(lazyt.det(T(mats(2, 2), device)).numpy(),
                               np.linalg.det(mats(2, 2)), rtol=1e-5)


def test_gradients():
    a = lazyt.tensor(mats(3, 3).astype(np.float64)).require_grad()
    b = lazyt.tensor(mats(3, 2, seed=1).astype(np.float64)).require_grad()
    assert gradcheck(lambda x: lazyt.linalg.det(x), [a])
    assert gradcheck(lambda x: lazyt.linalg.inv(x), [a])
    assert gradcheck(lambda x, y: lazyt.linalg.solve(x, y), [a, b])
    assert gradcheck(lambda x: lazyt.linalg.slogdet(x)[1], [a])
    s = lazyt.tensor(spd(3, 3).astype(np.float64)).require_grad()
    assert gradcheck(lambda x: lazyt.linalg.cholesky(x), [s])
    g = lazyt.tensor(mats(4, 3, seed=5).astype(np.float64) - 2.0).require_grad()
    assert gradcheck(lambda x: lazyt.linalg.qr(x)[0], [g])
    assert gradcheck(lambda x: lazyt.linalg.qr(x)[1], [g])
    assert gradcheck(lambda x: lazyt.linalg.lu(x).U, [g])
    t = lazyt.tensor(np.tril(mats(3, 3)).astype(np.float64)).require_grad()
    assert gradcheck(lambda x, y: lazyt.linalg.solve_triangular(x, y, upper=False), [t, b])


def test_compile_captures_det_and_solve():
    fd = lazyt.compile(lambda x: lazyt.linalg.det(x))
    fs = lazyt.compile(lambda x, y: lazyt.linalg.solve(x, y))
    for seed in range(4):
        a, b = mats(2, 4, 4, seed=seed), mats(2, 4, 3, seed=seed + 9)
        d, x = fd(lazyt.tensor(a)), fs(lazyt.tensor(a), lazyt.tensor(b))
        np.testing.assert_allclose(d.numpy(), np.linalg.det(a), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)
    assert fd.cache_info().hits >= 2 and fs.cache_info().hits >= 2


def test_compile_two_factorizations_in_one_function():
    """det and inv in one function while the last results are held: the second recording
    once saw a constant made inside the call as an outside tensor, because a freed tensor's
    id had been reused (CaptureError)."""
    f = lazyt.compile(lambda x: lazyt.linalg.det(x) + lazyt.linalg.inv(x).sum((-2, -1)))
    held = []
    for seed in range(4):
        a = mats(2, 4, 4, seed=seed)
        held.append(f(lazyt.tensor(a)))
        want = np.linalg.det(a) + np.linalg.inv(a).sum((-2, -1))
        np.testing.assert_allclose(held[-1].numpy(), want, rtol=1e-3, atol=1e-4)
    assert f.cache_info().hits == 2


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a = mats(2, 4, 4).astype(np.float64)
    b = mats(2, 4, 3, seed=1).astype(np.float64)
    ta, tb = torch.tensor(a), torch.tensor(b)
    pairs = [(lazyt.linalg.det(lazyt.tensor(a)), torch.linalg.det(ta)),
             (lazyt.linalg.inv(lazyt.tensor(a)), torch.linalg.inv(ta)),
             (lazyt.linalg.solve(lazyt.tensor(a), lazyt.tensor(b)), torch.linalg.solve(ta, tb)),
             (lazyt.logdet(lazyt.tensor(a)), torch.logdet(ta)),
             (lazyt.linalg.norm(lazyt.tensor(a[0]), -np.inf), torch.linalg.norm(ta[0], -np.inf)),
             (lazyt.linalg.matrix_norm(lazyt.tensor(a), 1), torch.linalg.matrix_norm(ta, 1)),
             (lazyt.linalg.cholesky(lazyt.tensor(a @ np.swapaxes(a, -1, -2))),
              torch.linalg.cholesky(ta @ ta.mT)),
             (lazyt.linalg.solve_triangular(lazyt.tensor(a), lazyt.tensor(b), upper=True),
              torch.linalg.solve_triangular(ta, tb, upper=True)),
             (lazyt.linalg.qr(lazyt.tensor(b))[0], torch.linalg.qr(tb)[0]),
             (lazyt.linalg.lu(lazyt.tensor(b)).L, torch.linalg.lu(tb).L),
             (lazyt.linalg.lu(lazyt.tensor(b)).P, torch.linalg.lu(tb).P),
             (lazyt.linalg.lu_factor(lazyt.tensor(a)).LU, torch.linalg.lu_factor(ta).LU),
             (lazyt.linalg.lu_factor(lazyt.tensor(a)).pivots, torch.linalg.lu_factor(ta).pivots),
             (lazyt.linalg.qr(lazyt.tensor(b), "complete")[1], torch.linalg.qr(tb, "complete")[1])]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-10)
