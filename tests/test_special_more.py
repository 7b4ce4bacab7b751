"""igamma / igammac (lazyt/special_more.py, lazyt.special.gammainc / gammaincc) against SciPy
over a in [1e-3, 1e3], x in [0, 1e3] in float32 and float64 on every device, their edge values
and x-gradient against torch; nextafter bit-exact against numpy; the new method and in-place
forms."""
import numpy as np
import pytest

import lazyt
import lazyt.special as S
from lazyt.errors import DTypeError, GradError

sp = pytest.importorskip("scipy.special", reason="SciPy (in the test extra) is the reference")

# Tolerances: relative error over the reference computed in float64 at the same (rounded)
# inputs, where the reference exceeds 1e3 * the dtype's smallest normal. float64: measured
# 1.8e-12 at worst (P ~ 1e-70, a = 913, x = 477, where rounding a alone moves P by more).
# float32: measured 3.1e-5 at worst (P ~ 2e-32, a = 190, x = 70: d log P / d log a ~ 190
# there, so a's own rounding is worth 1e-5); 2e-6 where P and Q exceed 1e-3.
RTOL = {np.float64: 5e-12, np.float32: 1e-4}
RTOL_MID = {np.float64: 1e-13, np.float32: 2e-5}


def _grid(n=40000, seed=0):
    rng = np.random.default_rng(seed)
    a = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n))
    x = np.concatenate([np.exp(rng.uniform(np.log(1e-4), np.log(1e3), n // 2)),
                        a[n // 2:] * (1 + rng.normal(0, 0.3, n - n // 2))])
    return a, np.minimum(np.abs(x), 1e3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_scipy(device, dtype):
    if dtype is np.float64 and device.type == "wgpu":
        pytest.skip("wgpu has no float64")
    a, x = (v.astype(dtype) for v in _grid())
    ta, tx = lazyt.tensor(a, device=device), lazyt.tensor(x, device=device)
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    tiny = np.finfo(dtype).tiny * 1e3
    rtol = RTOL[dtype] if device.type == "cpu" else max(RTOL[dtype], 1e-3)
    for fn, ref in ((lazyt.igamma, sp.gammainc), (lazyt.igammac, sp.gammaincc)):
        got = fn(ta, tx).numpy()
        assert got.dtype == dtype
        want = ref(a64, x64)
        big = want > tiny
        rel = np.abs(got[big] - want[big]) / want[big]
        assert rel.max() < rtol, (fn.__name__, rel.max())
        mid = want > 1e-3
        if device.type == "cpu":
            assert (np.abs(got[mid] - want[mid]) / want[mid]).max() < RTOL_MID[dtype]
        assert np.abs(got[~big]).max(initial=0) <= tiny * 2   # underflow: 0 or tiny


def test_p_plus_q_and_namespace():
    a, x = _grid(2000, seed=3)
    ta, tx = lazyt.tensor(a), lazyt.tensor(x)
    p, q = S.gammainc(ta, tx).numpy(), S.gammaincc(ta, tx).numpy()
    np.testing.assert_allclose(p + q, 1.0, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(ta.igamma(tx).numpy(), p)
    np.testing.assert_array_equal(ta.igammac(tx).numpy(), q)
    # Python numbers, integers (computed in the default float) and float16
    np.testing.assert_allclose(lazyt.igamma(lazyt.tensor([2.0]), 3).numpy(), sp.gammainc(2, 3),
                               rtol=1e-6)
    np.testing.assert_allclose(lazyt.igamma(lazyt.tensor([2, 5]), lazyt.tensor([3, 1])).numpy(),
                               sp.gammainc([2, 5], [3, 1]), rtol=1e-6)
    h = lazyt.igammac(lazyt.tensor([2.0]).to(lazyt.float16), lazyt.tensor([3.0]).to(lazyt.float16))
    assert h.dtype is lazyt.float16


def test_edges_match_torch():
    """0, inf, NaN and negative operands give torch's values (its rules' order included);
    interior values against SciPy (torch's own are off by 6e-10 at a = x = 30)."""
    torch = pytest.importorskip("torch")
    inf, nan = np.inf, np.nan
    vals = [0.0, 0.5, 1.0, 30.0, inf, nan, -1.0, 1e-300]
    a = np.array([u for u in vals for _ in vals])
    x = np.array([v for _ in vals for v in vals])
    edge = ~(np.isfinite(a) & np.isfinite(x) & (a > 0) & (x > 0))
    for ours, theirs, ref in ((lazyt.igamma, torch.igamma, sp.gammainc),
                              (lazyt.igammac, torch.igammac, sp.gammaincc)):
        got = ours(lazyt.tensor(a), lazyt.tensor(x)).numpy()
        want = theirs(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_array_equal(got[edge], want[edge])
        np.testing.assert_allclose(got[~edge], ref(a[~edge], x[~edge]), rtol=1e-13,
                                   atol=1e-300)   # (SciPy flushes 3e-315 to 0)


def test_gradient_wrt_x_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.array([1e-3, 0.3, 1.5, 4.0, 30.0, 200.0, 900.0])
    x = np.array([0.5, 0.7, 2.0, 3.0, 33.0, 150.0, 905.0])
    for ours, theirs in ((lazyt.igamma, torch.igamma), (lazyt.igammac, torch.igammac)):
        tx = lazyt.tensor(x).require_grad()
        ours(lazyt.tensor(a), tx).sum().backward()
        rx = torch.tensor(x, requires_grad=True)
        theirs(torch.tensor(a), rx).sum().backward()
        np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-11)


def test_gradient_wrt_a_is_refused():
    a = lazyt.tensor(np.array([2.0, 3.0])).require_grad()
    x = lazyt.tensor(np.array([1.0, 4.0]))
    y = lazyt.igamma(a, x)   # the forward pass runs, as torch's
    np.testing.assert_allclose(y.detach().numpy(), sp.gammainc([2.0, 3.0], [1.0, 4.0]),
                               rtol=1e-13)
    with pytest.raises(GradError, match="igamma: the derivative with respect to `input`"):
        y.sum().backward()
    with pytest.raises(GradError, match="igammac"):
        lazyt.igammac(a, x).sum().backward()
    lazyt.igamma(a.detach(), x).sum()   # detached: fine


# ---------------------------------------------------------------------- nextafter
def _bits(v):
    return v.view(np.uint64 if v.dtype == np.float64 else np.uint32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_exact(device, dtype):
    if dtype is np.float64 and device.type == "wgpu":
        pytest.skip("wgpu has no float64")
    fi = np.finfo(dtype)
    rng = np.random.default_rng(1)
    lo, hi = (-40, 38) if dtype is np.float32 else (-300, 300)
    base = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(lo, hi, 3000),
                           [0.0, -0.0, fi.max, -fi.max, np.inf, -np.inf, np.nan, fi.tiny,
                            -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, 1.0, -1.0,
                            0.5, 2.0, -4.0, fi.tiny * 2, fi.smallest_subnormal * 3]])
    with np.errstate(all="ignore"):
        base = base.astype(dtype)
        x = np.repeat(base, 5)
        y = np.stack([np.full_like(base, np.inf), np.full_like(base, -np.inf), base,
                      np.zeros_like(base), np.full_like(base, np.nan)], 1).ravel()
        want = np.nextafter(x, y)
    got = lazyt.nextafter(lazyt.tensor(x, device=device), lazyt.tensor(y, device=device))
    got = got.numpy()
    assert got.dtype == dtype
    subnormal = np.abs(want) < fi.tiny
    if device.type != "cpu":   # a GPU may flush subnormals (operands, results, the step)
        small = fi.tiny * 2.0 ** (fi.nmant + 1)      # below this the step is subnormal
        keep = ~subnormal & ~(np.abs(x) < small) & ~(np.abs(y) < fi.tiny)
        x, y, got, want = x[keep], y[keep], got[keep], want[keep]
    same = (_bits(got) == _bits(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:5], y[~same][:5], got[~same][:5], want[~same][:5])


def test_nextafter_forms_and_errors():
    x = lazyt.tensor(np.array([1.0, -2.0]))
    y = lazyt.tensor(np.array([2.0, -3.0]))
    want = np.nextafter([1.0, -2.0], [2.0, -3.0])
    np.testing.assert_array_equal(x.nextafter(y).numpy(), want)
    z = x.clone()
    z.nextafter_(y)
    np.testing.assert_array_equal(z.numpy(), want)
    with pytest.raises(DTypeError, match="nextafter"):
        lazyt.nextafter(lazyt.tensor([1, 2]), lazyt.tensor([3, 4]))
    with pytest.raises(DTypeError, match="nextafter"):
        lazyt.nextafter(x, y.to(lazyt.float32))


# ---------------------------------------------------------------------- method and in-place
def test_polygamma_method_and_inplace_forms():
    v = np.array([0.3, 1.7, 4.2])
    x = lazyt.tensor(v)
    np.testing.assert_allclose(x.polygamma(2).numpy(), sp.polygamma(2, v), rtol=1e-10)
    cases = {
        "lgamma_": ((), sp.gammaln(v)), "digamma_": ((), sp.digamma(v)),
        "polygamma_": ((1,), sp.polygamma(1, v)), "mvlgamma_": ((2,), sp.multigammaln(v + 1, 2)),
        "igamma_": ((lazyt.tensor(v + 1),), sp.gammainc(v, v + 1)),
        "igammac_": ((lazyt.tensor(v + 1),), sp.gammaincc(v, v + 1)),
    }
    for name, (args, want) in cases.items():
        t = lazyt.tensor(v + 1 if name == "mvlgamma_" else v)
        out = getattr(t, name)(*args)
        assert out is t, name
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-10, err_msg=name)
    e = lazyt.tensor(np.array([-0.5, 0.2]))
    e.erfinv_()
    np.testing.assert_allclose(e.numpy(), sp.erfinv([-0.5, 0.2]), rtol=1e-12)
