"""lazyt.distributions against SciPy's (in the test extra, so these run where torch is absent):
log densities, cdfs, entropies and moments in float64, and sample means, on every device."""
import numpy as np
import pytest

import lazyt
import lazyt.distributions as D

st = pytest.importorskip("scipy.stats")

R = np.random.default_rng(5)
A, B = R.uniform(0.5, 3.0, 4), R.uniform(0.5, 3.0, 4)
M = R.normal(size=4)
# name: (lazyt parameters, the frozen SciPy distribution, values to score)
CASES = {
    "Normal": ((M, A), st.norm(M, A), R.normal(size=(3, 4))),
    "Laplace": ((M, A), st.laplace(M, A), R.normal(size=(3, 4))),
    "Cauchy": ((M, A), st.cauchy(M, A), R.normal(size=(3, 4))),
    "Exponential": ((A,), st.expon(scale=1 / A), R.uniform(0.1, 3, (3, 4))),
    "Gamma": ((A, B), st.gamma(A, scale=1 / B), R.uniform(0.1, 3, (3, 4))),
    "Beta": ((A, B), st.beta(A, B), R.uniform(0.05, 0.95, (3, 4))),
    "StudentT": ((A + 2, M, B), st.t(A + 2, M, B), R.normal(size=(3, 4))),
    "Uniform": ((M, M + A), st.uniform(M, A), M + 0.5 * A),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_entropy_and_moments_against_scipy(name):
    params, ref, value = CASES[name]
    d = getattr(D, name)(*[lazyt.tensor(p) for p in params])
    np.testing.assert_allclose(d.log_prob(lazyt.tensor(value)).numpy(), ref.logpdf(value),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-10, atol=1e-12)
    if name != "Cauchy":
        np.testing.assert_allclose(d.mean.numpy(), ref.mean(), rtol=1e-10)
        np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-10)
    if name in ("Normal", "Laplace", "Cauchy", "Exponential", "Uniform"):
        np.testing.assert_allclose(d.cdf(lazyt.tensor(value)).numpy(), ref.cdf(value),
                                   rtol=1e-10, atol=1e-12)
        q = np.array([0.05, 0.3, 0.5, 0.9])[:, None]
        np.testing.assert_allclose(d.icdf(lazyt.tensor(np.broadcast_to(q, (4, 4)).copy()))
                                   .numpy(), ref.ppf(q), rtol=1e-8, atol=1e-10)


def test_discrete_families_against_scipy():
    p = R.uniform(0.1, 0.9, 4)
    k = np.array([0.0, 1.0, 3.0, 7.0])
    cases = [(D.Poisson(lazyt.tensor(A)), st.poisson(A).logpmf(k)),
             (D.Geometric(lazyt.tensor(p)), st.geom(p, loc=-1).logpmf(k)),
             (D.Binomial(10, lazyt.tensor(p)), st.binom(10, p).logpmf(k)),
             (D.Bernoulli(lazyt.tensor(p)), st.bernoulli(p).logpmf(np.minimum(k, 1)))]
    for dist, ref in cases[:3]:
        np.testing.assert_allclose(dist.log_prob(lazyt.tensor(k)).numpy(), ref, rtol=1e-9)
    dist, ref = cases[3]
    np.testing.assert_allclose(dist.log_prob(lazyt.tensor(np.minimum(k, 1))).numpy(), ref,
                               rtol=1e-9)
    logits = R.normal(size=(2, 5))
    c = D.Categorical(logits=lazyt.tensor(logits))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(c.log_prob(lazyt.tensor([1, 4])).numpy(),
                               logp[[0, 1], [1, 4]], rtol=1e-12)
    np.testing.assert_allclose(c.entropy().numpy(), -(np.exp(logp) * logp).sum(-1), rtol=1e-12)


def test_multivariate_normal_and_dirichlet_against_scipy():
    a = R.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    loc, x = R.normal(size=3), R.normal(size=(5, 3))
    for key in ("covariance_matrix", "precision_matrix", "scale_tril"):
        mat = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
               "scale_tril": np.linalg.cholesky(cov)}[key]
        d = D.MultivariateNormal(lazyt.tensor(loc), **{key: lazyt.tensor(mat)})
        np.testing.assert_allclose(d.log_prob(lazyt.tensor(x)).numpy(),
                                   st.multivariate_normal(loc, cov).logpdf(x), rtol=1e-9)
        np.testing.assert_allclose(d.entropy().numpy(),
                                   st.multivariate_normal(loc, cov).entropy(), rtol=1e-9)
    conc = np.array([0.7, 2.0, 3.5])
    v = np.array([0.2, 0.3, 0.5])
    d = D.Dirichlet(lazyt.tensor(conc))
    np.testing.assert_allclose(d.log_prob(lazyt.tensor(v)).item(),
                               st.dirichlet(conc).logpdf(v), rtol=1e-10)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Exponential"])
def test_sample_means_on_every_device(name, device):
    params, ref, _ = CASES[name]
    lazyt.manual_seed(3)
    d = getattr(D, name)(*[lazyt.tensor(p.astype(np.float32), device=device) for p in params])
    n = 20000
    s = d.sample((n,))
    assert s.shape == (n, 4) and s.dtype is lazyt.float32 and s.device == device
    se = np.sqrt(ref.var() / n)
    assert (np.abs(s.numpy().mean(0) - ref.mean()) < 5 * se).all()


def test_reparameterized_sample_carries_gradients():
    loc = lazyt.tensor([0.5, -1.0], dtype=lazyt.float64, requires_grad=True)
    scale = lazyt.tensor([2.0, 0.5], dtype=lazyt.float64, requires_grad=True)
    lazyt.manual_seed(0)
    s = D.Normal(loc, scale).rsample((1000,))
    s.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0])
    eps = (s.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-10)


def test_kl_of_normals_in_closed_form():
    p = D.Normal(lazyt.tensor([0.0, 1.0]), lazyt.tensor([1.0, 2.0]))
    q = D.Normal(lazyt.tensor([1.0, 1.0]), lazyt.tensor([2.0, 2.0]))
    kl = D.kl_divergence(p, q).numpy()
    expected = np.log(2.0 / np.array([1.0, 2.0])) + (np.array([1.0, 4.0]) + np.array([1.0, 0.0])) / 8 - 0.5
    np.testing.assert_allclose(kl, expected, rtol=1e-6)
