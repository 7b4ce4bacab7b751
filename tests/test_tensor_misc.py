"""Tensor info and conversions: shape/dtype/device/ndim/numel/size/len, repr, numpy(), item,
tolist, __array__, float/int/bool, __array_ufunc__ = None, dtype casts, .to(device), and the
Dispatch boundary (into_dispatch / from_dispatch)."""
import numpy as np
import pytest

import lazyt

F32, F64, F16, I32, I64, B = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
                              np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))


LAZYT_TO_NP = {lazyt.float32: F32, lazyt.float64: F64, lazyt.float16: F16, lazyt.int32: I32,
               lazyt.int64: I64, lazyt.bool_: B}
NP_TO_LAZYT = {v: k for k, v in LAZYT_TO_NP.items()}


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


# ------------------------------------------------------------------ info
@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (), (0, 3)], ids=str)
def test_shape_ndim_numel_size_len(device, shape):
    t = lazyt.zeros(*shape, device=device) if shape else lazyt.tensor(1.0, device=device)
    assert t.shape == shape and isinstance(t.shape, tuple)
    assert all(type(s) is int for s in t.shape)
    assert t.ndim == len(shape)
    assert t.numel() == int(np.prod(shape)) and type(t.numel()) is int
    assert t.size() == shape
    for i, s in enumerate(shape):
        assert t.size(i) == s
        assert t.size(i - len(shape)) == s
    if shape:
        assert len(t) == shape[0]
    assert t.dtype == lazyt.float32
    assert t.device == device


def test_numpy_returns_read_only_array(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = T(a, device)
    out = t.numpy()
    assert isinstance(out, np.ndarray)
    assert out.dtype == F32 and out.shape == (2, 3)
    np.testing.assert_array_equal(out, a)
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[0, 0] = 7.0
    np.testing.assert_array_equal(t.numpy(), a)
    r = (t + 1).numpy()
    assert not r.flags.writeable
    assert not T(np.array(2.0, np.float32), device).numpy().flags.writeable


@pytest.mark.parametrize("arr, pytype", [(np.array(2.5, np.float32), float),
                                         (np.array([[7]], np.int64), int),
                                         (np.array([True]), bool),
                                         (np.array(-3, np.int32), int),
                                         (np.array(0.25, np.float64), float),
                                         (np.array([1.5], np.float16), float)], ids=str)
def test_item(device, arr, pytype):
    t = T(arr, device)
    v = t.item()
    assert type(v) is pytype
    assert v == arr.reshape(()).item()


@pytest.mark.parametrize("arr", [np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
                                 np.array([[1, 2], [3, 4]], np.int64), np.array([True, False]),
                                 np.array(3.5, np.float32), np.zeros((2, 0), np.float32),
                                 np.array([1, -2], np.int32)], ids=str)
def test_tolist(device, arr):
    out = T(arr, device).tolist()
    ref = arr.tolist()
    assert out == ref

    def types(x):
        return [types(v) for v in x] if isinstance(x, list) else type(x)
    assert types(out) == types(ref)


def test_array_protocol(device):
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    t = T(a, device)
    out = np.asarray(t)
    assert isinstance(out, np.ndarray) and out.dtype == F32 and out.shape == (3, 2)
    np.testing.assert_array_equal(out, a)
    out64 = np.asarray(t, dtype=np.float64)
    assert out64.dtype == F64
    np.testing.assert_array_equal(out64, a)
    np.testing.assert_array_equal(np.array(t), a)
    assert np.array(t).flags.writeable  # np.array copies
    np.testing.assert_array_equal(np.asarray(T(np.array([True]), device)), [True])


@pytest.mark.parametrize("arr", [np.array(2.5, np.float32), np.array([[3]], np.int64),
                                 np.array([0.0], np.float64), np.array([False])], ids=str)
def test_python_scalar_conversions(device, arr):
    t = T(arr, device)
    v = arr.reshape(()).item()
    assert float(t) == float(v)
    assert int(t) == int(v)
    assert bool(t) is bool(v)
    assert type(float(t)) is float and type(int(t)) is int


def test_bool_of_comparison_drives_if(device):
    t = T(np.array([3.0], np.float32), device)
    assert bool(t > 2)
    assert not bool(t < 2)
    if t == 3:
        pass
    else:
        pytest.fail("one-element comparison should be truthy")


@pytest.mark.parametrize("arr, dtype_name", [
    (np.array([[1.5, -2.0], [0.0, 3.25]], np.float32), "float32"),
    (np.array([1, 2, 3], np.int64), "int64"), (np.array(True), "bool"),
    (np.array([0.5], np.float64), "float64"), (np.zeros((0, 2), np.float16), "float16"),
], ids=str)
def test_repr_shows_values_shape_dtype_device(device, arr, dtype_name):
    r = repr(T(arr, device))
    assert dtype_name in r, r
    shape = arr.shape
    assert str(shape) in r or str(list(shape)) in r or ("shape=" in r and str(shape) in r), r
    assert "cpu" in r or device.base in r, r
    for v in arr.reshape(-1)[:4].tolist():
        if isinstance(v, bool):
            assert str(v) in r or str(v).lower() in r, r
        elif isinstance(v, float):
            assert f"{v:g}" in r or str(v) in r, r
        else:
            assert str(v) in r, r


def test_repr_names_the_device_layers():
    t = lazyt.ones(2, device=lazyt.device("cpu", fusion=False))
    assert "fusion=False" in repr(t) or repr(lazyt.device("cpu", fusion=False)) in repr(t)


def test_repr_of_large_tensor_is_short():
    r = repr(lazyt.zeros(1000, 1000))
    assert len(r) < 2000
    assert "(1000, 1000)" in r or "[1000, 1000]" in r


# ------------------------------------------------------------------ numpy operands
@pytest.mark.parametrize("np_dtype, t_dtype, out_dtype", [
    (F64, F32, F64), (F32, F32, F32), (I64, F32, F32), (F32, I64, F32), (I64, I64, I64),
    (F16, F32, F32), (B, F32, F32),
], ids=str)
def test_ndarray_op_tensor_is_a_tensor(device, check, np_dtype, t_dtype, out_dtype):
    arr = (np.arange(1, 7).reshape(2, 3) % 4 + 1).astype(np_dtype)
    ta = (np.arange(1, 4) + 1).astype(t_dtype)
    t = T(ta, device)
    x, y = arr.astype(np.float64), ta.astype(np.float64)
    check(arr + t, (x + y).astype(out_dtype), device=device)
    check(arr * t, (x * y).astype(out_dtype), device=device)
    check(arr - t, (x - y).astype(out_dtype), device=device)
    check(t - arr, (y - x).astype(out_dtype), device=device)
    check(t + arr, (y + x).astype(out_dtype), device=device)


def test_ndarray_ops_variants(device, check):
    arr = np.ones(3)  # float64
    t = T(np.array([1.0, 2.0, 4.0], np.float32), device)
    out = arr + t
    assert isinstance(out, lazyt.Tensor)
    check(out, np.array([2.0, 3.0, 5.0]))
    check(arr / t, np.array([1.0, 0.5, 0.25]))
    check(arr < t, np.array([False, True, True]))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(m @ t, m @ np.array([1.0, 2.0, 4.0], np.float32))
    check(np.eye(3) @ t, np.array([1.0, 2.0, 4.0]))


def test_array_ufunc_is_none():
    assert lazyt.Tensor.__array_ufunc__ is None


# ------------------------------------------------------------------ dtypes and casts
CAST_METHODS = [("float", F32), ("double", F64), ("half", F16), ("int", I32), ("long", I64),
                ("bool", B)]


@pytest.mark.parametrize("method, target", CAST_METHODS, ids=[m for m, _ in CAST_METHODS])
@pytest.mark.parametrize("src", [F32, I64, B, F64], ids=str)
def test_cast_methods(device, check, method, target, src):
    base = np.array([[1.75, -2.5, 0.0], [3.0, -0.25, 7.0]])
    a = base.astype(src)
    check(getattr(T(a, device), method)(), a.astype(target), device=device)


@pytest.mark.parametrize("target", [lazyt.float32, lazyt.float64, lazyt.float16, lazyt.int32,
                                    lazyt.int64, lazyt.bool_], ids=str)
def test_to_dtype(device, check, target):
    a = np.array([1.75, -2.5, 0.0, 100.0], np.float32)
    out = T(a, device).to(target)
    check(out, a.astype(LAZYT_TO_NP[target]), device=device)


def test_to_same_dtype_keeps_values(device, check):
    a = np.array([1.0, 2.0], np.float32)
    t = T(a, device)
    check(t.to(lazyt.float32), a)
    check(t.float(), a)


def test_to_device(device, check):
    a = np.arange(4, dtype=np.float32)
    t = lazyt.tensor(a)  # default device (cpu)
    moved = t.to(device)
    check(moved, a, device=device)
    assert t.to("cpu").device == lazyt.device("cpu")
    check(t.to("cpu"), a)
    other = lazyt.device("cpu", fusion=False)
    check(T(a, device).to(other), a, device=other)
    check(T(a, device).to(other).to(device) * 2, a * 2, device=device)


def test_promotion_function_matches_torch():
    """torch.promote_types: the higher category's dtype (bool < int < float), within one the
    wider (the full tables, with 0-d tensors and numbers, are in test_promotion_torch.py)."""
    dts = [lazyt.bool_, lazyt.int32, lazyt.int64, lazyt.float16, lazyt.float32, lazyt.float64]
    for i, a in enumerate(dts):
        for j, b in enumerate(dts):
            x = lazyt.zeros(1, dtype=a) + lazyt.zeros(1, dtype=b)
            cross = a.is_float != b.is_float or (a is lazyt.bool_) != (b is lazyt.bool_)
            want = dts[max(i, j)]  # dts is ordered by category, then width
            assert x.dtype == want, (a, b)
            if not cross:
                assert x.dtype == NP_TO_LAZYT[np.promote_types(LAZYT_TO_NP[a], LAZYT_TO_NP[b])]


# ------------------------------------------------------------------ the Dispatch boundary
def test_into_and_from_dispatch(device, check):
    a = lazyt.tensor(np.array([1.0, 2.0, 3.0], np.float32), device=device)
    b = lazyt.tensor(np.array([10.0, 20.0, 30.0], np.float32), device=device)
    da, db = a.into_dispatch(), b.into_dispatch()
    assert isinstance(da, lazyt.dispatch.DispatchTensor)
    assert isinstance(da, lazyt.DispatchTensor)
    assert da.device == device
    out = lazyt.Dispatch.binary(lazyt.ops.BinaryOp.ADD, da, db)
    assert isinstance(out, lazyt.dispatch.DispatchTensor)
    back = lazyt.Tensor.from_dispatch(out)
    assert isinstance(back, lazyt.Tensor)
    check(back, np.array([11.0, 22.0, 33.0], np.float32), device=device)
    check(lazyt.Tensor.from_dispatch(a.into_dispatch()), a.numpy())
    check(lazyt.Tensor.from_dispatch(a.into_dispatch()) * b, np.array([10.0, 40.0, 90.0],
                                                                      np.float32))
