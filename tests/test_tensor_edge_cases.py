"""Edge cases checked against numpy/torch semantics: clamp's gradient at its bounds, negative
index lists, 0-d and zero-size inputs, float16 variance, and bad arguments raising lazyt errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyt

CPU = [lazyt.device("cpu"), lazyt.device("cpu", fusion=False)]


@pytest.mark.parametrize("dev", CPU, ids=str)
def test_clamp_gradient_at_the_bounds_like_torch(dev):
    """A number bound passes the gradient strictly inside (0 at the bound and at NaN); a
    tensor bound splits a tie 1/2 to x and 1/2 to the bound (torch 2.14's rule)."""
    x = lazyt.tensor([-1.0, -0.5, 0.0, 0.5, 1.0, float("nan")], device=dev).require_grad()
    g = x.clamp(-0.5, 0.5).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [0, 0, 1, 0, 0, 0])
    x = lazyt.tensor([-1.0, -0.5, 0.0, 0.5, 1.0], device=dev).require_grad()
    lo = lazyt.full((5,), -0.5, device=dev).require_grad()
    hi = lazyt.full((5,), 0.5, device=dev).require_grad()
    x.clamp(lo, hi).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0.5, 1, 0.5, 0])
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0.5, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0, 0, 0, 0.5, 1])
    v = lazyt.tensor(np.array([1e-9, 0.5]), device=dev)
    np.testing.assert_array_equal(v.clamp(min=1e-6).numpy(), [1e-6, 0.5])   # in x's dtype
    y = lazyt.tensor([float("nan"), 3.0], device=dev)
    np.testing.assert_array_equal(y.clamp(0, 1).numpy(), [np.nan, 1.0])


@pytest.mark.parametrize("dev", CPU, ids=str)
def test_negative_entries_of_an_index_list_count_from_the_end(dev):
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = lazyt.tensor(a, device=dev)
    np.testing.assert_array_equal(x[[0, -1]].numpy(), a[[0, -1]])
    np.testing.assert_array_equal(x[:, [-1]].numpy(), a[:, [-1]])
    np.testing.assert_array_equal(x[lazyt.tensor([-1], device=dev)].numpy(), a[[-1]])


def test_zero_d_and_zero_size_inputs():
    s = lazyt.tensor(1.5)
    assert s.squeeze(0).shape == () and s.squeeze().shape == ()
    for fn in ("softmax", "log_softmax"):
        assert getattr(lazyt.zeros(0, 3), fn)(0).shape == (0, 3)
        assert getattr(lazyt.zeros(2, 0), fn)(1).shape == (2, 0)
    out = lazyt.tensor([[1.0, 5.0, 3.0]]).argmax(keepdim=True)
    assert out.shape == (1, 1) and out.item() == 1
    for call in (lambda: s.index_select(0, lazyt.tensor([0])), lambda: s.gather(0, lazyt.tensor(0)),
                 lambda: s.split(1)):
        with pytest.raises(lazyt.ShapeError, match="rank >= 1"):
            call()


def test_variance_edge_cases():
    h = lazyt.tensor(np.arange(100, dtype=np.float16))
    v = h.var()
    assert v.dtype is lazyt.float16 and v.item() == pytest.approx(841.5)
    assert np.isinf(lazyt.tensor([1.0, 2.0]).var(correction=3).item())


def test_bad_arguments_raise_lazyt_errors_and_leave_the_runtime_usable():
    x = lazyt.arange(24.0).reshape(2, 3, 4)
    cases = [
        (lambda: lazyt.tensor([1, 2, 3]) ** -1, lazyt.DTypeError, "negative integer power"),
        (lambda: lazyt.tensor(np.array([1], np.int32)) + 2 ** 40, lazyt.DTypeError, "does not fit"),
        (lambda: lazyt.zeros(2.5), lazyt.DTypeError, "shape of ints"),
        (lambda: x.reshape(2.5, -1), lazyt.DTypeError, "shape of ints"),
        (lambda: x[::0], lazyt.InvalidArgumentError, "step"),
        (lambda: x[1.0], lazyt.DTypeError, "unsupported index"),
        (lambda: x.gelu(approximate="foo"), lazyt.InvalidArgumentError, "approximate"),
        (lambda: lazyt.eye(-1), lazyt.ShapeError, "non-negative"),
        (lambda: lazyt.arange(0, float("nan")), lazyt.InvalidArgumentError, "finite"),
    ]
    for call, error, fragment in cases:
        with pytest.raises(error, match=fragment):
            call()
    assert issubclass(lazyt.InvalidArgumentError, ValueError)
    assert (x + 1).sum().item() == 300.0


def test_division_by_zero_gives_inf_without_warnings():
    dev = lazyt.device("cpu", fusion=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = (lazyt.tensor([1.0, 0.0, -1.0], device=dev) / 0).numpy()
        zero = lazyt.tensor([0, 0], device=dev)
        ints = (lazyt.tensor([3, -3], device=dev) // zero).numpy()   # a tensor of zeros: 0
    np.testing.assert_array_equal(out, [np.inf, np.nan, -np.inf])
    assert ints.tolist() == [0, 0]


@pytest.mark.parametrize("call", [lambda t: t // 0, lambda t: t % 0, lambda t: t.fmod(0),
                                  lambda t: t.remainder(0), lambda t: t.floor_divide(0),
                                  lambda t: t.div(0, rounding_mode="trunc"),
                                  lambda t: t.div(0, rounding_mode="floor")])
def test_integer_division_by_a_zero_number_raises_as_torch(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(torch.tensor([3, -3]))
    t = lazyt.tensor([3, -3])
    with pytest.raises(lazyt.DivisionByZeroError, match="by zero"):
        call(t)
    with pytest.raises(ZeroDivisionError):
        call(t)
    assert (t // 2).numpy().tolist() == [1, -2]                   # the runtime stays usable


def test_erf_without_scipy_matches_math_erf():
    """The numpy backend's own erf (used where scipy is not installed)."""
    import math

    from lazyt.backends.numpy import _erf_series_cf
    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 2.4999, 2.5, -2.5, np.inf, -np.inf]])
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(_erf_series_cf(x), want, rtol=0, atol=1e-14)
    assert np.isnan(_erf_series_cf(np.array([np.nan]))).all()
    x32 = x.astype(np.float32)
    assert _erf_series_cf(x32).dtype == np.float32


@pytest.mark.parametrize("fusion", [True, False])
def test_reciprocal_gradient_is_torchs_bit_for_bit_and_overflow_is_quiet(fusion):
    torch = pytest.importorskip("torch")
    v = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    v[:5] = [0.0, 1.5, -1.5, np.inf, 1e-30]
    t = torch.tensor(v, requires_grad=True)
    t.reciprocal().sum().backward()
    x = lazyt.tensor(v, device=lazyt.device("cpu", fusion=fusion)).require_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.reciprocal().sum().backward()
        big = lazyt.tensor([3e38], device=x.device)
        assert np.isinf((big * big).numpy()).all() and np.isinf((big + big).numpy()).all()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
