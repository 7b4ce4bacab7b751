"""torch's other names, in-place method forms and Tensor queries (lazyt/aliases.py), against
numpy on every device."""
import numpy as np
import pytest

import lazyt
from lazyt.aliases import ALIASES, INPLACE
from lazyt.errors import GradError, ShapeError

A = np.array([[0.2, -0.5, 0.9], [1.5, 0.7, -0.1]], np.float32)
B = np.array([[0.3, 0.25, -0.9], [0.5, 2.0, 0.4]], np.float32)


def T(a, device):
    return lazyt.tensor(a, device=device)


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_alias_matches_its_op(device, name):
    target = ALIASES[name]
    x, y = T(A, device), T(B, device)
    unary = name in {"negative", "absolute", "arccos", "arcsin", "arctan", "arccosh", "arcsinh",
                     "arctanh", "fix"}
    args = () if unary else (y,)
    got = getattr(x, name)(*args).numpy()
    want = getattr(x, target)(*args).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(getattr(lazyt, name)(x, *args).numpy(), want)


def test_alias_values_against_numpy(device):
    x, y = T(A, device), T(B, device)
    np.testing.assert_allclose(x.multiply(y).numpy(), A * B, rtol=1e-6)
    np.testing.assert_allclose(lazyt.subtract(x, y).numpy(), A - B, rtol=1e-6)
    np.testing.assert_allclose(x.divide(y, rounding_mode="floor").numpy(), np.floor(A / B))
    np.testing.assert_array_equal(x.greater_equal(y).numpy(), A >= B)
    np.testing.assert_array_equal(lazyt.not_equal(x, x).numpy(), np.zeros_like(A, bool))
    np.testing.assert_allclose(x.arctan2(y).numpy(), np.arctan2(A, B), rtol=1e-5)
    np.testing.assert_array_equal(lazyt.fix(x).numpy(), np.trunc(A))


@pytest.mark.parametrize("name,args,ref", [
    ("exp", (), np.exp), ("sigmoid", (), lambda a: 1 / (1 + np.exp(-a))),
    ("relu", (), lambda a: np.maximum(a, 0)), ("abs", (), np.abs), ("neg", (), np.negative),
    ("tril", (), np.tril), ("square", (), np.square), ("floor", (), np.floor),
    ("pow", (2,), np.square), ("clamp_min", (0.1,), lambda a: np.maximum(a, 0.1)),
    ("lerp", (1.0, 0.5), lambda a: a + 0.5 * (1.0 - a)), ("gt", (0.3,), lambda a: a > 0.3),
    ("cumsum", (1,), lambda a: np.cumsum(a, 1)), ("multiply", (3,), lambda a: a * 3),
])
def test_inplace_form_updates_the_tensor(device, name, args, ref):
    x = T(A, device)
    other = x
    args = tuple(lazyt.full(A.shape, a, device=device) if name == "lerp" and i == 0 else a
                 for i, a in enumerate(args))
    out = getattr(x, name + "_")(*args)
    assert out is x and other is x
    assert x.dtype is lazyt.float32 and x.shape == A.shape   # the tensor keeps its dtype
    np.testing.assert_allclose(x.numpy(), ref(A).astype(np.float32), rtol=1e-6, atol=1e-7)


def test_every_listed_op_has_its_inplace_form():
    for name in INPLACE:
        assert hasattr(lazyt.Tensor, name), name
        assert hasattr(lazyt.Tensor, name + "_"), name


def test_inplace_forms_follow_the_rules_of_add_(device):
    w = lazyt.ones(3, device=device, requires_grad=True)
    with pytest.raises(GradError, match="exp_"):
        w.exp_()
    with lazyt.no_grad():
        w.mul_(2).exp_()
    np.testing.assert_allclose(w.numpy(), np.exp(np.full(3, 2.0, np.float32)), rtol=1e-6)
    assert w.requires_grad
    # a value the backward needs, changed afterwards, makes that backward raise
    x = lazyt.ones(3, device=device, requires_grad=True)
    y = x * 2
    z = (y.sigmoid() * y).sum()
    y.sigmoid_()
    with pytest.raises(GradError):
        z.backward()
    i = lazyt.tensor(np.array([1, 2]), device=device)
    with pytest.raises(Exception):
        i.sqrt_()   # a float result cannot be stored in an integer tensor


def test_inplace_of_an_op_that_changes_the_shape_raises(device):
    x = T(A, device)
    with pytest.raises(ShapeError, match="pow_"):
        x.pow_(lazyt.ones(4, 2, 3, device=device))
    np.testing.assert_array_equal(x.numpy(), A)


def test_queries_and_views(device):
    x = T(A, device)
    assert x.view_as(lazyt.ones(6)).shape == (6,)
    assert x.reshape_as(lazyt.ones(3, 2)).shape == (3, 2)
    np.testing.assert_allclose(x.mm(T(B.T.copy(), device)).numpy(), A @ B.T, rtol=1e-5)
    np.testing.assert_allclose(lazyt.mm(x, T(B.T.copy(), device)).numpy(), A @ B.T, rtol=1e-5)
    with pytest.raises(ShapeError, match="mm"):
        x.mm(lazyt.ones(3, device=device))
    np.testing.assert_array_equal(x.fliplr().numpy(), np.fliplr(A))
    np.testing.assert_array_equal(lazyt.flipud(x).numpy(), np.flipud(A))
    with pytest.raises(ShapeError, match="fliplr"):
        lazyt.ones(3, device=device).fliplr()
    with pytest.raises(ShapeError, match="flipud"):
        lazyt.flipud(lazyt.tensor(1.0, device=device))
    assert x.positive() is x
    assert (x.ndimension(), x.nelement(), x.element_size()) == (2, 6, 4)
    assert lazyt.ones(2, dtype=lazyt.float16, device=device).element_size() == 2
    assert x.is_floating_point() and not x.is_complex() and x.is_signed()
    assert not lazyt.ones(2, dtype=lazyt.int32, device=device).is_floating_point()
    assert not lazyt.ones(2, dtype=lazyt.bool_, device=device).is_signed()
    assert x.is_same_size(T(B, device)) and not x.is_same_size(lazyt.ones(6))
    assert x.is_cpu == (device.type == "cpu") and x.is_cuda == (device.type == "cuda")


def test_gradients_flow_through_aliases(device):
    x = lazyt.tensor(A, device=device, requires_grad=True)
    x.multiply(3).subtract(1).negative().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, -3.0))
