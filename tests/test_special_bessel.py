"""torch.special's Bessel, Airy and Hurwitz zeta functions (lazyt/special_bessel.py) against
SciPy's (always in the test extra) and torch's edge values where torch is installed, on every
device."""
import numpy as np
import pytest

import lazyt
import lazyt.special as S

sp = pytest.importorskip("scipy.special")

RNG = np.random.default_rng(7)
WIDE = np.concatenate([RNG.uniform(-30, 30, 200), RNG.uniform(-8, 8, 200),
                       [-8.0, -2.0, -0.5, 0.0, 0.5, 2.0, 2.404825557695773, 8.0, 8.5, 100.0,
                        1e4]])
POS = np.concatenate([RNG.uniform(1e-3, 2, 100), RNG.uniform(2, 60, 100), [2.0, 0.01, 30.0]])

CASES = {
    "bessel_j0": (sp.j0, WIDE), "bessel_j1": (sp.j1, WIDE),
    "bessel_y0": (sp.y0, POS), "bessel_y1": (sp.y1, POS),
    "i1": (sp.i1, WIDE[np.abs(WIDE) < 80]), "i1e": (sp.i1e, WIDE),
    "modified_bessel_i0": (sp.i0, WIDE[np.abs(WIDE) < 80]),
    "modified_bessel_i1": (sp.i1, WIDE[np.abs(WIDE) < 80]),
    "modified_bessel_k0": (sp.k0, POS), "modified_bessel_k1": (sp.k1, POS),
    "scaled_modified_bessel_k0": (sp.k0e, POS), "scaled_modified_bessel_k1": (sp.k1e, POS),
    "spherical_bessel_j0": (lambda x: sp.spherical_jn(0, x), WIDE),
    "airy_ai": (lambda x: sp.airy(x)[0], np.concatenate([RNG.uniform(-15, 8, 300),
                                                          [-2.0, 0.0, 2.0]])),
}


def _close(got, ref, dtype):
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    scale = np.maximum(1.0, np.abs(ref))  # oscillating tails: absolute error per magnitude
    np.testing.assert_allclose(got / scale, ref / scale, **tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy_float64(name):
    fn, x = CASES[name]
    got = getattr(S, name)(lazyt.tensor(x)).numpy()
    _close(got, fn(x), np.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy_float32_on_every_device(name, device):
    fn, x = CASES[name]
    x32 = x.astype(np.float32)
    got = getattr(S, name)(lazyt.tensor(x32, device=device))
    assert got.dtype is lazyt.float32
    _close(got.numpy().astype(np.float64), fn(x32.astype(np.float64)), np.float32)


def test_hurwitz_zeta_against_scipy():
    x = np.array([2.0, 3.0, 4.5, 1.5, 7.0, 2.0, 3.0])
    q = np.array([1.0, 0.5, 2.0, 10.0, 0.1, 3.5, 100.0])
    got = S.zeta(lazyt.tensor(x), lazyt.tensor(q)).numpy()
    np.testing.assert_allclose(got, sp.zeta(x, q), rtol=1e-12)


def test_integers_compute_in_the_default_float():
    got = S.bessel_j0(lazyt.tensor([0, 1, 2]))
    assert got.dtype is lazyt.float32
    np.testing.assert_allclose(got.numpy(), sp.j0([0.0, 1.0, 2.0]), rtol=1e-6)


def test_i1_gradient_is_i1_prime():
    x = lazyt.tensor([0.3, 1.7, 4.0, 30.0], dtype=lazyt.float64).requires_grad_()
    S.i1(x).sum().backward()
    xs = np.array([0.3, 1.7, 4.0, 30.0])
    np.testing.assert_allclose(x.grad.numpy(), sp.i0(xs) - sp.i1(xs) / xs, rtol=1e-9)


def test_edge_values_as_torch():
    torch = pytest.importorskip("torch")
    x = np.array([-np.inf, -1.0, 0.0, np.inf, np.nan])
    for name in ("bessel_j0", "bessel_y0", "modified_bessel_k0", "airy_ai", "i1e"):
        got = getattr(S, name)(lazyt.tensor(x)).numpy()
        ref = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, ref, equal_nan=True, err_msg=name)
