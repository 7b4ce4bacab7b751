"""lazyt.distributions against torch.distributions: log_prob, cdf, icdf, entropy and moments
(float32 and float64), gradients of log_prob and of reparameterized samples with the same
noise, sample shapes, dtypes and statistics, KL divergences, expand, and validation errors."""
import math

import numpy as np
import pytest

import lazyt
import lazyt.distributions as D
from lazyt import InvalidArgumentError, MissingImplError, ShapeError

torch = pytest.importorskip("torch")
TD = torch.distributions

DTYPES = [(lazyt.float32, torch.float32, 2e-5), (lazyt.float64, torch.float64, 1e-10)]
R = np.random.default_rng(1234)
POS, POS2 = R.uniform(0.5, 3.0, 4), R.uniform(0.5, 3.0, 4)
REAL, PROB = R.normal(size=4), R.uniform(0.1, 0.9, 4)
COUNTS = np.array([0.0, 1.0, 2.0, 5.0])

# name: (parameters, values to score); the same constructor exists in both libraries
SCALAR_CASES = {
    "Normal": ((REAL, POS), R.normal(size=(3, 4))),
    "LogNormal": ((REAL, POS), R.uniform(0.2, 4.0, (3, 4))),
    "Uniform": ((REAL, REAL + POS), REAL + 0.3 * POS),
    "Laplace": ((REAL, POS), R.normal(size=(3, 4))),
    "Cauchy": ((REAL, POS), R.normal(size=(3, 4))),
    "Exponential": ((POS,), R.uniform(0.0, 4.0, (3, 4))),
    "Gamma": ((POS, POS2), R.uniform(0.1, 4.0, (3, 4))),
    "Chi2": ((POS,), R.uniform(0.1, 4.0, (3, 4))),
    "Beta": ((POS, POS2), R.uniform(0.05, 0.95, (3, 4))),
    "StudentT": ((POS + 2, REAL, POS2), R.normal(size=(3, 4))),
    "Poisson": ((POS,), COUNTS),
    "Geometric": ((PROB,), COUNTS),
    "Bernoulli": ((PROB,), np.array([0.0, 1.0, 1.0, 0.0])),
}


def _pair(name, params, ld, td, requires_grad=False):
    lp = [lazyt.tensor(p, dtype=ld, requires_grad=requires_grad) for p in params]
    tp = [torch.tensor(p, dtype=td, requires_grad=requires_grad) for p in params]
    return getattr(D, name)(*lp), getattr(TD, name)(*tp), lp, tp


def _close(a, b, tol):
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a.numpy(), b, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("ld,td,tol", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_scores_and_moments_match_torch(name, ld, td, tol):
    params, value = SCALAR_CASES[name]
    ldist, tdist, _, _ = _pair(name, params, ld, td)
    assert ldist.batch_shape == tuple(tdist.batch_shape)
    assert ldist.event_shape == tuple(tdist.event_shape)
    lv, tv = lazyt.tensor(value, dtype=ld), torch.tensor(value, dtype=td)
    lp = ldist.log_prob(lv)
    assert lp.dtype is ld and lp.shape == tuple(tdist.log_prob(tv).shape)
    _close(lp, tdist.log_prob(tv), tol * 10)
    for m in ("mean", "variance", "stddev", "mode"):
        _close(getattr(ldist, m), getattr(tdist, m), tol * 10)
    try:
        expected = tdist.entropy()
    except NotImplementedError:
        expected = None
    if expected is not None:
        _close(ldist.entropy(), expected, tol * 10)
    try:
        expected = tdist.cdf(tv)
    except NotImplementedError:
        expected = None
    if expected is not None:
        _close(ldist.cdf(lv), expected, tol * 10)
        q = np.array([0.05, 0.3, 0.5, 0.9])
        try:
            expected = tdist.icdf(torch.tensor(q, dtype=td))
        except NotImplementedError:  # torch's Gamma and Chi2 have a cdf but no icdf
            with pytest.raises(lazyt.MissingImplError):
                ldist.icdf(lazyt.tensor(q, dtype=ld))
        else:
            _close(ldist.icdf(lazyt.tensor(q, dtype=ld)), expected, tol * 100)


@pytest.mark.parametrize("name", ["Normal", "LogNormal", "Laplace", "Cauchy", "Exponential",
                                  "Gamma", "Beta", "StudentT", "Poisson", "Geometric",
                                  "Bernoulli", "Uniform"])
def test_log_prob_and_entropy_gradients_match_torch(name):
    params, value = SCALAR_CASES[name]
    ldist, tdist, lp, tp = _pair(name, params, lazyt.float64, torch.float64, True)
    lv, tv = lazyt.tensor(value, dtype=lazyt.float64), torch.tensor(value)
    lout, tout = ldist.log_prob(lv).sum(), tdist.log_prob(tv).sum()
    if name not in ("Poisson", "Uniform", "Geometric"):
        lout, tout = lout + ldist.entropy().sum(), tout + tdist.entropy().sum()
    lg = lazyt.autograd.grad(lout, lp)
    tg = torch.autograd.grad(tout, tp)
    for a, b in zip(lg, tg):
        _close(a, b, 1e-8)


@pytest.mark.parametrize("ld,td,tol", DTYPES, ids=["float32", "float64"])
def test_rsample_gradients_match_torch_with_the_same_noise(ld, td, tol):
    loc, scale = REAL, POS
    # Normal: eps recovered from the sample; torch's rsample is loc + eps * scale
    lloc, lscale = (lazyt.tensor(p, dtype=ld, requires_grad=True) for p in (loc, scale))
    x = D.Normal(lloc, lscale).rsample((50,))
    lg = lazyt.autograd.grad((x.sin() * x).sum(), [lloc, lscale])
    eps = (x.detach().numpy().astype(np.float64) - loc) / scale
    tloc, tscale = (torch.tensor(p, dtype=td, requires_grad=True) for p in (loc, scale))
    tx = tloc + torch.tensor(eps, dtype=td) * tscale
    tg = torch.autograd.grad((tx.sin() * tx).sum(), [tloc, tscale])
    for a, b in zip(lg, tg):
        _close(a, b, tol * 1000)
    # MultivariateNormal from a covariance: eps = L^-1 (x - loc)
    a = R.normal(size=(3, 3))
    lA = lazyt.tensor(a, dtype=ld, requires_grad=True)
    lm = lazyt.tensor(loc[:3], dtype=ld, requires_grad=True)
    cov = lA @ lA.transpose(0, 1) + lazyt.eye(3, dtype=ld)
    x = D.MultivariateNormal(lm, covariance_matrix=cov).rsample((40,))
    lg = lazyt.autograd.grad((x ** 2).sum(), [lm, lA])
    L = np.linalg.cholesky(a @ a.T + np.eye(3))
    eps = np.linalg.solve(L, (x.detach().numpy().astype(np.float64) - loc[:3]).T).T
    tA = torch.tensor(a, dtype=td, requires_grad=True)
    tm = torch.tensor(loc[:3], dtype=td, requires_grad=True)
    tL = torch.linalg.cholesky(tA @ tA.T + torch.eye(3, dtype=td))
    tx = tm + torch.tensor(eps, dtype=td) @ tL.T
    tg = torch.autograd.grad((tx ** 2).sum(), [tm, tA])
    for g1, g2 in zip(lg, tg):
        _close(g1, g2, tol * 1000)


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    alpha = np.array([0.3, 1.0, 2.5, 7.0, 40.0])
    la = lazyt.tensor(alpha, dtype=lazyt.float64, requires_grad=True)
    x = D.Gamma(la, 1.0).rsample((20,))
    (g,) = lazyt.autograd.grad(x.sum(), [la])
    xs = torch.tensor(x.detach().numpy())
    slope = torch._standard_gamma_grad(torch.tensor(alpha).expand(20, 5), xs)
    np.testing.assert_allclose(g.numpy(), slope.sum(0).numpy(), rtol=2e-3)
    # rate: x = standard / rate, an ordinary product
    lr = lazyt.tensor(2.0, dtype=lazyt.float64, requires_grad=True)
    y = D.Gamma(lazyt.tensor(alpha, dtype=lazyt.float64), lr).rsample((3,))
    (gr,) = lazyt.autograd.grad(y.sum(), [lr])
    np.testing.assert_allclose(gr.item(), -y.detach().numpy().sum() / 2.0, rtol=1e-10)


def test_beta_and_dirichlet_rsample_gradients_are_unbiased():
    lazyt.manual_seed(3)
    a, b = 2.0, 3.0
    la = lazyt.tensor(a, dtype=lazyt.float64, requires_grad=True)
    lb = lazyt.tensor(b, dtype=lazyt.float64, requires_grad=True)
    n = 20000
    x = D.Beta(la, lb).rsample((n,))
    ga, gb = lazyt.autograd.grad(x.sum() / n, [la, lb])
    # d/da E[x] = b / (a + b)^2, d/db E[x] = -a / (a + b)^2
    assert abs(ga.item() - b / (a + b) ** 2) < 0.01
    assert abs(gb.item() + a / (a + b) ** 2) < 0.01
    c = lazyt.tensor([1.0, 2.0, 3.0], dtype=lazyt.float64, requires_grad=True)
    y = D.Dirichlet(c).rsample((n,))
    (gc,) = lazyt.autograd.grad(y[:, 0].sum() / n, [c])
    np.testing.assert_allclose(gc.numpy(), [5 / 36, -1 / 36, -1 / 36], atol=0.01)


def test_exponential_and_uniform_rsample_gradients():
    rate = lazyt.tensor([0.5, 2.0], requires_grad=True)
    x = D.Exponential(rate).rsample((10,))
    (g,) = lazyt.autograd.grad(x.sum(), [rate])
    np.testing.assert_allclose(g.numpy(), -x.detach().numpy().sum(0) / rate.detach().numpy(),
                               rtol=1e-5)
    low = lazyt.tensor(1.0, requires_grad=True)
    high = lazyt.tensor(3.0, requires_grad=True)
    u = D.Uniform(low, high).rsample((100,))
    gl, gh = lazyt.autograd.grad(u.sum(), [low, high])
    frac = (u.detach().numpy() - 1.0) / 2.0
    np.testing.assert_allclose([gl.item(), gh.item()], [(1 - frac).sum(), frac.sum()],
                               rtol=1e-4)


def _moments(name, params):
    t = getattr(TD, name)(*[torch.tensor(p, dtype=torch.float64) for p in params])
    return t.mean.numpy(), t.variance.numpy()


@pytest.mark.parametrize("name", ["Normal", "LogNormal", "Uniform", "Laplace", "Exponential",
                                  "Gamma", "Chi2", "Beta", "StudentT", "Poisson", "Geometric",
                                  "Bernoulli"])
def test_sample_statistics_shapes_and_dtypes(name):
    lazyt.manual_seed(0)
    params, _ = SCALAR_CASES[name]
    n = 20000
    for ld, td in ((lazyt.float32, torch.float32), (lazyt.float64, torch.float64)):
        ldist, tdist, _, _ = _pair(name, params, ld, td)
        s = ldist.sample((n,))
        assert s.shape == tuple(tdist.sample((n,)).shape) == (n, 4)
        assert s.dtype is ld and not s.requires_grad
    x = s.numpy()
    mean, var = _moments(name, params)
    se_mean = np.sqrt(var / n)
    assert (np.abs(x.mean(0) - mean) < 5 * se_mean).all(), (x.mean(0), mean)
    if name not in ("LogNormal", "StudentT"):      # their variance estimates are heavy-tailed
        rel = np.abs(x.var(0) - var) / var
        assert (rel < 0.1).all(), (x.var(0), var)
    if ldist.support.is_discrete:
        assert bool(ldist.support.check(s).all())


def test_categorical_family_matches_torch():
    p = R.uniform(0.1, 1.0, (3, 4))
    lg = R.normal(size=(3, 4))
    v = np.array([0, 3, 1])
    for ld, td, tol in DTYPES:
        for kw in (dict(probs=p), dict(logits=lg)):
            lk = {k: lazyt.tensor(x, dtype=ld) for k, x in kw.items()}
            tk = {k: torch.tensor(x, dtype=td) for k, x in kw.items()}
            lc, tc = D.Categorical(**lk), TD.Categorical(**tk)
            _close(lc.log_prob(lazyt.tensor(v)), tc.log_prob(torch.tensor(v)), tol * 10)
            _close(lc.entropy(), tc.entropy(), tol * 10)
            _close(lc.probs, tc.probs, tol * 10)
            _close(lc.logits, tc.logits, tol * 10)
            assert lc.enumerate_support().shape == tuple(tc.enumerate_support().shape)
            lo, to = D.OneHotCategorical(**lk), TD.OneHotCategorical(**tk)
            oh = np.eye(4)[v]
            _close(lo.log_prob(lazyt.tensor(oh, dtype=ld)), to.log_prob(torch.tensor(oh, dtype=td)),
                   tol * 10)
            _close(lo.mode, to.mode, 0)
            _close(lo.variance, to.variance, tol * 10)
            lb = D.Binomial(10, **{k: x[0] for k, x in lk.items()})
            tb = TD.Binomial(10, **{k: x[0] for k, x in tk.items()})
            c = np.array([0.0, 3.0, 10.0, 5.0])
            _close(lb.log_prob(lazyt.tensor(c, dtype=ld)), tb.log_prob(torch.tensor(c, dtype=td)),
                   tol * 100)
            _close(lb.entropy(), tb.entropy(), tol * 100)
            _close(lb.mode, tb.mode, 0)
    # sampling: shapes, dtypes, frequencies
    lazyt.manual_seed(1)
    probs = np.array([0.1, 0.2, 0.7])
    s = D.Categorical(lazyt.tensor(probs)).sample((2, 10000))
    assert s.shape == (2, 10000) and s.dtype is lazyt.int64
    freq = np.bincount(s.numpy().ravel(), minlength=3) / 20000
    assert (np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / 20000)).all()
    oh = D.OneHotCategorical(lazyt.tensor(probs)).sample((5,))
    assert oh.shape == (5, 3) and oh.dtype is lazyt.float64   # probs' dtype, as torch
    assert (oh.numpy().sum(-1) == 1).all()
    b = D.Binomial(lazyt.tensor([5.0, 20.0]), lazyt.tensor([0.3, 0.6])).sample((20000,))
    assert b.shape == (20000, 2) and b.dtype is lazyt.float32
    mean, var = np.array([1.5, 12.0]), np.array([1.05, 4.8])
    assert (np.abs(b.numpy().mean(0) - mean) < 5 * np.sqrt(var / 20000)).all()


def _mvn_params():
    a = R.normal(size=(2, 3, 3))
    cov = a @ a.transpose(0, 2, 1) + np.eye(3)
    return R.normal(size=(2, 3)), cov, R.normal(size=(5, 2, 3))


@pytest.mark.parametrize("key", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("ld,td,tol", DTYPES, ids=["float32", "float64"])
def test_multivariate_normal_matches_torch(key, ld, td, tol):
    loc, cov, v = _mvn_params()
    m = np.linalg.cholesky(cov) if key == "scale_tril" else cov
    lm = D.MultivariateNormal(lazyt.tensor(loc, dtype=ld), **{key: lazyt.tensor(m, dtype=ld)})
    tm = TD.MultivariateNormal(torch.tensor(loc, dtype=td), **{key: torch.tensor(m, dtype=td)})
    assert (lm.batch_shape, lm.event_shape) == ((2,), (3,))
    t = tol * 1000 if ld is lazyt.float32 else tol * 10
    _close(lm.log_prob(lazyt.tensor(v, dtype=ld)), tm.log_prob(torch.tensor(v, dtype=td)), t)
    for attr in ("variance", "covariance_matrix", "precision_matrix", "scale_tril", "mean"):
        _close(getattr(lm, attr), getattr(tm, attr), t)
    _close(lm.entropy(), tm.entropy(), t)
    s = lm.sample((4,))
    assert s.shape == (4, 2, 3) and s.dtype is ld
    assert lm.expand((6, 2)).log_prob(lazyt.tensor(v[0], dtype=ld)).shape == (6, 2)


def test_multivariate_normal_log_prob_gradient_and_sample_covariance():
    loc, cov, v = _mvn_params()
    lloc = lazyt.tensor(loc, dtype=lazyt.float64, requires_grad=True)
    ltril = lazyt.tensor(np.linalg.cholesky(cov), dtype=lazyt.float64, requires_grad=True)
    tloc = torch.tensor(loc, requires_grad=True)
    ttril = torch.tensor(np.linalg.cholesky(cov), requires_grad=True)
    lout = D.MultivariateNormal(lloc, scale_tril=ltril).log_prob(lazyt.tensor(v)).sum()
    tout = TD.MultivariateNormal(tloc, scale_tril=ttril).log_prob(torch.tensor(v)).sum()
    for a, b in zip(lazyt.autograd.grad(lout, [lloc, ltril]),
                    torch.autograd.grad(tout, [tloc, ttril])):
        _close(a, b, 1e-9)
    lazyt.manual_seed(5)
    s = D.MultivariateNormal(lazyt.tensor(loc[0]), lazyt.tensor(cov[0])).sample((40000,))
    np.testing.assert_allclose(np.cov(s.numpy().T), cov[0], atol=0.05 * np.abs(cov[0]).max())


def test_dirichlet_matches_torch():
    c = R.uniform(0.5, 3.0, (2, 3))
    x = R.dirichlet([1, 2, 3], size=2)
    for ld, td, tol in DTYPES:
        ldist, tdist = D.Dirichlet(lazyt.tensor(c, dtype=ld)), TD.Dirichlet(torch.tensor(c, dtype=td))
        _close(ldist.log_prob(lazyt.tensor(x, dtype=ld)), tdist.log_prob(torch.tensor(x, dtype=td)),
               tol * 10)
        for m in ("mean", "variance", "mode"):
            _close(getattr(ldist, m), getattr(tdist, m), tol * 10)
        _close(ldist.entropy(), tdist.entropy(), tol * 10)
    low = np.array([[0.5, 0.3, 0.7], [2.0, 3.0, 4.0]])
    _close(D.Dirichlet(lazyt.tensor(low)).mode, TD.Dirichlet(torch.tensor(low)).mode, 1e-6)
    lazyt.manual_seed(2)
    s = D.Dirichlet(lazyt.tensor([1.0, 2.0, 3.0])).sample((20000,))
    assert s.shape == (20000, 3)
    np.testing.assert_allclose(s.numpy().sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(s.numpy().mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)


def test_independent_and_transformed_distributions_match_torch():
    loc, _, v = _mvn_params()
    scale = np.abs(loc) + 1
    li = D.Independent(D.Normal(lazyt.tensor(loc), lazyt.tensor(scale)), 1)
    ti = TD.Independent(TD.Normal(torch.tensor(loc, dtype=torch.float32),
                                  torch.tensor(scale, dtype=torch.float32)), 1)
    assert (li.batch_shape, li.event_shape) == ((2,), (3,))
    _close(li.log_prob(lazyt.tensor(v, dtype=lazyt.float32)),
           ti.log_prob(torch.tensor(v, dtype=torch.float32)), 1e-5)
    _close(li.entropy(), ti.entropy(), 1e-5)
    assert li.expand((4, 2)).batch_shape == (4, 2) and li.has_rsample
    b_loc, b_scale = loc[0], scale[0]
    base = D.Normal(lazyt.tensor(b_loc, dtype=lazyt.float64), lazyt.tensor(b_scale, dtype=lazyt.float64))
    tbase = TD.Normal(torch.tensor(b_loc), torch.tensor(b_scale))
    pairs = [
        ([D.SigmoidTransform()], [TD.SigmoidTransform()]),
        ([D.TanhTransform()], [TD.TanhTransform()]),
        ([D.AffineTransform(1.0, -2.0), D.ExpTransform()],
         [TD.AffineTransform(1.0, -2.0), TD.ExpTransform()]),
        ([D.ComposeTransform([D.AffineTransform(lazyt.tensor(loc[1]).double(),
                                                lazyt.tensor(loc[0]).double()),
                              D.SigmoidTransform()])],
         [TD.ComposeTransform([TD.AffineTransform(torch.tensor(loc[1]), torch.tensor(loc[0])),
                               TD.SigmoidTransform()])]),
    ]
    q = np.array([[0.1], [0.5], [0.9]])
    for lt, tt in pairs:
        ltd, ttd = D.TransformedDistribution(base, lt), TD.TransformedDistribution(tbase, tt)
        y = ttd.sample((3,))
        ly = lazyt.tensor(y.numpy())
        _close(ltd.log_prob(ly), ttd.log_prob(y), 1e-8)
        _close(ltd.cdf(ly), ttd.cdf(y), 1e-8)
        _close(ltd.icdf(lazyt.tensor(q)), ttd.icdf(torch.tensor(q)), 1e-8)
        assert ltd.sample((7,)).shape == (7, 3) and ltd.has_rsample
    # AffineTransform over an event dim: log|det| sums over it
    lt = D.TransformedDistribution(D.Independent(base, 1),
                                   D.AffineTransform(0.5, lazyt.tensor([1.0, 2.0, 3.0]).double(),
                                                     event_dim=1))
    tt = TD.TransformedDistribution(TD.Independent(tbase, 1),
                                    TD.AffineTransform(0.5, torch.tensor([1.0, 2.0, 3.0]).double(),
                                                       event_dim=1))
    y = tt.sample((2,))
    _close(lt.log_prob(lazyt.tensor(y.numpy())), tt.log_prob(y), 1e-10)
    # the inverse of a transform, and log-det gradients
    x = lazyt.tensor([-1.0, 0.5, 2.0], dtype=lazyt.float64, requires_grad=True)
    tx = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    for lt, tt in ((D.TanhTransform(), TD.TanhTransform()),
                   (D.SigmoidTransform(), TD.SigmoidTransform())):
        _close(lt.inv(lt(x)), x, 1e-10)
        lg = lazyt.autograd.grad(lt.log_abs_det_jacobian(x, lt(x)).sum(), [x])[0]
        tg = torch.autograd.grad(tt.log_abs_det_jacobian(tx, tt(tx)).sum(), [tx])[0]
        _close(lg, tg, 1e-10)


def _kl_cases():
    p2 = R.uniform(0.1, 0.9, (2, 4))
    c = R.uniform(0.5, 3.0, (2, 3))
    loc, cov, _ = _mvn_params()
    cov2 = cov[::-1].copy()
    return [
        ("Normal", (REAL, POS), (POS2, POS)),
        ("Bernoulli", (PROB,), (PROB[::-1].copy(),)),
        ("Categorical", (p2[0],), (p2[1],)),
        ("OneHotCategorical", (p2[0],), (p2[1],)),
        ("Uniform", (REAL - 1, REAL + POS), (REAL - 2, REAL + POS + 1)),
        ("Exponential", (POS,), (POS2,)),
        ("Gamma", (POS, POS2), (POS2, POS)),
        ("Beta", (POS, POS2), (POS2, POS)),
        ("Dirichlet", (c[0],), (c[1],)),
        ("Poisson", (POS,), (POS2,)),
        ("Laplace", (REAL, POS), (POS2, POS)),
        ("Geometric", (PROB,), (PROB[::-1].copy(),)),
        ("MultivariateNormal", (loc, cov), (loc[::-1].copy(), cov2)),
    ]


@pytest.mark.parametrize("ld,td,tol", DTYPES, ids=["float32", "float64"])
def test_kl_divergence_matches_torch(ld, td, tol):
    for name, pa, qa in _kl_cases():
        lp = getattr(D, name)(*[lazyt.tensor(x, dtype=ld) for x in pa])
        lq = getattr(D, name)(*[lazyt.tensor(x, dtype=ld) for x in qa])
        tp = getattr(TD, name)(*[torch.tensor(x, dtype=td) for x in pa])
        tq = getattr(TD, name)(*[torch.tensor(x, dtype=td) for x in qa])
        t = tol * (1000 if name == "MultivariateNormal" and ld is lazyt.float32 else 10)
        _close(D.kl_divergence(lp, lq), TD.kl_divergence(tp, tq), t)
    # across families and Independent
    cross = [(("Exponential", (POS,)), ("Gamma", (POS2, POS))),
             (("Gamma", (POS, POS2)), ("Exponential", (POS2,))),
             (("Normal", (REAL, POS)), ("Laplace", (POS2, POS))),
             (("Uniform", (PROB * 0.5, PROB)), ("Beta", (POS, POS2)))]
    for (pn, pa), (qn, qa) in cross:
        lp = getattr(D, pn)(*[lazyt.tensor(x, dtype=ld) for x in pa])
        lq = getattr(D, qn)(*[lazyt.tensor(x, dtype=ld) for x in qa])
        tp = getattr(TD, pn)(*[torch.tensor(x, dtype=td) for x in pa])
        tq = getattr(TD, qn)(*[torch.tensor(x, dtype=td) for x in qa])
        _close(D.kl_divergence(lp, lq), TD.kl_divergence(tp, tq), tol * 10)
    li = [D.Independent(D.Normal(lazyt.tensor(a, dtype=ld).reshape(2, 2),
                                 lazyt.tensor(POS, dtype=ld).reshape(2, 2)), 1) for a in (REAL, POS2)]
    ti = [TD.Independent(TD.Normal(torch.tensor(a, dtype=td).reshape(2, 2),
                                   torch.tensor(POS, dtype=td).reshape(2, 2)), 1) for a in (REAL, POS2)]
    _close(D.kl_divergence(*li), TD.kl_divergence(*ti), tol * 10)


def test_kl_edge_values_and_gradients():
    # disjoint supports give inf, as torch
    u = D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0))
    assert u.item() == math.inf
    b = D.kl_divergence(D.Bernoulli(lazyt.tensor([0.0, 0.5])), D.Bernoulli(lazyt.tensor([0.3, 1.0])))
    tb = TD.kl_divergence(TD.Bernoulli(torch.tensor([0.0, 0.5])), TD.Bernoulli(torch.tensor([0.3, 1.0])))
    _close(b, tb, 1e-6)
    # gradients through KL(Normal || Normal) and KL(Gamma || Gamma)
    for name, pa, qa in (("Normal", (REAL, POS), (POS2, POS)), ("Gamma", (POS, POS2), (POS2, POS)),
                         ("Dirichlet", (POS,), (POS2,))):
        lp = [lazyt.tensor(x, dtype=lazyt.float64, requires_grad=True) for x in pa]
        tp = [torch.tensor(x, requires_grad=True) for x in pa]
        lk = D.kl_divergence(getattr(D, name)(*lp), getattr(D, name)(*[lazyt.tensor(x) .double() for x in qa]))
        tk = TD.kl_divergence(getattr(TD, name)(*tp), getattr(TD, name)(*[torch.tensor(x) for x in qa]))
        for a, c in zip(lazyt.autograd.grad(lk.sum(), lp), torch.autograd.grad(tk.sum(), tp)):
            _close(a, c, 1e-9)


def test_register_kl_and_missing_pairs():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    _close(D.kl_divergence(p, q), D.kl_divergence(D.Normal(0.0, 1.0), q), 0)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return lazyt.tensor(42.0)

    assert D.kl_divergence(p, q).item() == 42.0
    with pytest.raises(MissingImplError, match="Cauchy"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(InvalidArgumentError, match="register_kl"):
        D.register_kl(int, D.Normal)


def test_validation_errors_name_the_distribution():
    with pytest.raises(InvalidArgumentError, match=r"Normal.*scale.*GreaterThan"):
        D.Normal(0.0, lazyt.tensor([1.0, -1.0]))
    with pytest.raises(ValueError):                           # torch's class for these
        D.Bernoulli(probs=lazyt.tensor([1.5]))
    with pytest.raises(InvalidArgumentError, match="Uniform"):
        D.Uniform(2.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="Dirichlet"):
        D.Dirichlet(lazyt.tensor([1.0, 0.0]))
    with pytest.raises(InvalidArgumentError, match="MultivariateNormal.*covariance_matrix"):
        D.MultivariateNormal(lazyt.zeros(2), lazyt.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Exponential(1.0).log_prob(lazyt.tensor([-1.0]))
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Poisson(lazyt.tensor([2.0])).log_prob(lazyt.tensor([1.5]))
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Categorical(lazyt.tensor([0.5, 0.5])).log_prob(lazyt.tensor(2))
    with pytest.raises(ShapeError, match="Normal"):
        D.Normal(lazyt.zeros(3), 1.0).log_prob(lazyt.zeros(4))
    with pytest.raises(InvalidArgumentError, match="lazyt.Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(InvalidArgumentError, match="probs.*logits"):
        D.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        D.MultivariateNormal(lazyt.zeros(2))
    with pytest.raises(ShapeError, match="Dirichlet"):
        D.Dirichlet(lazyt.tensor(1.0))
    with pytest.raises(ShapeError, match="Normal"):
        D.Normal(lazyt.zeros(3), lazyt.ones(2))
    with pytest.raises(InvalidArgumentError, match="Independent"):
        D.Independent(D.Normal(0.0, 1.0), 1)
    with pytest.raises(MissingImplError, match="rsample"):
        D.Poisson(1.0).rsample()
    # validation off: no reads, torch's values (NaN) instead
    d = D.Normal(0.0, lazyt.tensor([-1.0]), validate_args=False)
    assert math.isnan(d.log_prob(lazyt.tensor([0.0])).item())
    assert D.Exponential(1.0, validate_args=False).log_prob(lazyt.tensor(-1.0)).item() == 1.0  # torch's
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)


def test_shapes_expand_and_properties():
    d = D.Normal(lazyt.zeros(3), 1.0)
    assert d.batch_shape == (3,) and d.event_shape == () and d.has_rsample
    assert d.sample().shape == (3,) and d.rsample((2, 4)).shape == (2, 4, 3)
    e = d.expand((5, 3))
    assert e.batch_shape == (5, 3) and e.loc.shape == (5, 3) and e.sample((2,)).shape == (2, 5, 3)
    with pytest.raises(ShapeError, match="expand"):
        d.expand((4,))
    assert D.Normal(0.0, 1.0).batch_shape == ()
    b = D.Bernoulli(logits=lazyt.tensor([0.0, 1.0]))
    assert "probs" not in b.__dict__
    _close(b.probs, [0.5, 1 / (1 + math.exp(-1))], 1e-6)
    assert b.expand((3, 2)).logits.shape == (3, 2)
    assert b.enumerate_support().shape == (2, 2)
    assert b.sample((4,)).dtype is lazyt.float32
    assert not D.Poisson(1.0).has_rsample and D.Gamma(1.0, 1.0).has_rsample
    beta = D.Beta(lazyt.tensor([1.0, 2.0]), 3.0).expand((4, 2))
    assert beta.batch_shape == (4, 2) and beta.sample().shape == (4, 2)
    _close(beta.concentration1, np.broadcast_to([1.0, 2.0], (4, 2)), 0)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert isinstance(D.Normal(0.0, 1.0).support, D.constraints.Constraint)
    assert D.Uniform(0.0, 2.0).support.check(lazyt.tensor([0.0, 2.5])).tolist() == [True, False]
    with pytest.raises(MissingImplError, match="Cauchy"):
        D.Poisson(1.0).cdf(lazyt.tensor(1.0)) if False else D.Cauchy(0.0, 1.0).enumerate_support()


def test_generic_lazyt_sampling_is_seeded():
    lazyt.manual_seed(11)
    a = D.Gamma(lazyt.tensor([2.0]), 1.0).sample((5,)).numpy()
    b = D.Normal(0.0, 1.0).sample((5,)).numpy()
    lazyt.manual_seed(11)
    np.testing.assert_array_equal(D.Gamma(lazyt.tensor([2.0]), 1.0).sample((5,)).numpy(), a)
    np.testing.assert_array_equal(D.Normal(0.0, 1.0).sample((5,)).numpy(), b)
