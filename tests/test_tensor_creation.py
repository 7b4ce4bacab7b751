"""Creation: lazyt.tensor / from_numpy dtype rules and copying, zeros/ones/full/arange/eye,
random tensors with manual_seed, and the *_like family."""
import numpy as np
import pytest

import lazyt


# ------------------------------------------------------------------ lazyt.tensor from Python data
@pytest.mark.parametrize("data, expected", [
    (1.5, np.array(1.5, np.float32)),
    (3, np.array(3, np.int64)),
    (True, np.array(True)),
    ([1.0, 2.5, -3.0], np.array([1.0, 2.5, -3.0], np.float32)),
    ([1, 2, 3], np.array([1, 2, 3], np.int64)),
    ([True, False], np.array([True, False])),
    ([[1, 2], [3, 4], [5, 6]], np.array([[1, 2], [3, 4], [5, 6]], np.int64)),
    ([[1.0, 2], [3, 4]], np.array([[1, 2], [3, 4]], np.float32)),
    ([[[0.5]]], np.array([[[0.5]]], np.float32)),
    (2 ** 40, np.array(2 ** 40, np.int64)),
], ids=["float", "int", "bool", "floats", "ints", "bools", "nested-int", "mixed-int-float",
        "rank3", "big-int"])
def test_tensor_from_python(device, check, data, expected):
    check(lazyt.tensor(data, device=device), expected, device=device)


@pytest.mark.parametrize("src, expected_dtype", [
    (np.float64, np.float64), (np.float32, np.float32), (np.float16, np.float16),
    (np.int64, np.int64), (np.int32, np.int32), (np.bool_, np.bool_),
    (np.int8, np.int8), (np.int16, np.int16), (np.uint8, np.uint8), (np.uint16, np.int32),
    (np.uint32, np.int64),
])
@pytest.mark.parametrize("make", ["tensor", "from_numpy"])
def test_ndarray_dtype_rules(check, src, expected_dtype, make):
    arr = np.array([[0, 1, 2], [3, 4, 5]]).astype(src)
    if src is np.bool_:
        arr = np.array([[True, False, True], [False, False, True]])
    t = lazyt.tensor(arr) if make == "tensor" else lazyt.from_numpy(arr)
    check(t, arr.astype(expected_dtype))


def test_ndarray_extreme_values_survive_widening(check):
    arr = np.array([0, 255], np.uint8)            # uint8, int8, int16 are lazyt dtypes
    check(lazyt.tensor(arr), arr)
    arr = np.array([0, 2 ** 32 - 1], np.uint32)   # the unsigned ones lazyt lacks widen
    check(lazyt.tensor(arr), np.array([0, 2 ** 32 - 1], np.int64))
    arr = np.array([0, 65535], np.uint16)
    check(lazyt.tensor(arr), arr.astype(np.int32))
    arr = np.array([-32768, 32767], np.int16)
    check(lazyt.from_numpy(arr), arr)


@pytest.mark.parametrize("data", [
    np.array([1 + 2j, 3j]), np.array([1.0], np.complex64), 1j, [1j, 2.0],
    np.array(["a", "b"]), ["a", "b"], "abc", np.array([object(), object()], dtype=object),
], ids=["complex128", "complex64", "py-complex", "list-complex", "str-array", "str-list",
        "str", "object"])
def test_unsupported_dtypes_raise(data):
    with pytest.raises(lazyt.DTypeError):
        lazyt.tensor(data)


@pytest.mark.parametrize("arr", [np.array([1 + 2j]), np.array(["x"]),
                                 np.array([None, 1], dtype=object)])
def test_from_numpy_unsupported_dtypes_raise(arr):
    with pytest.raises(lazyt.DTypeError):
        lazyt.from_numpy(arr)


@pytest.mark.parametrize("data", [[[1, 2], [3]], [1, [2, 3]], [[1.0], [2.0, 3.0]],
                                  [[[1, 2]], [[3, 4], [5, 6]]]])
def test_ragged_lists_raise_shape_error(data):
    with pytest.raises(lazyt.ShapeError):
        lazyt.tensor(data)
    assert lazyt.tensor([1, 2]).tolist() == [1, 2]  # still usable


@pytest.mark.parametrize("make", ["tensor", "from_numpy"])
def test_creation_copies_the_source(device, make):
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lazyt.tensor(arr, device=device) if make == "tensor" else lazyt.from_numpy(arr)
    arr[0, 0] = 100.0
    arr[1, :] = -1.0
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_tensor_copies_list_source():
    data = [1.0, 2.0]
    t = lazyt.tensor(data)
    data[0] = 9.0
    assert t.tolist() == [1.0, 2.0]


def test_numpy_of_a_tensor_is_not_the_source_array():
    arr = np.ones(3, np.float32)
    t = lazyt.from_numpy(arr)
    out = t.numpy()
    arr[:] = 5
    np.testing.assert_array_equal(out, np.ones(3, np.float32))


@pytest.mark.parametrize("dtype, np_dtype", [
    (lazyt.float32, np.float32), (lazyt.float64, np.float64), (lazyt.float16, np.float16),
    (lazyt.int32, np.int32), (lazyt.int64, np.int64), (lazyt.bool_, np.bool_),
])
def test_tensor_explicit_dtype(device, check, dtype, np_dtype):
    data = [[0, 1, 2], [3, 0, 5]]
    check(lazyt.tensor(data, dtype=dtype, device=device), np.array(data).astype(np_dtype),
          device=device)
    check(lazyt.tensor(np.array(data, np.float64), dtype=dtype, device=device),
          np.array(data).astype(np_dtype), device=device)


def test_tensor_zero_size_and_0d(device, check):
    check(lazyt.tensor(np.zeros((0, 3), np.float32), device=device), np.zeros((0, 3), np.float32))
    check(lazyt.tensor(np.zeros((2, 0, 4), np.int64), device=device), np.zeros((2, 0, 4), np.int64))
    check(lazyt.tensor(np.array(7.25, np.float32), device=device), np.array(7.25, np.float32))
    check(lazyt.tensor([[], []], dtype=lazyt.float32, device=device), np.zeros((2, 0), np.float32))


def test_dtype_aliases_and_defaults():
    assert lazyt.bool is lazyt.bool_
    assert len({lazyt.float32, lazyt.float64, lazyt.float16, lazyt.int32, lazyt.int64,
                lazyt.bool_}) == 6
    assert lazyt.tensor([0.5]).dtype == lazyt.float32
    assert lazyt.tensor([1]).dtype == lazyt.int64
    assert lazyt.zeros(1).dtype == lazyt.float32
    assert lazyt.tensor([True], dtype=lazyt.bool).dtype == lazyt.bool_


# ------------------------------------------------------------------ zeros / ones / full / empty
@pytest.mark.parametrize("fn, npfn", [("zeros", np.zeros), ("ones", np.ones)])
@pytest.mark.parametrize("args, shape", [((2, 3), (2, 3)), (((2, 3),), (2, 3)), ((4,), (4,)),
                                         ((0, 3), (0, 3)), (((),), ()), ((1, 1, 2), (1, 1, 2))])
def test_zeros_ones(device, check, fn, npfn, args, shape):
    check(getattr(lazyt, fn)(*args, device=device), npfn(shape, np.float32), device=device)


@pytest.mark.parametrize("fn, npfn", [("zeros", np.zeros), ("ones", np.ones)])
@pytest.mark.parametrize("dtype, np_dtype", [(lazyt.int64, np.int64), (lazyt.float64, np.float64),
                                             (lazyt.bool_, np.bool_), (lazyt.int32, np.int32),
                                             (lazyt.float16, np.float16)])
def test_zeros_ones_dtype(device, check, fn, npfn, dtype, np_dtype):
    check(getattr(lazyt, fn)(2, 3, dtype=dtype, device=device), npfn((2, 3), np_dtype))
    check(getattr(lazyt, fn)((3,), dtype=dtype, device=device), npfn((3,), np_dtype))


@pytest.mark.parametrize("shape, value, dtype, expected", [
    ((2, 3), 1.5, None, np.full((2, 3), 1.5, np.float32)),
    ((4,), 3, None, np.full((4,), 3, np.int64)),
    ((2,), True, None, np.full((2,), True)),
    ((2, 2), 2, lazyt.float64, np.full((2, 2), 2, np.float64)),
    ((2, 2), 2.0, lazyt.int32, np.full((2, 2), 2, np.int32)),
    ((), -1.0, None, np.array(-1.0, np.float32)),
    ((0, 2), 5, None, np.zeros((0, 2), np.int64)),
])
def test_full(device, check, shape, value, dtype, expected):
    check(lazyt.full(shape, value, dtype=dtype, device=device), expected, device=device)


def test_empty(device):
    t = lazyt.empty(2, 3, device=device)
    assert t.shape == (2, 3) and t.dtype == lazyt.float32 and t.device == device
    assert t.numpy().shape == (2, 3)
    t = lazyt.empty((4,), device=device)
    assert t.shape == (4,)
    assert lazyt.empty(0, 5).shape == (0, 5)


# ------------------------------------------------------------------ arange / eye
@pytest.mark.parametrize("args, kwargs, expected", [
    ((5,), {}, np.arange(5, dtype=np.int64)),
    ((1, 5), {}, np.arange(1, 5, dtype=np.int64)),
    ((0, 10, 3), {}, np.arange(0, 10, 3, dtype=np.int64)),
    ((5, 0, -1), {}, np.arange(5, 0, -1, dtype=np.int64)),
    ((-3, 3), {"step": 2}, np.arange(-3, 3, 2, dtype=np.int64)),
    ((0,), {}, np.arange(0, dtype=np.int64)),
    ((3, 1), {}, np.arange(3, 1, dtype=np.int64)),
    ((5.0,), {}, np.arange(5, dtype=np.float32)),
    ((0, 1, 0.25), {}, np.arange(0, 1, 0.25, dtype=np.float32)),
    ((0.5, 3), {}, np.arange(0.5, 3, dtype=np.float32)),
    ((1, 2.0, 0.5), {}, np.arange(1, 2.0, 0.5, dtype=np.float32)),
    ((4,), {"dtype": lazyt.float32}, np.arange(4, dtype=np.float32)),
    ((4,), {"dtype": lazyt.float64}, np.arange(4, dtype=np.float64)),
    ((0, 6, 2), {"dtype": lazyt.int32}, np.arange(0, 6, 2, dtype=np.int32)),
])
def test_arange(device, check, args, kwargs, expected):
    check(lazyt.arange(*args, **kwargs, device=device), expected, device=device)


@pytest.mark.parametrize("args, kwargs, expected", [
    ((3,), {}, np.eye(3, dtype=np.float32)),
    ((2, 4), {}, np.eye(2, 4, dtype=np.float32)),
    ((4, 2), {}, np.eye(4, 2, dtype=np.float32)),
    ((3,), {"m": 1}, np.eye(3, 1, dtype=np.float32)),
    ((3,), {"dtype": lazyt.int64}, np.eye(3, dtype=np.int64)),
    ((2,), {"dtype": lazyt.bool_}, np.eye(2, dtype=np.bool_)),
    ((0,), {}, np.eye(0, dtype=np.float32)),
])
def test_eye(device, check, args, kwargs, expected):
    check(lazyt.eye(*args, **kwargs, device=device), expected, device=device)


# ------------------------------------------------------------------ random
def test_rand_randn_shape_dtype_range(device):
    lazyt.manual_seed(123)  # the statistical bounds below are then checked on fixed draws
    r = lazyt.rand(200, 50, device=device)
    assert r.shape == (200, 50) and r.dtype == lazyt.float32 and r.device == device
    a = r.numpy()
    assert a.dtype == np.float32
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.02
    n = lazyt.randn((200, 50), device=device)
    assert n.shape == (200, 50) and n.dtype == lazyt.float32
    b = n.numpy()
    assert abs(b.mean()) < 0.05 and abs(b.std() - 1.0) < 0.05
    assert lazyt.rand(()).shape == () and lazyt.randn(0, 3).shape == (0, 3)


@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_manual_seed_reproducible(fn):
    lazyt.manual_seed(7)
    a = getattr(lazyt, fn)(4, 5).numpy()
    b = getattr(lazyt, fn)(4, 5).numpy()
    lazyt.manual_seed(7)
    c = getattr(lazyt, fn)(4, 5).numpy()
    d = getattr(lazyt, fn)(4, 5).numpy()
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, d)
    assert not np.array_equal(a, b)
    lazyt.manual_seed(8)
    assert not np.array_equal(getattr(lazyt, fn)(4, 5).numpy(), a)


def test_randint(device):
    lazyt.manual_seed(0)
    t = lazyt.randint(-3, 10, (40, 30), device=device)
    assert t.shape == (40, 30) and t.dtype == lazyt.int64 and t.device == device
    a = t.numpy()
    assert a.dtype == np.int64
    assert a.min() >= -3 and a.max() < 10
    assert set(np.unique(a).tolist()) == set(range(-3, 10))  # 1200 draws hit all 13 values
    lazyt.manual_seed(0)
    np.testing.assert_array_equal(lazyt.randint(-3, 10, (40, 30)).numpy(), a)


# ------------------------------------------------------------------ *_like
def test_zeros_ones_full_like(device, check):
    src = lazyt.tensor(np.arange(6, dtype=np.float16).reshape(2, 3), device=device)
    check(lazyt.zeros_like(src), np.zeros((2, 3), np.float16), device=device)
    check(lazyt.ones_like(src), np.ones((2, 3), np.float16), device=device)
    check(lazyt.zeros_like(src, dtype=lazyt.int64), np.zeros((2, 3), np.int64), device=device)
    check(lazyt.ones_like(src, dtype=lazyt.bool_), np.ones((2, 3), np.bool_), device=device)
    check(lazyt.full_like(src, 7), np.full((2, 3), 7, np.float16), device=device)
    isrc = lazyt.tensor([[1, 2]], device=device)
    check(lazyt.full_like(isrc, 3), np.full((1, 2), 3, np.int64), device=device)
    check(lazyt.zeros_like(isrc), np.zeros((1, 2), np.int64), device=device)
    z = lazyt.tensor(np.zeros((0, 4), np.float32), device=device)
    check(lazyt.ones_like(z), np.ones((0, 4), np.float32))
    check(lazyt.zeros_like(lazyt.tensor(2.0, device=device)), np.array(0.0, np.float32))


def test_like_with_device(device):
    src = lazyt.ones(2, 2)  # on the default device
    t = lazyt.zeros_like(src, device=device)
    assert t.device == device
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 2), np.float32))
    assert lazyt.ones_like(src, device=device).device == device


def test_rand_like_randn_like(device):
    lazyt.manual_seed(321)
    src = lazyt.zeros(30, 40, device=device)
    r = lazyt.rand_like(src)
    assert r.shape == (30, 40) and r.dtype == lazyt.float32 and r.device == device
    a = r.numpy()
    assert a.min() >= 0 and a.max() < 1
    n = lazyt.randn_like(src)
    assert n.shape == (30, 40) and n.dtype == lazyt.float32 and n.device == device
    assert abs(n.numpy().mean()) < 0.1 and abs(n.numpy().std() - 1) < 0.1


@pytest.mark.parametrize("fn", ["zeros", "ones", "rand", "randn", "empty"])
def test_creation_device_argument(device, fn):
    t = getattr(lazyt, fn)(2, 3, device=device)
    assert t.device == device
    assert t.shape == (2, 3)


def test_creation_functions_device_argument_others(device):
    assert lazyt.full((2,), 1.0, device=device).device == device
    assert lazyt.arange(3, device=device).device == device
    assert lazyt.eye(2, device=device).device == device
    assert lazyt.randint(0, 2, (3,), device=device).device == device
    assert lazyt.tensor([1, 2], device=device).device == device


def test_default_device_is_cpu():
    cpu = lazyt.device("cpu")
    for t in (lazyt.tensor([1.0]), lazyt.zeros(2), lazyt.ones(2), lazyt.full((1,), 2),
              lazyt.arange(3), lazyt.eye(2), lazyt.rand(2), lazyt.randn(2),
              lazyt.randint(0, 3, (2,)), lazyt.from_numpy(np.ones(2)), lazyt.empty(2)):
        assert t.device == cpu
