"""lazyt/moreops3.py against numpy references on every device, gradcheck on cpu, and torch
where it is installed."""
import itertools

import numpy as np
import pytest

import lazyt
from lazyt.errors import DTypeError, InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def r(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def T(a, device):
    return lazyt.tensor(a, device=device)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy") else got,
                                          dtype=np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dims", [2, 1, 0, ([1, 0], [0, 1]), ([2], [0])])
def test_tensordot(device, dims):
    a, b = r(3, 4, 5), r(4, 5, 2, seed=1)
    if dims == ([1, 0], [0, 1]):
        a, b = r(4, 3, 2), r(3, 4, 5, seed=1)
    if dims in (([2], [0]), 1):
        b = r(5, 6, seed=1)
    close(lazyt.tensordot(T(a, device), T(b, device), dims), np.tensordot(a, b, dims), 1e-4)


def test_tensordot_errors(device):
    a = T(r(2, 3), device)
    with pytest.raises(ShapeError, match="tensordot: contracted dims differ"):
        lazyt.tensordot(a, a, ([1], [0]))
    with pytest.raises(ShapeError, match="tensordot: dims=3"):
        lazyt.tensordot(a, a, 3)
    with pytest.raises(InvalidArgumentError, match="tensordot: dims must be"):
        lazyt.tensordot(a, a, "x")


def test_inner_vdot_chain_matmul_matrix_power(device):
    a, b = r(2, 3), r(4, 3, seed=1)
    close(lazyt.inner(T(a, device), T(b, device)), np.inner(a, b))
    close(T(a, device).inner(T(b, device)), np.inner(a, b))
    v, w = r(5), r(5, seed=2)
    close(lazyt.vdot(T(v, device), T(w, device)), np.vdot(v, w))
    m1, m2, m3 = r(2, 3), r(3, 4, seed=1), r(4, 2, seed=2)
    close(lazyt.chain_matmul(T(m1, device), T(m2, device), T(m3, device)), m1 @ m2 @ m3, 1e-4)
    s = r(2, 3, 3, seed=3) * 0.5
    for n in (0, 1, 2, 5):
        close(lazyt.matrix_power(T(s, device), n), np.linalg.matrix_power(s, n), 1e-4, 1e-5)
    with pytest.raises(InvalidArgumentError, match="matrix_power: n=-1"):
        lazyt.matrix_power(T(s, device), -1)
    with pytest.raises(ShapeError, match="vdot"):
        lazyt.vdot(T(a, device), T(a, device))


def test_add_products(device):
    x, m, v = r(3), r(3, 4, seed=1), r(4, seed=2)
    close(lazyt.addmv(T(x, device), T(m, device), T(v, device), beta=0.5, alpha=2),
          0.5 * x + 2 * m @ v)
    o = r(3, 4, seed=3)
    a, b = r(3, seed=4), r(4, seed=5)
    close(lazyt.addr(T(o, device), T(a, device), T(b, device)), o + np.outer(a, b))
    b1, b2 = r(5, 3, 2, seed=6), r(5, 2, 4, seed=7)
    close(lazyt.addbmm(T(o, device), T(b1, device), T(b2, device), alpha=0.5),
          o + 0.5 * np.einsum("bij,bjk->ik", b1, b2), 1e-4)
    nan = np.full((3, 4), np.nan, np.float32)
    close(lazyt.addr(T(nan, device), T(a, device), T(b, device), beta=0), np.outer(a, b))
    t = T(x.copy(), device)
    t.addmv_(T(m, device), T(v, device))
    close(t, x + m @ v)


def test_addcmul_addcdiv_and_in_place(device):
    x, a, b = r(2, 3), r(2, 3, seed=1), np.abs(r(3, seed=2)) + 0.5
    close(lazyt.addcmul(T(x, device), T(a, device), T(b, device), value=0.5), x + 0.5 * a * b)
    close(lazyt.addcdiv(T(x, device), T(a, device), T(b, device), value=-2), x - 2 * a / b)
    t = T(x.copy(), device)
    assert t.addcmul_(T(a, device), T(b, device)) is t
    close(t, x + a * b)
    t.addcdiv_(T(a, device), T(b, device), value=3)
    close(t, x + a * b + 3 * a / b)
    with pytest.raises(DTypeError, match="addcdiv: integer division"):
        lazyt.addcdiv(T(x, device), lazyt.ones(2, 3, dtype=lazyt.int32, device=device),
                      lazyt.ones(2, 3, dtype=lazyt.int32, device=device))


def test_atleast(device):
    s, v, m, c = (T(np.float32(2), device), T(r(3), device), T(r(2, 3), device),
                  T(r(1, 2, 3), device))
    assert [t.shape for t in lazyt.atleast_1d(s, v)] == [(1,), (3,)]
    assert lazyt.atleast_2d(v).shape == (1, 3) and lazyt.atleast_2d(s).shape == (1, 1)
    assert [t.shape for t in lazyt.atleast_3d([s, v, m, c])] == \
        [np.atleast_3d(np.zeros(t.shape)).shape for t in (s, v, m, c)]


def test_diagflat_block_diag_cartesian_prod(device):
    a = r(2, 2)
    close(lazyt.diagflat(T(a, device), 1), np.diagflat(a, 1))
    b, c = r(1, 3, seed=1), r(2, seed=2)
    want = np.zeros((5, 7), np.float32)
    want[:2, :2], want[2:3, 2:5], want[3, 5:7], want[4, 7:] = a, b, c, []
    got = lazyt.block_diag(T(a, device), T(b, device), T(c, device))
    assert got.shape == (4, 7)
    close(got, want[:4])
    x, y = np.array([1, 2, 3]), np.array([4, 5])
    close(lazyt.cartesian_prod(T(x, device), T(y, device)), list(itertools.product(x, y)))


@pytest.mark.parametrize("r_,rep", [(2, False), (3, False), (2, True), (0, False), (5, False)])
def test_combinations(device, r_, rep):
    x = np.array([1.5, 2.0, -1.0, 4.0], np.float32)
    gen = itertools.combinations_with_replacement if rep else itertools.combinations
    want = np.asarray(list(gen(x, r_)), np.float32)
    got = lazyt.combinations(T(x, device), r_, with_replacement=rep)
    assert got.shape == (want.reshape(-1, r_).shape if r_ else (0,))
    if want.size:
        close(got, want)


@pytest.mark.parametrize("row,col,off", [(3, 3, 0), (4, 3, 1), (3, 5, -1), (0, 2, 0)])
def test_triangle_indices(device, row, col, off):
    got = lazyt.tril_indices(row, col, off, device=device)
    assert got.dtype is lazyt.int64
    np.testing.assert_array_equal(got.numpy(), np.stack(np.tril_indices(row, off, col)))
    np.testing.assert_array_equal(lazyt.triu_indices(row, col, off, device=device).numpy(),
                                  np.stack(np.triu_indices(row, off, col)))
    with pytest.raises(DTypeError, match="tril_indices"):
        lazyt.tril_indices(2, 2, dtype=lazyt.float32)


@pytest.mark.parametrize("n,inc", [(None, False), (4, True), (1, False)])
def test_vander(device, n, inc):
    x = np.array([1, 2, 3, 5])
    got = lazyt.vander(T(x, device), N=n, increasing=inc)
    assert got.dtype is lazyt.int64
    np.testing.assert_array_equal(got.numpy(), np.vander(x, n, increasing=inc))
    xf = r(3)
    close(lazyt.vander(T(xf, device), 3), np.vander(xf, 3))


def test_cov_and_corrcoef(device):
    x = r(3, 10)
    close(lazyt.cov(T(x, device)), np.cov(x), 1e-4, 1e-5)
    close(lazyt.cov(T(x, device), correction=0), np.cov(x, bias=True), 1e-4, 1e-5)
    f = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 4])
    a = np.abs(r(10, seed=3)).astype(np.float32) + 0.1
    close(lazyt.cov(T(x, device), fweights=T(f, device), aweights=T(a, device)),
          np.cov(x, fweights=f, aweights=a), 1e-4, 1e-5)
    close(lazyt.cov(T(x[0], device)), np.cov(x[0]), 1e-4, 1e-5)
    close(lazyt.corrcoef(T(x, device)), np.corrcoef(x), 1e-4, 1e-5)
    with pytest.raises(ShapeError, match="cov: fweights"):
        lazyt.cov(T(x, device), fweights=T(f[:3], device))


def test_trapezoid(device):
    y, x = r(3, 6), np.sort(r(6, seed=1))
    close(lazyt.trapezoid(T(y, device)), np.trapezoid(y, axis=-1))
    close(lazyt.trapezoid(T(y, device), dx=0.5, dim=0), np.trapezoid(y, dx=0.5, axis=0))
    close(lazyt.trapz(T(y, device), T(x, device)), np.trapezoid(y, x, axis=-1), 1e-4)
    cum = lazyt.cumulative_trapezoid(T(y, device), T(x, device))
    want = np.cumsum((y[:, 1:] + y[:, :-1]) * np.diff(x) / 2, axis=-1)
    close(cum, want, 1e-4)
    with pytest.raises(InvalidArgumentError, match="trapezoid: pass x or dx"):
        lazyt.trapezoid(T(y, device), T(x, device), dx=1.0)


def test_renorm(device):
    x = r(4, 3) * 3
    got = lazyt.renorm(T(x, device), 2, 0, 1.5)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    want = np.where(n > 1.5, x * 1.5 / (n + 1e-7), x)
    close(got, want)
    t = T(x.copy(), device)
    t.renorm_(1, 1, 2.0)
    n1 = np.abs(x).sum(0, keepdims=True)
    close(t, np.where(n1 > 2.0, x * 2.0 / (n1 + 1e-7), x))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pdist(device, p):
    x = r(5, 3)
    i, j = np.triu_indices(5, 1)
    want = (np.abs(x[i] - x[j]) ** p).sum(-1) ** (1 / p)
    close(lazyt.pdist(T(x, device), p), want, 1e-4)
    assert lazyt.pdist(T(r(1, 3), device)).shape == (0,)


def test_logaddexp2_ldexp_frexp(device):
    a = np.array([0.0, 1.0, -200.0, 100.0, -np.inf, np.inf, 3.0], np.float32)
    b = np.array([0.0, 3.0, -201.0, 100.0, -np.inf, 1.0, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        close(lazyt.logaddexp2(T(a, device), T(b, device)), np.logaddexp2(a, b))
    e = np.array([0, 3, -2, 10, 1, 0, 2])
    close(lazyt.ldexp(T(a[:4], device), T(e[:4], device)), np.ldexp(a[:4], e[:4]))
    x = np.array([0.0, 1.0, -3.5, 0.125, 1e-30, 7.0, 1024.0, -0.75, np.inf, 1 - 2 ** -24],
                 np.float32)
    m, ex = lazyt.frexp(T(x, device))
    wm, we = np.frexp(x)
    np.testing.assert_array_equal(m.numpy(), wm)
    np.testing.assert_array_equal(ex.numpy(), we)
    assert ex.dtype is lazyt.int32 and lazyt.frexp(T(x, device)).mantissa.dtype is lazyt.float32


def test_gradients():
    a = lazyt.tensor(r(3, 4).astype(np.float64)).require_grad()
    b = lazyt.tensor(r(4, 2, seed=1).astype(np.float64)).require_grad()
    assert gradcheck(lambda x, y: lazyt.tensordot(x, y, 1), [a, b])
    c = lazyt.tensor(np.abs(r(3, 4, seed=2)).astype(np.float64) + 0.5).require_grad()
    assert gradcheck(lambda x, y: lazyt.addcdiv(x, x, y, value=0.3), [a, c])
    assert gradcheck(lambda x: lazyt.renorm(x, 2, 0, 1.0), [a])
    assert gradcheck(lambda x: lazyt.cov(x), [a])
    assert gradcheck(lambda x: lazyt.pdist(x), [a])
    assert gradcheck(lambda x: lazyt.logaddexp2(x, x * 0.5), [a])
    assert gradcheck(lambda x: lazyt.trapezoid(x, dx=0.3), [a])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = r(3, 4), r(4, 5, seed=1)
    x = r(3, 8, seed=2)
    f = np.array([1, 2, 1, 3, 1, 1, 2, 1])
    w = np.abs(r(8, seed=3)) + 0.1
    pairs = [
        (lazyt.tensordot(lazyt.tensor(a), lazyt.tensor(b), 1),
         torch.tensordot(torch.tensor(a), torch.tensor(b), 1)),
        (lazyt.cov(lazyt.tensor(x), fweights=lazyt.tensor(f), aweights=lazyt.tensor(w)),
         torch.cov(torch.tensor(x), fweights=torch.tensor(f), aweights=torch.tensor(w))),
        (lazyt.corrcoef(lazyt.tensor(x)), torch.corrcoef(torch.tensor(x))),
        (lazyt.renorm(lazyt.tensor(x), 3, 1, 0.7), torch.renorm(torch.tensor(x), 3, 1, 0.7)),
        (lazyt.pdist(lazyt.tensor(x), 1.5), torch.pdist(torch.tensor(x), 1.5)),
        (lazyt.combinations(lazyt.tensor(x[0]), 3), torch.combinations(torch.tensor(x[0]), 3)),
        (lazyt.vander(lazyt.tensor(x[0]), 4), torch.vander(torch.tensor(x[0]), 4)),
        (lazyt.cumulative_trapezoid(lazyt.tensor(x), dx=0.2),
         torch.cumulative_trapezoid(torch.tensor(x), dx=0.2)),
        (lazyt.logaddexp2(lazyt.tensor(a), lazyt.tensor(a.T @ a)[:3]),
         torch.logaddexp2(torch.tensor(a), torch.tensor(a.T @ a)[:3])),
        (lazyt.block_diag(lazyt.tensor(a), lazyt.tensor(b)),
         torch.block_diag(torch.tensor(a), torch.tensor(b))),
        (lazyt.atleast_3d(lazyt.tensor(a)), torch.atleast_3d(torch.tensor(a))),
    ]
    for got, want in pairs:
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    m, e = lazyt.frexp(lazyt.tensor(x))
    tm, te = torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(m.numpy(), tm.numpy())
    np.testing.assert_array_equal(e.numpy(), te.numpy())
