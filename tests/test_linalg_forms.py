"""torch's older top-level linear algebra (lazyt/linalg_forms.py) and linalg's matrix_exp,
lu_solve and *_ex forms, against torch: values, and gradients where torch gives them."""
import warnings

import numpy as np
import pytest

import lazyt
from lazyt import InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", category=UserWarning, module="torch")

RNG = np.random.default_rng(5)


def _spd(*batch, n=4):
    m = RNG.standard_normal((*batch, n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _both(a):
    return lazyt.tensor(a), torch.from_numpy(np.array(a))


def _close(a, b, tol=1e-9):
    if isinstance(b, (tuple, list)):
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("scale", [1e-3, 0.5, 3.0, 40.0])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)])
def test_matrix_exp_matches_torch(scale, shape):
    a = RNG.standard_normal(shape) * scale
    la, ta = _both(a)
    ref = torch.linalg.matrix_exp(ta)
    got = lazyt.linalg.matrix_exp(la)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-11,
                               atol=1e-11 * float(np.abs(ref.numpy()).max()))
    _close(lazyt.matrix_exp(la), ref, 1e-9 * float(np.abs(ref.numpy()).max()))


def test_matrix_exp_gradient_and_float32():
    a = RNG.standard_normal((3, 3)) * 0.7
    la, ta = lazyt.tensor(a).require_grad(), torch.from_numpy(a).requires_grad_()
    w = RNG.standard_normal((3, 3))
    (lazyt.linalg.matrix_exp(la) * lazyt.tensor(w)).sum().backward()
    (torch.linalg.matrix_exp(ta) * torch.from_numpy(w)).sum().backward()
    _close(la.grad, ta.grad, 1e-8)
    f = a.astype(np.float32)
    np.testing.assert_allclose(lazyt.tensor(f).matrix_exp().numpy(),
                               torch.from_numpy(f).matrix_exp().numpy(), rtol=1e-5, atol=1e-5)
    assert lazyt.matrix_exp(lazyt.zeros(0, 0)).shape == (0, 0)
    with pytest.raises(ShapeError):
        lazyt.matrix_exp(lazyt.zeros(2, 3))


@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_v(some):
    a = RNG.standard_normal((2, 5, 3))
    la, ta = _both(a)
    u, s, v = lazyt.svd(la, some=some)
    tu, ts, tv = torch.svd(ta, some=some)
    assert (u.shape, s.shape, v.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tv.shape))
    _close(s, ts, 1e-9)
    k = 3
    recon = (u[..., :k] * s.unsqueeze(-2)) @ v[..., :k].mT
    np.testing.assert_allclose(recon.numpy(), a, atol=1e-9)
    r = la.svd(compute_uv=False)
    tr = torch.svd(ta, compute_uv=False)
    _close(list(r), list(tr), 1e-9)
    assert r.V.shape == (2, 3, 3) and float(r.U.abs().sum().item()) == 0


def test_cholesky_family():
    a = _spd(2)
    la, ta = _both(a)
    # torch 2.x removed torch.cholesky; lazyt keeps the old form over linalg.cholesky
    _close(lazyt.cholesky(la), torch.linalg.cholesky(ta))
    _close(la.cholesky(upper=True), torch.linalg.cholesky(ta).mH)
    b = RNG.standard_normal((2, 4, 3))
    lb, tb = _both(b)
    for upper in (False, True):
        fac, tfac = lazyt.cholesky(la, upper), torch.linalg.cholesky(ta, upper=upper)
        _close(lazyt.cholesky_solve(lb, fac, upper), torch.cholesky_solve(tb, tfac, upper))
        _close(fac.cholesky_inverse(upper), torch.cholesky_inverse(tfac, upper), 1e-8)
    with pytest.raises(ShapeError):
        lazyt.cholesky_inverse(lazyt.zeros(2, 3))


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, False, True),
                                                  (True, True, False), (False, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a = RNG.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((3, 4, 2))
    (la, ta), (lb, tb) = _both(a), _both(b)
    got = lazyt.triangular_solve(lb, la, upper, transpose, unit)
    ref = torch.triangular_solve(tb, ta, upper, transpose, unit)
    _close(got.solution, ref.solution)
    _close(got.cloned_coefficient, ref.cloned_coefficient)
    _close(lb.triangular_solve(la, upper, transpose, unit)[0], ref[0])


def test_lu_forms():
    a = RNG.standard_normal((2, 5, 5))
    la, ta = _both(a)
    got, ref = lazyt.lu(la), torch.lu(ta)
    _close(got[0], ref[0])
    np.testing.assert_array_equal(got[1].numpy(), ref[1].numpy())
    got3 = la.lu(get_infos=True)
    assert len(got3) == 3 and got3[2].dtype is lazyt.int32 and not got3[2].numpy().any()
    _close(list(lazyt.lu_unpack(*got)), list(torch.lu_unpack(*ref)))
    p, l_, u = lazyt.lu_unpack(*got, unpack_data=False)
    assert l_.numel() == 0 and u.numel() == 0 and p.shape == (2, 5, 5)
    b = RNG.standard_normal((2, 5, 3))
    lb, tb = _both(b)
    _close(lazyt.lu_solve(lb, *got), torch.lu_solve(tb, *ref))
    _close(lb.lu_solve(*got), torch.lu_solve(tb, *ref))
    wide = RNG.standard_normal((3, 5))
    lw, tw = _both(wide)
    _close(list(lazyt.lu_unpack(*lazyt.linalg.lu_factor(lw))),
           list(torch.lu_unpack(*torch.linalg.lu_factor(tw))))
    with pytest.raises(ShapeError):
        lazyt.lu_unpack(got[0], got[1][..., :3])
    with pytest.raises(InvalidArgumentError):
        lazyt.lu_unpack(got[0], got[1].to(lazyt.float64))


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_linalg_lu_solve(left, adjoint):
    a = RNG.standard_normal((4, 4))
    b = RNG.standard_normal((4, 2) if left else (2, 4))
    (la, ta), (lb, tb) = _both(a), _both(b)
    lu_, piv = lazyt.linalg.lu_factor(la)
    tlu, tpiv = torch.linalg.lu_factor(ta)
    _close(lazyt.linalg.lu_solve(lu_, piv, lb, left=left, adjoint=adjoint),
           torch.linalg.lu_solve(tlu, tpiv, tb, left=left, adjoint=adjoint))


def test_lu_solve_gradient():
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((3, 2))
    la, ta = lazyt.tensor(a).require_grad(), torch.from_numpy(a).requires_grad_()
    lb, tb = lazyt.tensor(b).require_grad(), torch.from_numpy(b).requires_grad_()
    lazyt.linalg.lu_solve(*lazyt.linalg.lu_factor(la), lb).square().sum().backward()
    torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb).square().sum().backward()
    _close(la.grad, ta.grad, 1e-8)
    _close(lb.grad, tb.grad, 1e-8)


def test_ex_forms_report_info():
    good = _spd(n=3)
    bad = good.copy()
    bad[1, 1] = -50.0
    lg, tg = _both(np.stack([good, bad]))
    got, ref = lazyt.linalg.cholesky_ex(lg), torch.linalg.cholesky_ex(tg)
    np.testing.assert_array_equal(got.info.numpy(), ref.info.numpy())
    _close(got.L[0], ref.L[0])
    with pytest.raises(lazyt.linalg.LinAlgError):
        lazyt.linalg.cholesky_ex(lg, check_errors=True)
    sing = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    ls, ts = _both(sing)
    got, ref = lazyt.linalg.inv_ex(ls), torch.linalg.inv_ex(ts)
    np.testing.assert_array_equal(got.info.numpy(), ref.info.numpy())
    _close(got.inverse[1], ref.inverse[1])
    res = lazyt.linalg.solve_ex(ls[1:], lazyt.ones(1, 2, 1))
    _close(res.result, torch.linalg.solve_ex(ts[1:], torch.ones(1, 2, 1, dtype=torch.float64))
           .result)
    got, ref = lazyt.linalg.lu_factor_ex(ls), torch.linalg.lu_factor_ex(ts)
    np.testing.assert_array_equal(got.info.numpy(), ref.info.numpy())
    with pytest.raises(lazyt.linalg.LinAlgError):
        lazyt.linalg.inv_ex(ls, check_errors=True)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.inv_ex(ts, check_errors=True)


def test_norms_pinverse_and_mvlgamma():
    a = RNG.standard_normal((2, 3, 4))
    la, ta = _both(a)
    _close(lazyt.pinverse(la), torch.pinverse(ta), 1e-8)
    _close(lazyt.nuclear_norm(la[0]), torch.nuclear_norm(ta[0]), 1e-8)
    _close(lazyt.nuclear_norm(la, (1, 2)), torch.nuclear_norm(ta, (1, 2)), 1e-8)
    _close(lazyt.nuclear_norm(la[0], True), torch.nuclear_norm(ta[0], True), 1e-8)
    _close(lazyt.frobenius_norm(la, (1, 2)), torch.frobenius_norm(ta, (1, 2)))
    _close(lazyt.frobenius_norm(la, 1, True), torch.frobenius_norm(ta, 1, True))
    for dim in (0, 1, 2, -1):
        _close(lazyt.norm_except_dim(la, 2, dim), torch.norm_except_dim(ta, 2, dim))
    _close(lazyt.norm_except_dim(la, 3, 1), torch.norm_except_dim(ta, 3, 1))
    x = np.array([2.5, 3.0, 10.0])
    lx, tx = _both(x)
    _close(lazyt.mvlgamma(lx, 2), torch.mvlgamma(tx, 2))
    _close(lx.mvlgamma(3), tx.mvlgamma(3))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [((5, 3), (5, 2)), ((2, 6, 4), (2, 6, 3)), ((3, 5), (3, 2))])
def test_lstsq_matches_torch(driver, shape):
    a, b = RNG.standard_normal(shape[0]), RNG.standard_normal(shape[1])
    (la, ta), (lb, tb) = _both(a), _both(b)
    got = lazyt.linalg.lstsq(la, lb, driver=driver)
    ref = torch.linalg.lstsq(ta, tb, driver=driver)
    _close(got.solution, ref.solution, 1e-8)
    for field in ("residuals", "rank", "singular_values"):
        g, r = getattr(got, field), getattr(ref, field)
        assert tuple(g.shape) == tuple(r.shape), field
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-8, atol=1e-8)


def test_lstsq_rank_deficient_and_errors():
    a = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 4))         # rank 2
    b = RNG.standard_normal((6, 1))
    (la, ta), (lb, tb) = _both(a), _both(b)
    got, ref = lazyt.linalg.lstsq(la, lb, driver="gelsd"), torch.linalg.lstsq(ta, tb,
                                                                             driver="gelsd")
    assert int(got.rank.item()) == int(ref.rank) == 2
    _close(got.solution, ref.solution, 1e-7)
    assert got.residuals.shape == (0,)
    with pytest.raises(InvalidArgumentError):
        lazyt.linalg.lstsq(la, lb, driver="gelsq")
    with pytest.raises(ShapeError):
        lazyt.linalg.lstsq(la, lazyt.ones(5, 1, dtype=lazyt.float64))


def test_householder_family_matches_torch():
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        a = RNG.standard_normal(shape)
        la, ta = _both(a)
        got, ref = lazyt.geqrf(la), torch.geqrf(ta)
        _close(got.a, ref.a)
        _close(got.tau, ref.tau)
        if shape[-2] >= shape[-1]:
            _close(lazyt.linalg.householder_product(*got), torch.linalg.householder_product(*ref))
            _close(la.orgqr(got.tau) if False else lazyt.orgqr(*got), torch.orgqr(*ref))
        m = shape[-2]
        for left, transpose in ((True, False), (True, True), (False, False), (False, True)):
            c = RNG.standard_normal(shape[:-2] + ((m, 2) if left else (2, m)))
            lc, tc = _both(c)
            _close(lazyt.ormqr(got.a, got.tau, lc, left, transpose),
                   torch.ormqr(ref.a, ref.tau, tc, left, transpose))
    with pytest.raises(ShapeError):
        lazyt.linalg.householder_product(lazyt.ones(2, 3), lazyt.ones(2))


def test_vander_tensorinv_tensorsolve():
    x = RNG.standard_normal((2, 3))
    lx, tx = _both(x)
    for n in (None, 2, 5):
        _close(lazyt.linalg.vander(lx, N=n), torch.linalg.vander(tx, N=n))
    for n in (0, 1):
        with pytest.raises(RuntimeError):
            torch.linalg.vander(tx, N=n)
        with pytest.raises(InvalidArgumentError):
            lazyt.linalg.vander(lx, N=n)
    a = RNG.standard_normal((4, 6, 8, 3))
    la, ta = _both(a)
    _close(lazyt.linalg.tensorinv(la, ind=2), torch.linalg.tensorinv(ta, ind=2), 1e-8)
    with pytest.raises(ShapeError):
        lazyt.linalg.tensorinv(la, ind=1)
    a = RNG.standard_normal((2, 3, 6))
    b = RNG.standard_normal((2, 3))
    (la, ta), (lb, tb) = _both(a), _both(b)
    _close(lazyt.linalg.tensorsolve(la, lb), torch.linalg.tensorsolve(ta, tb), 1e-8)
    a = RNG.standard_normal((6, 2, 3))
    la, ta = _both(a)
    _close(lazyt.linalg.tensorsolve(la, lb, dims=(0,)), torch.linalg.tensorsolve(ta, tb,
                                                                                 dims=(0,)), 1e-8)
