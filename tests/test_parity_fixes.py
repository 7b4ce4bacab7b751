"""Parity with torch found by a survey: frexp's named result, mode with NaN, linspace/logspace
(integer dtypes, torch's kernel arithmetic), linalg on empty matrices, broadcasting regression
losses, softmax's implicit dim, numpy scalars in lists, and 0-d tensors as creation numbers.
Each check has a hard numpy expectation; the torch tests compare against torch itself."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F

NAN = math.nan


def _pair(result) -> tuple:
    return result[0].numpy(), result[1].numpy()


# ---------------------------------------------------------------------- 1. frexp
def test_frexp_is_a_named_tuple(device, check):
    x = np.array([3.0, -0.375, 0.0, 1024.0], np.float32)
    r = lazyt.frexp(lazyt.tensor(x, device=device))
    assert type(r).__name__ == "frexp" and r._fields == ("mantissa", "exponent")
    m, e = np.frexp(x)
    check(r.mantissa, m, device=device)
    check(r.exponent, e.astype(np.int32), device=device)
    mant, expo = r                                      # still a tuple by position
    assert mant is r.mantissa and expo is r.exponent


def test_frexp_against_torch():
    torch = pytest.importorskip("torch")
    x = np.array([3.0, -0.375, 0.0, 1e-30, 7.5e20], np.float32)
    want = torch.frexp(torch.tensor(x))
    got = lazyt.frexp(lazyt.tensor(x))
    np.testing.assert_array_equal(got.mantissa.numpy(), want.mantissa.numpy())
    np.testing.assert_array_equal(got.exponent.numpy(), want.exponent.numpy())


# ---------------------------------------------------------------------- 2. mode with NaN
# (row, torch's value, torch's index): torch insertion-sorts with `<`, where NaN never moves
MODE_CASES = [
    ([NAN, NAN, 1.0], NAN, 0),
    ([NAN, NAN, NAN], NAN, 0),
    ([1.0, NAN, 1.0, NAN], 1.0, 0),
    ([NAN, 1.0, NAN, 1.0], NAN, 0),
    ([2.0, NAN, 2.0, NAN, 3.0], 2.0, 0),
    ([-math.inf, -math.inf, NAN, NAN], -math.inf, 1),
    ([3.0, NAN, 2.0, 2.0], 2.0, 2),
    ([1.0, 2.0, 2.0, 1.0], 1.0, 3),
    ([3.0, 1.0, 3.0, 1.0, 2.0], 1.0, 3),
]


@pytest.mark.parametrize("row, value, index", MODE_CASES)
def test_mode_nan_rows(device, row, value, index):
    v, i = _pair(lazyt.mode(lazyt.tensor(np.array(row, np.float32), device=device)))
    np.testing.assert_array_equal(v, np.float32(value))
    assert i == index


def test_mode_nan_batched_dims(device):
    x = np.array([[NAN, 1.0, 1.0, NAN], [2.0, 2.0, NAN, 0.0], [NAN, NAN, NAN, NAN]], np.float32)
    v, i = _pair(lazyt.mode(lazyt.tensor(x, device=device), 1))
    np.testing.assert_array_equal(v, np.array([1.0, 2.0, NAN], np.float32))
    np.testing.assert_array_equal(i, [2, 1, 0])
    v, i = _pair(lazyt.mode(lazyt.tensor(x.T.copy(), device=device), 0, keepdim=True))
    assert v.shape == (1, 3) and i.tolist() == [[2, 1, 0]]


def test_mode_against_torch_random_rows():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 8, 16):
        pool = np.array([NAN, 0.0, 1.0, 2.0, math.inf, -math.inf], np.float32)
        x = rng.choice(pool, size=(200, n))
        want = torch.mode(torch.tensor(x), 1)
        got = lazyt.mode(lazyt.tensor(x), 1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())


# ---------------------------------------------------------------------- 3. linspace, logspace
@pytest.mark.parametrize("start, end, steps, dtype, want", [
    (0.5, 7.5, 3, "int64", [0, 3, 7]),
    (-20, 34, 16, "int64", [-20, -16, -12, -9, -5, -1, 1, 5, 8, 12, 16, 19, 23, 26, 30, 34]),
    (-2.7, 3.9, 4, "int32", [-2, 0, 1, 3]),
    (4, -4, 5, "int16", [4, 2, 0, -2, -4]),
    (2.7, 5, 1, "int64", [2]),
    (0, 127.5, 3, "int8", [0, 63, 127]),
])
def test_linspace_integer_dtypes(device, start, end, steps, dtype, want):
    got = lazyt.linspace(start, end, steps, dtype=dtype, device=device)
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.numpy(), np.array(want, dtype))


def test_linspace_fused_multiply_add_and_errors():
    # torch's kernel is one fused multiply-add per value: -20 + 3.6 * 5 is not -2 there
    assert lazyt.linspace(-20.0, 34.0, 16, dtype=lazyt.float64).numpy()[5] == -1.9999999999999996
    with pytest.raises(lazyt.DTypeError, match="linspace: start -128.5 cannot be converted"):
        lazyt.linspace(-128.5, 0, 3, dtype=lazyt.int8)
    with pytest.raises(lazyt.DTypeError, match="linspace: end nan cannot be converted"):
        lazyt.linspace(0, NAN, 3, dtype=lazyt.int64)
    assert lazyt.linspace(-128.5, NAN, 0, dtype=lazyt.int8).shape == (0,)   # unused: unchecked
    with pytest.raises(lazyt.DTypeError, match="linspace: steps must be an int, got bool"):
        lazyt.linspace(0, 1, True)


def test_logspace(device, check):
    check(lazyt.logspace(0, 2, 3, device=device), np.array([1.0, 10.0, 100.0], np.float32))
    check(lazyt.logspace(0, 3, 4, base=2, device=device), np.array([1, 2, 4, 8], np.float32))
    check(lazyt.logspace(0, 2, 3, dtype=lazyt.int64, device=device), np.array([1, 10, 100]))
    check(lazyt.logspace(0, 2, 3, base=-2.0, device=device), np.array([1, -2, 4], np.float32))
    check(lazyt.logspace(lazyt.tensor(0), 1, 1, base=lazyt.tensor(2.0), device=device),
          np.array([1.0], np.float32))
    assert lazyt.logspace(0, 1, 0).shape == (0,)
    assert "logspace" in lazyt.__all__ and not hasattr(lazyt.Tensor, "logspace")
    with pytest.raises(lazyt.DTypeError, match="logspace: dtype bool"):
        lazyt.logspace(0, 1, 3, dtype=lazyt.bool_)
    with pytest.raises(lazyt.ShapeError, match="logspace: number of steps"):
        lazyt.logspace(0, 1, -1)


def test_linspace_logspace_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    dtypes = ["float64", "float32", "float16", "int64", "int32", "int16"]
    for _ in range(150):
        a, b = (float(v) for v in rng.choice([rng.uniform(-50, 50), rng.integers(-50, 50)], 2))
        steps = int(rng.choice([1, 2, 3, 5, 8, 16, 17, 33, 100]))
        for name in dtypes:
            want = torch.linspace(a, b, steps, dtype=getattr(torch, name)).numpy()
            np.testing.assert_array_equal(lazyt.linspace(a, b, steps, dtype=name).numpy(),
                                          want, err_msg=f"linspace({a}, {b}, {steps}, {name})")
            base = float(rng.choice([10.0, 2.0, 0.5, 3.0]))
            want = torch.logspace(a / 20, b / 20, steps, base, dtype=getattr(torch, name))
            got = lazyt.logspace(a / 20, b / 20, steps, base, dtype=name)
            np.testing.assert_array_equal(got.numpy(), want.numpy(),
                                          err_msg=f"logspace({a / 20}, {b / 20}, {steps})")


# ---------------------------------------------------------------------- 4. linalg, empty
def test_linalg_empty_matrices(device, check):
    L = lazyt.linalg
    e = lazyt.zeros(0, 0, device=device)
    check(L.inv(e), np.zeros((0, 0), np.float32))
    check(L.inv(lazyt.zeros(2, 0, 0, device=device)), np.zeros((2, 0, 0), np.float32))
    check(L.det(e), np.array(1.0, np.float32))
    check(L.det(lazyt.zeros(3, 0, 0, device=device)), np.ones(3, np.float32))
    sign, logabs = L.slogdet(e)
    check(sign, np.array(1.0, np.float32))
    check(logabs, np.array(0.0, np.float32))
    check(L.solve(e, lazyt.zeros(0, 3, device=device)), np.zeros((0, 3), np.float32))
    check(L.solve(e, lazyt.zeros(0, device=device)), np.zeros(0, np.float32))
    check(L.solve(lazyt.zeros(0, 2, 2, device=device), lazyt.zeros(2, 1, device=device)),
          np.zeros((0, 2, 1), np.float32))
    check(L.cholesky(e), np.zeros((0, 0), np.float32))
    q, r = L.qr(lazyt.zeros(2, 0, 3, device=device))
    check(q, np.zeros((2, 0, 0), np.float32))
    check(r, np.zeros((2, 0, 3), np.float32))
    p, lo, up = L.lu(e)
    assert p.shape == lo.shape == up.shape == (0, 0)
    packed, pivots = L.lu_factor(lazyt.zeros(2, 3, 0, device=device))
    check(packed, np.zeros((2, 3, 0), np.float32))
    check(pivots, np.zeros((2, 0), np.int32))
    check(L.matrix_norm(lazyt.zeros(3, 0, device=device), 1), np.array(0.0, np.float32))
    check(L.matrix_norm(lazyt.zeros(2, 0, 3, device=device), math.inf), np.zeros(2, np.float32))


def test_linalg_empty_against_torch():
    torch = pytest.importorskip("torch")
    L = lazyt.linalg
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3), (3, 0, 0, 0)]:
        for name in ("inv", "det", "slogdet", "cholesky", "qr", "lu", "lu_factor"):
            want = getattr(torch.linalg, name)(torch.zeros(shape))
            got = getattr(L, name)(lazyt.zeros(*shape))
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"{name}{shape}")
    for a, b in [((0, 0), (0, 0)), ((2, 0, 0), (2, 0, 1)), ((0, 2, 2), (2, 1)), ((0, 0), (0,))]:
        want = torch.linalg.solve(torch.zeros(a), torch.zeros(b))
        assert L.solve(lazyt.zeros(*a), lazyt.zeros(*b)).shape == tuple(want.shape)


# ---------------------------------------------------------------------- 5. losses broadcast
LOSSES = {
    "mse_loss": lambda d: d * d,
    "l1_loss": np.abs,
    "smooth_l1_loss": lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5),
    "huber_loss": lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_broadcast_with_a_warning(device, check, name):
    x = np.array([[0.5, -2.0, 3.0], [1.0, 0.25, -1.5]], np.float32)
    t = np.array([1.0, 0.0, -1.0], np.float32)
    fn = getattr(F, name)
    with pytest.warns(UserWarning, match=r"Using a target size \(3,\) that is different") as w:
        got = fn(lazyt.tensor(x, device=device), lazyt.tensor(t, device=device),
                 reduction="none")
    assert w[0].filename == __file__                  # reported at the caller, as torch
    check(got, LOSSES[name](x - t).astype(np.float32))
    with pytest.warns(UserWarning):
        mean = fn(lazyt.tensor(t, device=device), lazyt.tensor(x, device=device))
    check(mean, np.float32(LOSSES[name](t - x).mean()))
    with pytest.warns(UserWarning), pytest.raises(lazyt.ShapeError, match=f"^{name}: target"):
        fn(lazyt.tensor(x, device=device), lazyt.tensor(np.zeros(2, np.float32), device=device))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # same shapes: no warning
        fn(lazyt.tensor(x, device=device), lazyt.tensor(x, device=device))


def test_losses_broadcast_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=(4, 1, 3)), rng.normal(size=(2, 1))
    for name in LOSSES:
        for reduction in ("none", "mean", "sum"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = getattr(tf, name)(torch.tensor(x), torch.tensor(t), reduction=reduction)
                got = getattr(F, name)(lazyt.tensor(x), lazyt.tensor(t), reduction=reduction)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


# ---------------------------------------------------------------------- 6. softmax & co
def _np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("shape, dim", [((), 0), ((4,), 0), ((2, 3), 1), ((2, 3, 4), 0),
                                        ((2, 3, 2, 2), 1)])
def test_softmax_implicit_dim(device, check, shape, dim):
    x = np.asarray(np.random.default_rng(1).normal(size=shape), np.float32)
    want = _np_softmax(x, dim)
    for name, expect in (("softmax", want), ("log_softmax", np.log(want)),
                         ("softmin", _np_softmax(-x, dim))):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has "
                                             "been deprecated") as w:
            got = getattr(F, name)(lazyt.tensor(x, device=device))
        assert w[0].filename == __file__
        check(got, expect.astype(np.float32), atol=1e-6)


def test_softmax_dtype_and_stacklevel_positional(device, check):
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]], np.float32)
    w = x.astype(np.float64)
    for name, want in (("softmax", _np_softmax(w, 1)), ("log_softmax", np.log(_np_softmax(w, 1))),
                       ("softmin", _np_softmax(-w, 1))):
        fn = getattr(F, name)
        check(fn(lazyt.tensor(x, device=device), 1, 3, lazyt.float64), want)
        check(fn(lazyt.tensor(x, device=device), 1, dtype=lazyt.float64), want)
    ints = lazyt.tensor([1, 2], device=device)
    check(F.softmax(ints, 0, dtype=lazyt.float32), _np_softmax(np.array([1.0, 2.0]), 0)
          .astype(np.float32))


def test_relu_silu_inplace_argument(device, check):
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    t = lazyt.tensor(x, device=device)
    check(F.relu(t, inplace=False), np.maximum(x, 0))
    check(F.relu(t, False), np.maximum(x, 0))
    check(F.silu(t, inplace=False), (x / (1 + np.exp(-x))).astype(np.float32))
    u = lazyt.tensor(x, device=device)
    assert F.relu(u, inplace=True) is u
    check(u, np.maximum(x, 0))
    u = lazyt.tensor(x, device=device)
    assert F.silu(u, True) is u
    check(u, (x / (1 + np.exp(-x))).astype(np.float32))


def test_softmax_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    rng = np.random.default_rng(2)
    for shape in [(), (5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = np.asarray(rng.normal(size=shape))
        for name in ("softmax", "log_softmax", "softmin"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = getattr(tf, name)(torch.tensor(x))
                got = getattr(F, name)(lazyt.tensor(x))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------- 7. numpy scalars in lists
TENSOR_DTYPES = [
    ([np.float64(2.5)], "float64"), ([np.float64(2.5), 1.0], "float64"),
    ([1.0, np.float64(2.5)], "float64"), ([[np.float64(1)], [2.0]], "float64"),
    ([np.float32(2.5), 1.0], "float32"), ([np.float16(2.5)], "float16"),
    ([np.float16(1), np.int64(2)], "float16"), ([np.int32(3), 4.5], "float32"),
    ([np.int64(1), np.float32(2)], "float32"), ([np.float32(1), np.float64(2)], "float64"),
    ([np.int32(3)], "int32"), ([np.int32(3), 4], "int64"), ([np.int8(3)], "int8"),
    ([np.uint8(1), np.int8(2)], "int16"), ([True, np.int8(2)], "int8"),
    ([np.bool_(True)], "bool"), ([np.array([1.0], np.float16), [2.0]], "float32"),
    ([np.array([1.0], np.float16), [np.float16(2)]], "float16"),
    ([1.0, 2.0], "float32"), ([1, 2], "int64"), ([], "float32"),
]


@pytest.mark.parametrize("data, dtype", TENSOR_DTYPES)
def test_tensor_keeps_numpy_scalar_dtypes(data, dtype):
    t = lazyt.tensor(data)
    assert t.dtype.name == dtype
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=dtype))


def test_tensor_dtypes_against_torch():
    torch = pytest.importorskip("torch")
    for data, _ in TENSOR_DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.tensor(data)
        assert lazyt.tensor(data).dtype.name == str(want.dtype).removeprefix("torch."), data


# ---------------------------------------------------------------------- 8. 0-d tensor numbers
def test_creation_takes_0d_tensors(device, check):
    T = lazyt.tensor
    check(lazyt.arange(T(3), device=device), np.arange(3))
    check(lazyt.arange(T(3.0), device=device), np.arange(3, dtype=np.float32))
    check(lazyt.arange(T(1), T(7), T(2), device=device), np.array([1, 3, 5]))
    check(lazyt.arange(T(3, dtype=lazyt.int32), device=device), np.arange(3))   # a number
    check(lazyt.full((2,), T(1.5), device=device), np.full(2, 1.5, np.float32))
    check(lazyt.full((2,), T(2, dtype=lazyt.int8), device=device), np.full(2, 2))
    check(lazyt.full((2,), T(True), device=device), np.full(2, True))
    check(lazyt.full_like(lazyt.zeros(2, device=device), T(3.0)), np.full(2, 3.0, np.float32))
    check(lazyt.eye(T(2), device=device), np.eye(2, dtype=np.float32))
    assert lazyt.randint(T(5), (3,)).shape == (3,)
    assert lazyt.randint(5, (2, 2)).shape == (2, 2)              # torch's randint(high, size)
    with pytest.raises(lazyt.DTypeError, match=r"full: fill_value must be a number or a 0-d"):
        lazyt.full((2,), T([1.5]))
    with pytest.raises(lazyt.DTypeError, match=r"arange: end must be a number or a 0-d"):
        lazyt.arange(T([3]))


def test_creation_0d_against_torch():
    torch = pytest.importorskip("torch")
    for call in ("arange({T}(3))", "arange({T}(2.5, dtype={m}.float64))",
                 "full((2,), {T}(1.5, dtype={m}.float64))", "full((2,), {T}(2))",
                 "arange(0, {T}(2.0), 0.5)", "eye({T}(2), {T}(3))"):
        want = eval("torch." + call.format(T="torch.tensor", m="torch"))
        got = eval("lazyt." + call.format(T="lazyt.tensor", m="lazyt"))
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), call
        np.testing.assert_array_equal(got.numpy(), want.numpy())
