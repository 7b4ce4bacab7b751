"""pow at its edges, as torch: C's pow for a base of -inf on every backend (numpy calls it; the
Cube kernels' lz_pow must agree), and the gradients at a base of 0 (torch's
pow_backward_self / pow_backward_exponent, written out here by hand)."""
import numpy as np
import pytest

import lazyt

INF = float("inf")
EXPONENTS = np.array([0.3, -0.3, 3.0, -3.0, 2.0, -2.0, 0.0, 2.5, -2.5, INF, -INF], np.float32)
# C99 pow(-inf, y): -inf / -0 for positive / negative odd integers y, else +inf / +0; 1 for y = 0
NEG_INF_POW = np.array([INF, 0.0, -INF, -0.0, INF, 0.0, 1.0, INF, 0.0, INF, 0.0], np.float32)


def test_the_reference_is_c_pow():
    np.testing.assert_array_equal(np.power(-np.inf, EXPONENTS.astype(np.float64)), NEG_INF_POW)


def _same_bits(got, want):
    """Equal values with equal signs of zero (and NaN where NaN)."""
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_pow_of_negative_infinity(device):
    base = lazyt.tensor(np.full(EXPONENTS.shape, -np.inf, np.float32), device=device)
    e = lazyt.tensor(EXPONENTS, device=device)
    _same_bits((base ** e).numpy(), NEG_INF_POW)                 # tensor ** tensor
    _same_bits((float("-inf") ** e).numpy(), NEG_INF_POW)        # number ** tensor
    for y, want in zip(EXPONENTS.tolist(), NEG_INF_POW):         # tensor ** number
        _same_bits((base ** y).numpy(), np.full(EXPONENTS.shape, want, np.float32))
    # the case: (-inf) ** 0.3 is +inf, not NaN
    assert (lazyt.tensor([-INF], device=device) ** 0.3).numpy()[0] == INF


def test_pow_of_negative_infinity_fused_with_other_ops(device):
    x = lazyt.tensor(np.array([-1.0, -2.0, 3.0], np.float32), device=device)
    y = (x * INF) ** 0.3 + 1.0        # (-inf) ** 0.3 = inf in the middle of a fused block
    np.testing.assert_array_equal(y.numpy(), [INF, INF, INF])


def test_pow_of_other_negative_bases_stays_nan(device):
    x = lazyt.tensor(np.array([-2.0, -0.5, -8.0], np.float32), device=device)
    np.testing.assert_array_equal(np.isnan((x ** 0.3).numpy()), [True, True, True])
    np.testing.assert_array_equal((x ** 3.0).numpy(), np.float32([-8.0, -0.125, -512.0]))


def _grads(device, base, exponent):
    b = lazyt.tensor(np.asarray(base, np.float32), device=device).require_grad()
    e = lazyt.tensor(np.asarray(exponent, np.float32), device=device).require_grad()
    g = (b ** e).sum().backward()
    return g[b].numpy(), g[e].numpy()


E = [-2.0, -0.5, 0.0, 1.0, 2.5, -1.0]


def test_gradient_of_zero_to_a_tensor_power(device):
    """d(0 ** x)/dx is 0 ** x * log(0): -inf for x < 0 (not 0), 0 for x >= 0."""
    e = lazyt.tensor(np.asarray(E, np.float32), device=device).require_grad()
    g = (0.0 ** e).sum().backward()
    np.testing.assert_array_equal(g[e].numpy(), np.float32([-INF, -INF, 0, 0, 0, -INF]))
    g = (0 ** e).sum().backward()       # an int zero as the base
    np.testing.assert_array_equal(g[e].numpy(), np.float32([-INF, -INF, 0, 0, 0, -INF]))


def test_gradients_at_a_zero_base_tensor(device):
    gb, ge = _grads(device, [0.0] * len(E), E)
    # base: where(e == 0, 0, e * 0 ** (e - 1)): -inf for e < 0, 1 for e == 1, 0 for e > 1
    np.testing.assert_array_equal(gb, np.float32([-INF, -INF, 0, 1, 0, -INF]))
    # exponent: where(base == 0 and e >= 0, 0, 0 ** e * log(0)): -inf for e < 0
    np.testing.assert_array_equal(ge, np.float32([-INF, -INF, 0, 0, 0, -INF]))


def test_gradients_away_from_zero_are_unchanged(device):
    base, ex = np.float32([2.0, 0.5, 3.0]), np.float32([1.5, -2.0, 0.0])
    gb, ge = _grads(device, base, ex)
    b64, e64 = base.astype(np.float64), ex.astype(np.float64)
    np.testing.assert_allclose(gb, np.where(e64 == 0, 0, e64 * b64 ** (e64 - 1)), rtol=1e-5)
    np.testing.assert_allclose(ge, b64 ** e64 * np.log(b64), rtol=1e-5)
    # a negative number as the base: log of it is NaN, as torch
    e = lazyt.tensor(np.float32([2.0]), device=device).require_grad()
    g = ((-2.0) ** e).sum().backward()
    assert np.isnan(g[e].numpy()[0])


def test_gradients_match_torch_where_installed():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed here; the hand-written expectations stand in")
    base, ex = [0.0] * len(E) + [2.0, 0.5], E + [1.5, -2.0]
    tb = torch.tensor(base, requires_grad=True)
    te = torch.tensor(ex, requires_grad=True)
    (tb ** te).sum().backward()
    gb, ge = _grads(lazyt.device("cpu"), base, ex)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ge, te.grad.numpy(), rtol=1e-6)
    te2 = torch.tensor(E, requires_grad=True)
    (0.0 ** te2).sum().backward()
    e = lazyt.tensor(np.asarray(E, np.float32)).require_grad()
    np.testing.assert_array_equal((0.0 ** e).sum().backward()[e].numpy(), te2.grad.numpy())
    neg = torch.tensor([-INF] * len(EXPONENTS)) ** torch.tensor(EXPONENTS)
    _same_bits(neg.numpy(), NEG_INF_POW)
