"""torch.special's orthogonal polynomials (lazyt/special_poly.py) against torch's, which they
evaluate the same way (recurrences, end values, trigonometric forms at high degree)."""
import numpy as np
import pytest

import lazyt

torch = pytest.importorskip("torch")

NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]
RNG = np.random.default_rng(0)
X = np.concatenate([RNG.uniform(-1.5, 1.5, 120), [-1, 0, 1, 0.5, 2, -2]])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [-1, 0, 1, 2, 5, 7, 9, 16])
def test_number_degree_float64(name, n):
    got = getattr(lazyt.special, name)(lazyt.tensor(X), n).numpy()
    ref = getattr(torch.special, name)(torch.from_numpy(X), n).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_tensor_degree_per_element_and_float32(name):
    n = RNG.integers(-1, 14, X.size)
    got = getattr(lazyt.special, name)(lazyt.tensor(X), lazyt.tensor(n.astype(np.float64)))
    ref = getattr(torch.special, name)(torch.from_numpy(X), torch.from_numpy(n.astype(np.float64)))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-9, atol=1e-9)
    x32 = np.linspace(-1.2, 1.2, 61).astype(np.float32)
    got = getattr(lazyt.special, name)(lazyt.tensor(x32), lazyt.tensor(np.full(61, 6)))
    ref = getattr(torch.special, name)(torch.from_numpy(x32), torch.full((61,), 6))
    assert got.dtype is lazyt.float32
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)
    got = getattr(lazyt.special, name)(0.3, lazyt.tensor([0, 1, 2, 5]))
    ref = getattr(torch.special, name)(0.3, torch.tensor([0, 1, 2, 5]))
    assert got.dtype is lazyt.float32
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5)


def test_argument_errors():
    with pytest.raises(lazyt.DTypeError):
        lazyt.special.legendre_polynomial_p(0.5, 3)
    with pytest.raises(lazyt.DTypeError):
        lazyt.special.legendre_polynomial_p(lazyt.ones(2), "3")
