"""Special functions (lazyt/special_fns.py, lazyt.special) against SciPy in float32 and
float64 on every device, their non-finite values, gradients, and torch where installed."""
import numpy as np
import pytest

import lazyt
import lazyt.special as S
from lazyt.errors import InvalidArgumentError
from lazyt.testing import gradcheck

sp = pytest.importorskip("scipy.special", reason="SciPy (in the test extra) is the reference")

X = np.concatenate([np.linspace(-30, 30, 2001), [-5.5, -2, -1, -0.5, 0, 0.5, 1, 2, 1e-8]])
P = np.concatenate([np.linspace(0, 1, 2001), [1e-6, 1 - 1e-7, 1e-20]])
Y = np.concatenate([np.linspace(-1, 1, 2001), [-0.999999, 1.5, -2.0]])

CASES = {
    # name: (lazyt fn, scipy fn, inputs, float32 tolerance (rtol, atol))
    "erfc": (lazyt.erfc, sp.erfc, X, (2e-6, 1e-37)),
    "erfcx": (S.erfcx, sp.erfcx, X, (1e-5, 0)),
    "erfinv": (lazyt.erfinv, sp.erfinv, Y, (2e-6, 1e-6)),
    "lgamma": (lazyt.lgamma, sp.gammaln, X, (2e-6, 2e-5)),
    "digamma": (lazyt.digamma, sp.digamma, X, (2e-6, 2e-5)),
    "i0": (lazyt.i0, sp.i0, X[np.abs(X) < 80], (2e-6, 0)),
    "i0e": (S.i0e, sp.i0e, X, (2e-6, 0)),
    # (float32's rounding of x / sqrt 2 alone moves erfc(-x / sqrt 2) by 1e-5 at x = -20)
    "ndtr": (S.ndtr, sp.ndtr, X, (3e-5, 1e-37)),
    "log_ndtr": (S.log_ndtr, sp.log_ndtr, X, (3e-5, 1e-37)),
    "ndtri": (S.ndtri, sp.ndtri, P, (2e-6, 1e-6)),
    "polygamma1": (lambda t: lazyt.polygamma(1, t), lambda v: sp.polygamma(1, v),
                   np.linspace(-15.5, 30, 1001) + 0.013, (2e-6, 0)),
    "polygamma3": (lambda t: S.polygamma(3, t), lambda v: sp.polygamma(3, v),
                   np.linspace(-15.5, 30, 1001) + 0.013, (2e-6, 0)),
    "entr": (S.entr, sp.entr, X, (2e-6, 0)),
}


def _want(ref, x, dtype):
    with np.errstate(all="ignore"):
        w = ref(x.astype(dtype).astype(np.float64))
    return w.astype(dtype)   # (beyond float32's range: inf, as float32 computes it)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_scipy(device, name, dtype):
    if dtype is np.float64 and device.type == "wgpu":
        pytest.skip("wgpu has no float64")
    fn, ref, x, (rtol, atol) = CASES[name]
    if dtype is np.float64:
        rtol, atol = 1e-12, max(atol * 1e-9, 0.0) if atol else 0.0
        if name in ("lgamma", "digamma"):
            atol = 1e-11   # (their zeros: relative error means nothing there)
    if dtype is np.float32 and device.type != "cpu":
        rtol = max(rtol, 1e-5)   # (GPU exp and log are a few ulp off, more than numpy's)
    x = x.astype(dtype)
    got = fn(lazyt.tensor(x, device=device)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, _want(ref, x, dtype), rtol=rtol, atol=atol)


def test_float16_and_integers_compute_in_float32():
    x = lazyt.tensor([0.5, 2.0]).to(lazyt.float16)
    assert lazyt.erfc(x).dtype is lazyt.float16
    np.testing.assert_allclose(lazyt.lgamma(lazyt.tensor([1, 5])).numpy(), sp.gammaln([1, 5]),
                               atol=1e-6)
    assert lazyt.lgamma(lazyt.tensor([3])).dtype is lazyt.float32


def test_methods_and_namespace():
    x = lazyt.tensor([0.25, 3.0])
    np.testing.assert_allclose(x.lgamma().numpy(), sp.gammaln([0.25, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(x.digamma().numpy(), sp.digamma([0.25, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(S.gammaln(x).numpy(), sp.gammaln([0.25, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(S.psi(x).numpy(), sp.digamma([0.25, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(S.expit(x).numpy(), sp.expit([0.25, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(S.xlog1py(x, x).numpy(), sp.xlog1py([0.25, 3.0], [0.25, 3.0]),
                               rtol=1e-6)
    np.testing.assert_allclose(S.multigammaln(x + 2, 3).numpy(),
                               sp.multigammaln(np.array([2.25, 5.0]), 3), rtol=1e-5)
    for name in S.__all__:
        assert callable(getattr(S, name)), name


def test_argument_errors():
    x = lazyt.tensor([1.0])
    with pytest.raises(InvalidArgumentError, match="polygamma: n"):
        lazyt.polygamma(-1, x)
    with pytest.raises(InvalidArgumentError, match="multigammaln: all elements"):
        S.multigammaln(x, 4)
    with pytest.raises(InvalidArgumentError, match="multigammaln: p"):
        S.multigammaln(x, 0)


def test_gradients():
    x = lazyt.tensor(np.array([0.3, 1.7, 4.2, 9.0])).require_grad()
    for fn in (lazyt.erfc, lazyt.lgamma, lazyt.digamma, lazyt.i0, S.ndtr, S.log_ndtr):
        assert gradcheck(fn, [x])
    y = lazyt.tensor(np.array([-0.9, -0.2, 0.4, 0.7])).require_grad()
    assert gradcheck(lazyt.erfinv, [y])
    # the analytic forms of two derivatives
    lg = lazyt.tensor(np.array([0.3, 2.5, 7.0])).require_grad()
    lazyt.lgamma(lg).sum().backward()
    np.testing.assert_allclose(lg.grad.numpy(), sp.digamma([0.3, 2.5, 7.0]), rtol=1e-9)
    e = lazyt.tensor(np.array([-0.5, 0.2, 0.95])).require_grad()
    lazyt.erfinv(e).sum().backward()
    v = sp.erfinv([-0.5, 0.2, 0.95])
    np.testing.assert_allclose(e.grad.numpy(), np.sqrt(np.pi) / 2 * np.exp(v * v), rtol=1e-8)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-6, 6, 241).astype(np.float32) + 0.013
    y = np.linspace(-0.99, 0.99, 199).astype(np.float32)
    pairs = [(lazyt.erfc, torch.erfc, x), (lazyt.lgamma, torch.lgamma, x),
             (lazyt.digamma, torch.digamma, x), (lazyt.erfinv, torch.erfinv, y),
             (lazyt.i0, torch.i0, x), (S.erfcx, torch.special.erfcx, x),
             (S.ndtri, torch.special.ndtri, (y + 1) / 2), (S.log_ndtr, torch.special.log_ndtr, x)]
    for ours, theirs, v in pairs:
        np.testing.assert_allclose(ours(lazyt.tensor(v)).numpy(), theirs(torch.tensor(v)).numpy(),
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lazyt.polygamma(2, lazyt.tensor(x)).numpy(),
                               torch.polygamma(2, torch.tensor(x)).numpy(), rtol=1e-4)
