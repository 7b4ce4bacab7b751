"""lazyt.linalg's eigh, svd and what builds on them (pinv, matrix_rank, cond, the 2 / -2 /
nuclear norms) against numpy.linalg on every device, gradcheck on cpu, torch where
installed. Singular vectors and eigenvectors have free signs, so they are checked through
sign-free quantities: reconstruction, orthonormality, |dot| with the reference's."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck

L = lazyt.linalg
TOL = {np.float32: 2e-5, np.float64: 1e-12}           # relative to the largest value


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def sym(*shape, seed=0, dtype=np.float32):
    a = rand(*shape, seed=seed, dtype=dtype)
    return a + np.swapaxes(a, -1, -2)


def T(a, device):
    return lazyt.tensor(a, device=device)


def close(got, want, tol, scale=1.0):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=0, atol=tol * max(scale, 1e-30))


def orthonormal(q, tol):
    """The columns of q [..., m, k] are orthonormal."""
    k = q.shape[-1]
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 5, 5)])
def test_eigh(device, dtype, shape):
    a = sym(*shape, dtype=dtype)
    w, v = L.eigh(T(a, device))
    assert w.shape == shape[:-1] and v.shape == shape and w.dtype == lazyt.tensor(a).dtype
    tol, scale = TOL[dtype], np.abs(a).max()
    close(w.numpy(), np.linalg.eigvalsh(a.astype(np.float64)), tol, scale)
    wn, vn = w.numpy().astype(np.float64), v.numpy().astype(np.float64)
    orthonormal(vn, tol)
    close((vn * wn[..., None, :]) @ np.swapaxes(vn, -1, -2), a, tol, scale)
    assert np.all(np.diff(wn, axis=-1) >= 0)                      # ascending
    np.testing.assert_array_equal(L.eigvalsh(T(a, device)).numpy(), w.numpy())


def test_eigh_reads_one_triangle(device):
    a = rand(5, 5)                                                 # not symmetric
    for uplo in ("L", "U"):
        got = L.eigvalsh(T(a, device), UPLO=uplo).numpy()
        close(got, np.linalg.eigvalsh(a.astype(np.float64), UPLO=uplo), TOL[np.float32], 5)
    assert L.eigh(T(a, device), "U").eigenvalues.shape == (5,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (2, 1, 3, 5), (1, 1)])
def test_svd(device, dtype, shape):
    a = rand(*shape, dtype=dtype)
    a64 = a.astype(np.float64)
    tol, k = TOL[dtype], min(shape[-2:])
    s_want = np.linalg.svd(a64, compute_uv=False)
    scale = s_want.max()
    for full in (True, False):
        u, s, vh = L.svd(T(a, device), full_matrices=full)
        nu, _, nvh = np.linalg.svd(a64, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (nu.shape, s_want.shape, nvh.shape)
        un, sn, vhn = (t.numpy().astype(np.float64) for t in (u, s, vh))
        close(sn, s_want, tol, scale)
        orthonormal(un, tol)
        orthonormal(np.swapaxes(vhn, -1, -2), tol)
        close((un[..., :, :k] * sn[..., None, :]) @ vhn[..., :k, :], a64, tol, scale)
    close(L.svdvals(T(a, device)).numpy(), s_want, tol, scale)


def test_svd_rank_deficient_keeps_orthonormal_vectors(device):
    """Zero singular values: U and Vh still orthonormal (completed), as torch's are."""
    cases = [np.zeros((3, 3)), np.ones((3, 4)), np.outer([1, 2, 3, 4, 5], [1, -1, 2]),
             np.array([[1, 0, 2], [2, 0, 4], [0, 0, 0]])]
    for a in cases:
        a = a.astype(np.float32)
        u, s, vh = (t.numpy().astype(np.float64) for t in L.svd(T(a, device)))
        close(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), 1e-5, 10)
        orthonormal(u, 1e-5)
        orthonormal(vh.T, 1e-5)
        k = min(a.shape)
        close((u[:, :k] * s) @ vh[:k], a, 1e-5, 10)


def test_matrix_rank_and_pinv(device):
    rng = np.random.default_rng(3)
    for m, n, r in [(4, 4, 2), (5, 3, 1), (3, 6, 3), (4, 4, 0), (2, 2, 2)]:
        a = (rng.integers(-3, 4, (m, r)) @ rng.integers(-3, 4, (r, n))).astype(np.float32)
        x = T(a, device)
        rank = L.matrix_rank(x)
        assert rank.dtype == lazyt.int64 and rank.item() == np.linalg.matrix_rank(a)
        want = np.linalg.pinv(a.astype(np.float64))
        close(L.pinv(x).numpy(), want, 1e-4, np.abs(want).max() + 1)
    b = np.stack([np.diag([3.0, 1.0, 1e-3]), np.diag([2.0, 0.5, 0.0])]).astype(np.float32)
    np.testing.assert_array_equal(L.matrix_rank(T(b, device)).numpy(), [3, 2])
    np.testing.assert_array_equal(L.matrix_rank(T(b, device), atol=0.7).numpy(), [2, 1])
    np.testing.assert_array_equal(L.matrix_rank(T(b, device), rtol=0.3).numpy(), [2, 1])
    s = sym(4, 4, seed=5)
    assert L.matrix_rank(T(s, device), hermitian=True).item() == 4
    close(L.pinv(T(s, device), hermitian=True).numpy(), np.linalg.inv(s.astype(np.float64)),
          1e-4, np.abs(np.linalg.inv(s)).max())


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_matrix_norm_from_singular_values(device, ord):
    a = rand(2, 3, 4)
    want = np.linalg.norm(a.astype(np.float64), ord, axis=(-2, -1))
    close(L.matrix_norm(T(a, device), ord).numpy(), want, 2e-5, want.max())
    got = L.matrix_norm(T(a, device), ord, dim=(0, 2), keepdim=True)
    want = np.linalg.norm(a.astype(np.float64), ord, axis=(0, 2), keepdims=True)
    assert got.shape == want.shape
    close(got.numpy(), want, 2e-5, want.max())
    close(L.norm(T(a[0], device), ord).numpy(), np.linalg.norm(a[0], ord), 2e-5, 5)


def test_cond(device):
    a = rand(2, 4, 4, seed=1) + 3 * np.eye(4, dtype=np.float32)
    a64 = a.astype(np.float64)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        want = np.linalg.cond(a64, p)
        close(L.cond(T(a, device), p).numpy(), want, 1e-4, want.max())
    r = rand(5, 3, seed=2)
    close(L.cond(T(r, device)).numpy(), np.linalg.cond(r.astype(np.float64)), 1e-4, 10)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    assert L.cond(T(singular, device), "fro").item() == np.inf


def test_empty(device):
    x = lambda *shape: T(np.zeros(shape, np.float32), device)  # noqa: E731
    w, v = L.eigh(x(0, 0))
    assert w.shape == (0,) and v.shape == (0, 0)
    assert L.eigvalsh(x(2, 0, 0)).shape == (2, 0)
    u, s, vh = L.svd(x(3, 0))
    assert (u.shape, s.shape, vh.shape) == ((3, 3), (0,), (0, 0))
    np.testing.assert_array_equal(u.numpy(), np.eye(3))
    u, s, vh = L.svd(x(0, 3), full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == ((0, 0), (0,), (0, 3))
    assert L.svdvals(x(0, 3, 3)).shape == (0, 3)
    assert L.pinv(x(3, 0)).shape == (0, 3)
    assert L.matrix_rank(x(0, 0)).item() == 0
    assert L.matrix_norm(x(3, 0), 2).item() == 0 and L.matrix_norm(x(3, 0), "nuc").item() == 0
    assert L.cond(x(2, 0, 0)).shape == (2,)


def test_errors(device):
    with pytest.raises(ShapeError, match="eigh: expected a batch of square matrices"):
        L.eigh(T(rand(2, 3), device))
    with pytest.raises(ShapeError, match="eigvalsh: expected a batch of square matrices"):
        L.eigvalsh(T(rand(3), device))
    with pytest.raises(InvalidArgumentError, match="eigh: UPLO must be 'L' or 'U'"):
        L.eigh(T(rand(3, 3), device), UPLO="X")
    with pytest.raises(ShapeError, match="svd: expected a batch of matrices"):
        L.svd(T(rand(3), device))
    with pytest.raises(ShapeError, match=r"cond\(p=1\): A must be square"):
        L.cond(T(rand(2, 3), device), 1)
    with pytest.raises(InvalidArgumentError, match="cond: p=3 is not a matrix norm"):
        L.cond(T(rand(2, 2), device), 3)
    with pytest.raises(ShapeError, match="matrix_norm: ord=-2 needs at least one"):
        L.matrix_norm(T(np.zeros((0, 3), np.float32), device), -2)


def test_hard_spectra_float64():
    """Strongly graded and clustered spectra converge within the fixed sweeps."""
    n = 12
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n) + 1.0)
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    graded = (q * np.logspace(0, -12, 16)) @ q.T
    cluster = (q * np.r_[np.ones(8), 1e-3 * np.ones(8)]) @ q.T
    for a in (hilbert, graded, cluster, np.eye(6), np.diag([2.0, 2.0, -1.0, 5.0])):
        w, v = (t.numpy() for t in L.eigh(lazyt.tensor(a)))
        scale = np.abs(a).max()
        close(w, np.linalg.eigvalsh(a), 1e-13, scale)
        orthonormal(v, 1e-13)
        close((v * w) @ v.T, a, 1e-13, scale)
        u, s, vh = (t.numpy() for t in L.svd(lazyt.tensor(a[:, 1:])))
        close(s, np.linalg.svd(a[:, 1:], compute_uv=False), 1e-13, scale)
        orthonormal(u, 1e-13)
        orthonormal(vh.T, 1e-13)


def test_gradients():
    a = lazyt.tensor(sym(3, 3, dtype=np.float64)).require_grad()
    b = lazyt.tensor(rand(4, 3, seed=1, dtype=np.float64)).require_grad()
    assert gradcheck(lambda x: L.eigvalsh(x), [a])
    assert gradcheck(lambda x: L.eigh(x).eigenvectors, [a])
    assert gradcheck(lambda x: L.svdvals(x), [b])
    assert gradcheck(lambda x: L.svdvals(x.transpose(0, 1)), [b])
    assert gradcheck(lambda x: L.svd(x, full_matrices=False).U, [b])
    assert gradcheck(lambda x: L.svd(x).Vh, [b])
    assert gradcheck(lambda x: L.pinv(x), [b])
    assert gradcheck(lambda x: L.matrix_norm(x, "nuc") + L.cond(x), [b])


def test_compile():
    f = lazyt.compile(lambda x: tuple(L.svd(x, full_matrices=False)) + (L.eigvalsh(x),))
    for seed in range(4):
        a = sym(2, 4, 4, seed=seed)
        u, s, vh, w = f(lazyt.tensor(a))
        close(s.numpy(), np.linalg.svd(a, compute_uv=False), 2e-5, np.abs(a).max())
        close(w.numpy(), np.linalg.eigvalsh(a), 2e-5, np.abs(a).max())
    assert f.cache_info().hits >= 2


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a = rand(3, 5, 4, seed=7, dtype=np.float64)
    s = sym(2, 5, 5, seed=8, dtype=np.float64)
    x, tx, y, ty = lazyt.tensor(a), torch.tensor(a), lazyt.tensor(s), torch.tensor(s)
    u, sv, vh = L.svd(x, full_matrices=False)
    tu, tsv, tvh = torch.linalg.svd(tx, full_matrices=False)
    close(sv.numpy(), tsv.numpy(), 1e-13, 5)
    dots_u = np.abs((u.numpy() * tu.numpy()).sum(-2))           # distinct values: |dot| = 1
    dots_v = np.abs((vh.numpy() * tvh.numpy()).sum(-1))
    close(dots_u, np.ones_like(dots_u), 1e-10)
    close(dots_v, np.ones_like(dots_v), 1e-10)
    w, v = L.eigh(y)
    tw, tv = torch.linalg.eigh(ty)
    close(w.numpy(), tw.numpy(), 1e-13, 10)
    dots = np.abs((v.numpy() * tv.numpy()).sum(-2))
    close(dots, np.ones_like(dots), 1e-10)
    pairs = [(L.pinv(x), torch.linalg.pinv(tx)), (L.svdvals(x), torch.linalg.svdvals(tx)),
             (L.matrix_norm(x, 2), torch.linalg.matrix_norm(tx, 2)),
             (L.matrix_norm(x, -2), torch.linalg.matrix_norm(tx, -2)),
             (L.norm(x, "nuc", dim=(0, 2)), torch.linalg.norm(tx, "nuc", dim=(0, 2))),
             (L.cond(x), torch.linalg.cond(tx)), (L.cond(y, "nuc"), torch.linalg.cond(ty, "nuc")),
             (L.pinv(y, hermitian=True), torch.linalg.pinv(ty, hermitian=True)),
             (L.eigvalsh(y, UPLO="U"), torch.linalg.eigvalsh(ty, UPLO="U"))]
    for got, want in pairs:
        assert tuple(got.shape) == tuple(want.shape)
        close(got.numpy(), want.numpy(), 1e-12, np.abs(want.numpy()).max())
    d = np.diag([3.0, 1.0, 1e-9, 0.0])
    for kw in ({}, {"atol": 0.5}, {"rtol": 1e-3}, {"atol": 0.0}, {"atol": 2.0, "rtol": 0.1},
               {"hermitian": True}):
        got = L.matrix_rank(lazyt.tensor(d), **kw)
        want = torch.linalg.matrix_rank(torch.tensor(d), **kw)
        assert got.item() == want.item() and got.dtype == lazyt.int64, kw
    got = L.matrix_rank(lazyt.tensor(np.stack([d, 2 * d])), atol=lazyt.tensor([0.5, 2.5]))
    want = torch.linalg.matrix_rank(torch.tensor(np.stack([d, 2 * d])),
                                    atol=torch.tensor([0.5, 2.5], dtype=torch.float64))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
