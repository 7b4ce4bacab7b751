"""torch's three forms of max/min (all elements, `(values, indices)` along one dim, the
elementwise pair), numpy's `np.max(t, axis=...)`, and amax/amin over several dims; against
numpy on every device and against torch where it is installed."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def T(a, device):
    return lazyt.tensor(a, device=device)


def ties(seed=0):
    """Small integers, so that rows hold repeated maxima and minima."""
    return np.random.default_rng(seed).integers(-3, 4, (3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("keepdim", [False, True])
def test_values_and_indices_along_one_dim(device, name, dim, keepdim):
    a = ties()
    got = getattr(T(a, device), name)(dim, keepdim=keepdim)
    values, indices = got  # unpacks as torch's pair does
    arg = np.argmax if name == "max" else np.argmin
    want_i = arg(a, axis=dim)  # numpy's arg also picks the first of equal values
    want_v = getattr(a, name)(axis=dim)
    if keepdim:
        want_i, want_v = np.expand_dims(want_i, dim), np.expand_dims(want_v, dim)
    np.testing.assert_array_equal(values.numpy(), want_v)
    np.testing.assert_array_equal(indices.numpy(), want_i)
    assert indices.dtype is lazyt.int64
    assert got.values is values and got.indices is indices
    # the function form and the keyword spelling give the same pair
    fn = getattr(lazyt, name)(T(a, device), dim=dim, keepdim=keepdim)
    np.testing.assert_array_equal(fn.indices.numpy(), want_i)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_pair_for_other_dtypes(device, dtype):
    a = (ties(1) > 0) if dtype is np.bool_ else (ties(1) + 3).astype(dtype)
    x = T(a, device)
    v, i = x.max(1)
    np.testing.assert_array_equal(v.numpy(), a.max(1))
    np.testing.assert_array_equal(i.numpy(), a.argmax(1))
    v, i = x.min(-1, keepdim=True)
    np.testing.assert_array_equal(v.numpy(), a.min(-1, keepdims=True))
    np.testing.assert_array_equal(i.numpy(), a.argmin(-1)[..., None])
    assert v.dtype == x.dtype


def test_all_elements_and_elementwise_forms(device):
    a, b = ties(2), ties(3)
    x, y = T(a, device), T(b, device)
    assert float(x.max()) == a.max() and float(lazyt.min(x)) == a.min()
    np.testing.assert_array_equal(x.max(y).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(lazyt.min(x, y).numpy(), np.minimum(a, b))
    np.testing.assert_array_equal(x.max(T(np.float32(0.5), device)).numpy(), np.maximum(a, 0.5))


def test_numpy_spelling_gives_values(device):
    """numpy's reductions call `t.max(axis=..., out=None)`: values, over an int or a tuple."""
    a = ties(4)
    x = T(a, device)
    np.testing.assert_array_equal(np.max(x, axis=1), a.max(1))
    np.testing.assert_array_equal(np.min(x, axis=(0, 2), keepdims=True),
                                  a.min((0, 2), keepdims=True))
    np.testing.assert_array_equal(x.max(-1, keepdims=True).numpy(), a.max(-1, keepdims=True))
    pair = x.max(axis=-1)          # torch's alias of dim: the pair, as torch.max(t, axis=-1)
    np.testing.assert_array_equal(pair.values.numpy(), a.max(-1))
    np.testing.assert_array_equal(pair.indices.numpy(), a.argmax(-1))
    assert float(np.max(x)) == a.max()


def test_amax_amin_over_several_dims(device):
    a = ties(5)
    x = T(a, device)
    np.testing.assert_array_equal(x.amax((0, 2)).numpy(), a.max((0, 2)))
    np.testing.assert_array_equal(lazyt.amin(x, [0, 1], keepdim=True).numpy(),
                                  a.min((0, 1), keepdims=True))
    np.testing.assert_array_equal(lazyt.amax(x).numpy(), a.max())
    np.testing.assert_array_equal(x.amin(()).numpy(), a.min())
    np.testing.assert_array_equal(x.amax(1).numpy(), a.max(1))


def test_zero_dim_tensor(device):
    x = T(np.float32(2.5), device)
    v, i = x.max(0)
    assert float(v) == 2.5 and int(i) == 0 and v.shape == () and i.shape == ()
    v, i = x.min(-1, keepdim=True)
    assert float(v) == 2.5 and int(i) == 0


def test_errors_name_the_op_and_leave_the_runtime_usable():
    x = lazyt.tensor(ties(6))
    with pytest.raises(InvalidArgumentError, match=r"max: dim must be one int.*amax"):
        x.max((0, 1))
    with pytest.raises(InvalidArgumentError, match=r"min: dim must be one int"):
        x.min([1])
    with pytest.raises(InvalidArgumentError, match=r"max: the elementwise form"):
        x.max(x, keepdim=True)
    with pytest.raises(InvalidArgumentError, match=r"amax: dim must be an int or a tuple"):
        x.amax(1.5)
    with pytest.raises(ShapeError, match="max"):
        lazyt.zeros(0, 3).max(0)
    with pytest.raises(lazyt.errors.IndexOutOfRangeError, match="min"):
        x.min(3)
    # the pair is not an operand: an old `x - x.max(1, keepdim=True)` would broadcast both halves
    with pytest.raises(InvalidArgumentError, match=r"sub: got a ValuesIndices.*\.values"):
        x - x.max(1, keepdim=True)
    with pytest.raises(InvalidArgumentError, match=r"mul: got a ValuesIndices"):
        x.min(0) * x
    np.testing.assert_array_equal(x.max(0).values.numpy(), ties(6).max(0))


def test_values_carry_the_gradient():
    a = np.random.default_rng(7).permutation(24).reshape(2, 3, 4).astype(np.float64)
    gradcheck(lambda t: lazyt.max(t, 1).values * 2.0, [lazyt.tensor(a).require_grad()])
    gradcheck(lambda t: t.min(-1, keepdim=True).values.exp(),
              [lazyt.tensor(a / 10).require_grad()])
    x = lazyt.tensor(a).require_grad()
    v, i = x.max(2)
    g = (v * lazyt.tensor(np.arange(6.0).reshape(2, 3))).sum().backward().get(x).numpy()
    want = np.zeros_like(a)
    np.put_along_axis(want, a.argmax(2)[..., None], np.arange(6.0).reshape(2, 3, 1), 2)
    np.testing.assert_array_equal(g, want)
    assert not i.requires_grad


def test_compiled_function_returns_the_pair():
    @lazyt.compile
    def top(t):
        v, i = t.max(-1)
        return v * 2, i

    for seed in range(3):
        a = ties(seed)
        v, i = top(lazyt.tensor(a))
        np.testing.assert_array_equal(v.numpy(), a.max(-1) * 2)
        np.testing.assert_array_equal(i.numpy(), a.argmax(-1))


def test_compiled_function_may_return_the_named_pair():
    """A named tuple (this pair, linalg's results) comes back from a replay as itself."""
    f = lazyt.compile(lambda t: t.min(0, keepdim=True))
    for seed in range(3):
        a = ties(seed)
        got = f(lazyt.tensor(a))
        assert type(got) is type(lazyt.tensor(a).min(0))
        np.testing.assert_array_equal(got.values.numpy(), a.min(0, keepdims=True))
        np.testing.assert_array_equal(got.indices.numpy(), a.argmin(0)[None])
    assert f.cache_info().hits >= 1


def test_against_torch(device):
    torch = pytest.importorskip("torch")
    a = ties(8)
    x, t = T(a, device), torch.from_numpy(a)
    for name in ("max", "min"):
        for dim in (0, 1, -1):
            got, want = getattr(x, name)(dim), getattr(t, name)(dim)
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
            got, want = getattr(x, name)(dim, True), getattr(t, name)(dim, True)
            assert tuple(got.indices.shape) == tuple(want.indices.shape)
        assert float(getattr(x, name)()) == float(getattr(t, name)())
        b = ties(9)
        np.testing.assert_array_equal(getattr(x, name)(T(b, device)).numpy(),
                                      getattr(t, name)(torch.from_numpy(b)).numpy())
        np.testing.assert_array_equal(getattr(lazyt, "a" + name)(x, (0, 2)).numpy(),
                                      getattr(torch, "a" + name)(t, (0, 2)).numpy())
