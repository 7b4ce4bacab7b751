"""torch's elementwise math as composites (`lazyt/mathops.py`): values against numpy on every
device (edge values included), torch's dtype rules, float64 gradients on cpu, rounding modes,
errors, and torch where installed."""
import math

import numpy as np
import pytest

import lazyt
from lazyt.testing import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")
# inf - inf inside the composites (e.g. round(inf)) gives NaN that is never selected; the
# unfused numpy backend warns about it as numpy does
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

# name -> (numpy reference, domain of the smooth test values, exact derivative)
UNARY = {
    "log2": (np.log2, (0.05, 6.0), lambda x: 1 / (x * math.log(2))),
    "log10": (np.log10, (0.05, 6.0), lambda x: 1 / (x * math.log(10))),
    "exp2": (np.exp2, (-6.0, 6.0), lambda x: np.exp2(x) * math.log(2)),
    "tan": (np.tan, (-1.4, 1.4), lambda x: 1 / np.cos(x) ** 2),
    "sinh": (np.sinh, (-5.0, 5.0), np.cosh),
    "cosh": (np.cosh, (-5.0, 5.0), np.sinh),
    "asin": (np.arcsin, (-0.97, 0.97), lambda x: 1 / np.sqrt((1 - x) * (1 + x))),
    "acos": (np.arccos, (-0.97, 0.97), lambda x: -1 / np.sqrt((1 - x) * (1 + x))),
    "atan": (np.arctan, (-8.0, 8.0), lambda x: 1 / (1 + x * x)),
    "asinh": (np.arcsinh, (-8.0, 8.0), lambda x: 1 / np.sqrt(x * x + 1)),
    "acosh": (np.arccosh, (1.02, 8.0), lambda x: 1 / np.sqrt(x * x - 1)),
    "atanh": (np.arctanh, (-0.97, 0.97), lambda x: 1 / ((1 - x) * (1 + x))),
}
EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-8, -1e-8, 1e-30, 0.66, 0.67, 2.41,
                  2.42, 1 - 1e-7, -1 + 1e-7, 1e8, 3e9, -3e9, 1e200, -1e200, np.inf, -np.inf,
                  np.nan])


def _values(name, n=24, seed=0):
    lo, hi = UNARY[name][1]
    return np.random.default_rng(seed).uniform(lo, hi, n)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_every_device(device, check, name):
    ref = UNARY[name][0]
    x = _values(name).astype(np.float32).reshape(4, 6)
    # float32 logs near 1 carry the device's absolute error (WGSL allows 2^-21)
    check(getattr(lazyt, name)(lazyt.tensor(x, device=device)),
          ref(x.astype(np.float64)).astype(np.float32), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64_edges_and_integers(name):
    ref = UNARY[name][0]
    with np.errstate(all="ignore"):
        want = ref(EDGES)
    got = getattr(lazyt, name)(lazyt.tensor(EDGES, dtype=lazyt.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, equal_nan=True)
    ints = np.array([[1, 2, 3], [4, 5, 6]])
    out = getattr(lazyt.tensor(ints), name)()   # the Tensor method; integers compute in float32
    assert out.dtype == lazyt.float32
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out.numpy(), ref(ints.astype(np.float32)), rtol=2e-6,
                                   equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float16_computes_in_float32(name):
    x = _values(name, 8).astype(np.float16)
    out = getattr(lazyt, name)(lazyt.tensor(x))
    assert out.dtype == lazyt.float16
    want = UNARY[name][0](x.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.numpy().astype(np.float32), want.astype(np.float32),
                               rtol=1e-3)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name):
    v = _values(name, 6, seed=1).reshape(2, 3)
    if name in ("tan", "sinh", "atan", "asinh", "atanh", "asin"):
        v[0, :2] = [0.0, 1e-3]            # the near-zero branches
    x = lazyt.tensor(v, dtype=lazyt.float64).require_grad()
    assert gradcheck(getattr(lazyt, name), [x])
    g = getattr(lazyt, name)(x).sum().backward()[x].numpy()
    np.testing.assert_allclose(g, UNARY[name][2](v), rtol=1e-13)


LARGE = {"asinh": [3e9, 1e20, -1e150], "acosh": [3e9, 1e20, 1e150], "sinh": [50.0, -700.0],
         "cosh": [50.0, -700.0], "atan": [3e9, -1e20, 1e150], "atanh": [0.999, -0.999999]}


@pytest.mark.parametrize("name", sorted(LARGE))
def test_gradients_finite_at_large_magnitudes(name):
    x = lazyt.tensor(LARGE[name], dtype=lazyt.float64).require_grad()
    g = getattr(lazyt, name)(x).sum().backward()[x].numpy()
    np.testing.assert_allclose(g, UNARY[name][2](x.numpy()), rtol=1e-12)


# ---------------------------------------------------------------------- rounding
def test_round_half_to_even_every_device(device, check):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1.2, -1.7, -0.3, 7.0, 1e9,
                  np.inf, -np.inf, np.nan], np.float32)
    t = lazyt.tensor(x, device=device)
    check(t.round(), np.round(x))
    assert np.signbit(t.round().numpy()[9])   # -0.3 rounds to -0.0, as in torch
    check(lazyt.trunc(t), np.trunc(x))
    y = np.array([1.2345, -2.675, 1234.5, 0.125], np.float32)
    ty = lazyt.tensor(y, device=device)
    check(ty.round(decimals=2), (np.round(y * np.float32(100)) / np.float32(100)))
    check(lazyt.round(ty, decimals=-2), (np.round(y / np.float32(100)) * np.float32(100)))


def test_rounding_of_integers_and_gradients():
    i = lazyt.tensor([[-3, 4]])
    assert lazyt.round(i) is i and lazyt.trunc(i) is i
    with pytest.raises(lazyt.DTypeError, match="round: decimals=1"):
        lazyt.round(i, decimals=1)
    x = lazyt.tensor([0.4, 1.5, -2.7], dtype=lazyt.float64).require_grad()
    for fn in (lazyt.round, lazyt.trunc, lambda t: t.round(decimals=1)):
        np.testing.assert_array_equal(fn(x).sum().backward()[x].numpy(), [0, 0, 0])
    h = lazyt.tensor(np.array([0.5, 1.5, 2.5, 1.2], np.float16))
    assert h.round().dtype == lazyt.float16
    np.testing.assert_array_equal(h.round().numpy(), [0, 2, 2, 1])


# ---------------------------------------------------------------------- two operands
def test_copysign_fmod_every_device(device, check):
    a = np.array([7.0, -7.0, 7.5, -7.5, 0.0, 3.0, -1e-20], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, -1.0, -0.0, 1.0], np.float32)
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    check(lazyt.copysign(ta, tb), np.copysign(a, b))
    check(ta.copysign(-1), np.copysign(a, np.float32(-1)))
    check(lazyt.fmod(ta, tb[:6].abs().max()), np.fmod(a, np.float32(2.0)))
    check(ta[:4].fmod(tb[:4]), np.fmod(a[:4], b[:4]))
    check(lazyt.fmod(ta[6:], tb[6:]), np.fmod(a[6:], b[6:]))   # exact: -1e-20, not 0
    ia, ib = np.array([7, -7, 7, -7, 0, 9]), np.array([2, 2, -2, -2, 3, 4])
    check(lazyt.fmod(lazyt.tensor(ia, device=device), lazyt.tensor(ib, device=device)),
          np.fmod(ia, ib))
    check(lazyt.copysign(lazyt.tensor(ia, device=device), -1),
          np.copysign(ia, -1).astype(np.float32))


def test_copysign_fmod_gradients():
    rng = np.random.default_rng(2)
    a = lazyt.tensor(rng.uniform(-5, 5, (2, 4))).require_grad()
    b = lazyt.tensor(rng.uniform(0.5, 2, (2, 4)) * np.array([1, -1, 1, -1])).require_grad()
    assert gradcheck(lazyt.copysign, [a, b])
    assert gradcheck(lazyt.fmod, [a, b])
    g = lazyt.fmod(a, b).sum().backward()
    np.testing.assert_array_equal(g[a].numpy(), np.ones((2, 4)))
    np.testing.assert_array_equal(g[b].numpy(), -np.trunc(a.numpy() / b.numpy()))


def test_lerp_every_device(device, check):
    s = np.array([0.0, 1.0, -2.0, 4.0], np.float32)
    e = np.array([10.0, 3.0, 2.0, -4.0], np.float32)
    w = np.array([0.0, 0.25, 0.75, 1.0], np.float32)
    ts, te, tw = (lazyt.tensor(v, device=device) for v in (s, e, w))
    check(lazyt.lerp(ts, te, tw), s + w * (e - s))
    check(ts.lerp(te, 1.0), e)                 # exact at weight 1
    check(ts.lerp(te, 0.3), s + np.float32(0.3) * (e - s))


def test_lerp_gradients():
    rng = np.random.default_rng(3)
    s, e = (lazyt.tensor(rng.normal(size=(2, 3))).require_grad() for _ in range(2))
    w = lazyt.tensor(rng.uniform(-0.5, 1.5, (2, 3))).require_grad()
    assert gradcheck(lazyt.lerp, [s, e, w])
    assert gradcheck(lambda a, b: lazyt.lerp(a, b, 0.8), [s, e])
    with pytest.raises(lazyt.DTypeError, match="lerp: weight"):
        lazyt.lerp(s, e, "half")


def test_logaddexp_every_device(device, check):
    a = np.array([0.0, 1.0, -1000.0, 1000.0, 88.0, -np.inf, np.inf, -np.inf, 3.0], np.float32)
    b = np.array([0.0, -2.0, -1001.0, 999.0, 88.0, -np.inf, np.inf, 5.0, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        want = np.logaddexp(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    check(lazyt.logaddexp(lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)), want)
    check(lazyt.tensor(a, device=device).logaddexp(0.5),
          np.logaddexp(a, np.float32(0.5)))


def test_logaddexp_gradients():
    rng = np.random.default_rng(4)
    a, b = (lazyt.tensor(rng.normal(0, 3, (2, 4))).require_grad() for _ in range(2))
    assert gradcheck(lazyt.logaddexp, [a, b])
    x = lazyt.tensor([2.0, -700.0, 700.0], dtype=lazyt.float64).require_grad()
    y = lazyt.tensor([2.0, 700.0, -700.0], dtype=lazyt.float64)
    np.testing.assert_allclose(lazyt.logaddexp(x, y).sum().backward()[x].numpy(), [0.5, 0, 1])


# ---------------------------------------------------------------------- value tests
def test_isnan_isinf_isfinite_every_device(device, check):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -3e38], np.float32)
    t = lazyt.tensor(x, device=device)
    check(t.isnan(), np.isnan(x))
    check(lazyt.isinf(t), np.isinf(x))
    check(lazyt.isfinite(t), np.isfinite(x))
    i = lazyt.tensor([1, -2, 3], device=device)
    check(lazyt.isnan(i), np.zeros(3, bool))
    check(lazyt.isinf(i), np.zeros(3, bool))
    check(i.isfinite(), np.ones(3, bool))


def test_isclose_allclose_every_device(device, check):
    a = np.array([1.0, 1.0, np.inf, np.inf, np.nan, 0.0, 1e-9, 100.0], np.float32)
    b = np.array([1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 1e-9, 0.0, 100.001], np.float32)
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    check(lazyt.isclose(ta, tb), np.isclose(a, b))
    check(ta.isclose(tb, equal_nan=True), np.isclose(a, b, equal_nan=True))
    check(lazyt.isclose(ta, tb, rtol=0.2, atol=0.0), np.isclose(a, b, rtol=0.2, atol=0.0))
    check(lazyt.isclose(lazyt.tensor([1.0, np.inf], device=device), np.inf),
          np.array([False, True]))
    assert lazyt.allclose(ta[:2], ta[:2] + 1e-7) is True
    assert ta.allclose(tb) is False
    assert lazyt.allclose(ta[4:5], tb[4:5], equal_nan=True) is True
    ia = lazyt.tensor([16777217, 5, -3], device=device)   # exact for integers
    check(lazyt.isclose(ia, lazyt.tensor([16777216, 5, -2], device=device), rtol=0, atol=0),
          np.array([False, True, False]))
    check(ia.isclose(5, atol=0.5), np.array([False, True, False]))
    with pytest.raises(lazyt.InvalidArgumentError, match="isclose: rtol"):
        lazyt.isclose(ta, tb, rtol=-1.0)


# ---------------------------------------------------------------------- division
def test_div_rounding_modes_every_device(device, check):
    ia = np.array([7, -7, 7, -7, 0, 9, -1])
    ib = np.array([2, 2, -2, -2, 3, 3, 5])
    a, b = lazyt.tensor(ia, device=device), lazyt.tensor(ib, device=device)
    check(lazyt.div(a, b), (ia / ib).astype(np.float32))
    check(lazyt.div(a, b, rounding_mode="trunc"), np.trunc(ia / ib).astype(np.int64))
    check(a.div(b, rounding_mode="floor"), ia // ib)
    check(lazyt.floor_divide(a, b), ia // ib)
    check(a.floor_divide(3), ia // 3)
    check(a // b, ia // ib)
    check(lazyt.div(7, b, rounding_mode="trunc"), np.trunc(7 / ib).astype(np.int64))
    fa, fb = ia.astype(np.float32) + 0.5, ib.astype(np.float32)
    ta, tb = lazyt.tensor(fa, device=device), lazyt.tensor(fb, device=device)
    check(ta.div(tb, rounding_mode="trunc"), np.trunc(fa / fb))
    check(lazyt.div(ta, tb, rounding_mode="floor"), np.floor_divide(fa, fb))
    check(lazyt.div(ta, 2, rounding_mode="trunc"), np.trunc(fa / 2))


def test_div_keywords_errors_and_gradients():
    x = lazyt.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=lazyt.float64).require_grad()
    np.testing.assert_array_equal(x.div(o=x).numpy(), np.ones((2, 2)))   # the method keeps o=
    g = lazyt.div(x, 3.0, rounding_mode="trunc").sum().backward()[x]
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2)))
    assert gradcheck(lambda t: lazyt.div(t, t * t + 1), [x])
    with pytest.raises(lazyt.InvalidArgumentError, match="div: rounding_mode"):
        lazyt.div(x, 2, rounding_mode="round")


# ---------------------------------------------------------------------- errors, API
def test_errors_name_the_op():
    with pytest.raises(lazyt.DTypeError, match="atan: expected a lazyt.Tensor"):
        lazyt.atan([1.0, 2.0])
    with pytest.raises(lazyt.DTypeError, match="fmod: not supported for bool"):
        lazyt.fmod(lazyt.tensor([True]), True)
    with pytest.raises(lazyt.ShapeError, match="logaddexp"):
        lazyt.logaddexp(lazyt.ones(2), lazyt.ones(3))
    with pytest.raises(lazyt.DTypeError, match="copysign: expected at least one"):
        lazyt.copysign(1.0, 2.0)
    with pytest.raises(lazyt.DeviceError):
        lazyt.isclose(lazyt.ones(2), lazyt.ones(2, device=lazyt.device("cpu", fusion=False)))


def test_functions_and_methods_are_exported():
    for name in lazyt.mathops.__all__:
        assert name in lazyt.__all__ and callable(getattr(lazyt, name)), name
        assert callable(getattr(lazyt.Tensor, name)), name
    x = lazyt.tensor([0.25, -0.5])
    np.testing.assert_allclose(x.atan().numpy(), lazyt.atan(x).numpy())


# ---------------------------------------------------------------------- torch
@needs_torch
@pytest.mark.parametrize("name", sorted(UNARY) + ["round", "trunc"])
def test_unary_matches_torch(name):
    v = np.concatenate([_values(name if name in UNARY else "atan"), EDGES])
    got = getattr(lazyt, name)(lazyt.tensor(v, dtype=lazyt.float64)).numpy()
    want = getattr(torch, name)(torch.tensor(v, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-15, equal_nan=True)


@needs_torch
def test_binary_ops_match_torch():
    rng = np.random.default_rng(5)
    a = np.round(rng.normal(0, 5, 40), 1)
    b = np.round(rng.normal(0, 3, 40), 1) + 0.1
    la, lb = lazyt.tensor(a), lazyt.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for name in ("copysign", "fmod", "logaddexp"):
        np.testing.assert_allclose(getattr(lazyt, name)(la, lb).numpy(),
                                   getattr(torch, name)(ta, tb).numpy(), rtol=2e-15)
    np.testing.assert_array_equal(lazyt.isclose(la, la + 1e-6).numpy(),
                                  torch.isclose(ta, ta + 1e-6).numpy())
    for mode in (None, "trunc", "floor"):
        np.testing.assert_allclose(lazyt.div(la, lb, rounding_mode=mode).numpy(),
                                   torch.div(ta, tb, rounding_mode=mode).numpy(), rtol=1e-15)
    np.testing.assert_allclose(lazyt.lerp(la, lb, 0.7).numpy(),
                               torch.lerp(ta, tb, 0.7).numpy(), rtol=1e-15)
