"""Reductions against numpy: sum mean max min prod argmax argmin var std over dim None / int /
tuple with keepdim, their result dtypes, zero-size dims and 0-d tensors."""
import numpy as np
import pytest

import lazyt

F32, F64, F16, I32, I64, B = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
                              np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))
U8, I8, I16 = np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


def _values(rng, shape, dtype):
    if dtype == B:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    return rng.integers(-4, 5, shape).astype(dtype)


def _axis(dim):
    return tuple(dim) if isinstance(dim, list) else dim


DIMS_3D = [None, 0, 1, -1, (0, 2), (1, -1), (0, 1, 2)]


def _sum_dtype(d):
    return I64 if d.kind in "biu" else d


def _mean_dtype(d):
    return F32 if d.kind in "biu" else d


@pytest.mark.parametrize("dim", DIMS_3D, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, F64, I64, I32, I16, I8, U8, B], ids=str)
def test_sum(device, check, rng, dim, keepdim, dtype):
    a = _values(rng, (2, 3, 4), dtype)
    out = T(a, device).sum(dim=dim, keepdim=keepdim)
    check(out, np.sum(a, axis=dim, keepdims=keepdim, dtype=_sum_dtype(dtype)), device=device)


@pytest.mark.parametrize("dim", DIMS_3D, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, F64, F16, I64, I32, I8, U8], ids=str)
def test_mean(device, check, rng, dim, keepdim, dtype):
    a = _values(rng, (2, 3, 4), dtype)
    out = T(a, device).mean(dim=dim, keepdim=keepdim)
    expected = np.mean(a.astype(np.float64), axis=dim, keepdims=keepdim).astype(_mean_dtype(dtype))
    check(out, expected, device=device)


@pytest.mark.parametrize("dim", DIMS_3D, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, F64, I64, I32, I16, I8, U8], ids=str)
@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min(device, check, rng, dim, keepdim, dtype, fn):
    """amax/amin give the values over any dims; max/min over one int dim the pair."""
    a = _values(rng, (2, 3, 4), dtype)
    x = T(a, device)
    out = getattr(x, "a" + fn)(dim=dim, keepdim=keepdim)
    assert isinstance(out, lazyt.Tensor)
    want = getattr(np, fn)(a, axis=dim, keepdims=keepdim)
    check(out, want, device=device)
    if dim is None:
        check(getattr(x, fn)(), np.asarray(getattr(np, fn)(a)), device=device)
    elif isinstance(dim, int):
        pair = getattr(x, fn)(dim=dim, keepdim=keepdim)
        check(pair.values, want, device=device)
        idx = getattr(np, "arg" + fn)(a, axis=dim)
        check(pair.indices, np.expand_dims(idx, dim) if keepdim else idx, device=device)
    else:
        with pytest.raises(lazyt.InvalidArgumentError, match=f"a{fn}"):
            getattr(x, fn)(dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("dim", DIMS_3D, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, F64, I64, I32, I8, B], ids=str)
def test_prod(device, check, rng, dim, keepdim, dtype):
    a = _values(rng, (2, 3, 4), dtype)
    if dtype.kind == "f":
        a = (a / 2 + np.sign(a)).astype(dtype)  # |values| around 1, so products stay moderate
    out = T(a, device).prod(dim=dim, keepdim=keepdim)
    check(out, np.prod(a, axis=dim, keepdims=keepdim, dtype=_sum_dtype(dtype)), device=device)


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (1, False), (2, False),
                                          (-1, False), (0, True), (1, True), (-1, True)], ids=str)
@pytest.mark.parametrize("dtype", [F32, I64, F64], ids=str)
def test_argmax_argmin(device, check, rng, fn, dim, keepdim, dtype):
    a = rng.permutation(24).reshape(2, 3, 4).astype(dtype)  # distinct values: no ties
    out = getattr(T(a, device), fn)(dim=dim, keepdim=keepdim)
    expected = getattr(np, fn)(a, axis=dim, keepdims=keepdim).astype(np.int64)
    check(out, np.asarray(expected), device=device)


def test_argmax_ties_pick_the_first(device, check):
    a = np.array([[1, 3, 3], [1, 2, 3]], np.float32)
    check(T(a, device).argmax(dim=1), np.array([1, 2], np.int64))
    check(T(a, device).argmin(dim=0), np.array([0, 1, 0], np.int64))
    check(T(a, device).argmax(dim=0), np.array([0, 0, 0], np.int64))
    check(T(a, device).argmax(), np.array(1, np.int64))
    check(T(a, device).argmin(), np.array(0, np.int64))


def test_argmax_default_is_flattened(device, check):
    a = np.array([[0.0, 5.0], [9.0, 1.0]], np.float32)
    check(T(a, device).argmax(), np.array(2, np.int64))
    check(T(a, device).argmin(), np.array(0, np.int64))


@pytest.mark.parametrize("fn, npfn", [("var", np.var), ("std", np.std)])
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), (1, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_var_std_unbiased_by_default(device, check, rng, fn, npfn, dim, keepdim, dtype):
    a = _values(rng, (3, 4, 5), dtype)
    t = T(a, device)
    x = a.astype(np.float64)
    expected = npfn(x, axis=dim, keepdims=keepdim, ddof=1).astype(dtype)
    check(getattr(t, fn)(dim=dim, keepdim=keepdim), expected, device=device)
    check(getattr(t, fn)(dim=dim, keepdim=keepdim, correction=1), expected)
    biased = npfn(x, axis=dim, keepdims=keepdim, ddof=0).astype(dtype)
    check(getattr(t, fn)(dim=dim, keepdim=keepdim, correction=0), biased)


def test_var_std_positional_dim(device, check, rng):
    a = _values(rng, (4, 6), F32)
    x = a.astype(np.float64)
    check(T(a, device).var(1), np.var(x, axis=1, ddof=1).astype(F32))
    check(T(a, device).std(0), np.std(x, axis=0, ddof=1).astype(F32))
    check(T(a, device).var(), np.array(np.var(x, ddof=1), F32))


@pytest.mark.parametrize("fn", ["sum", "mean", "max", "min", "prod"])
def test_reduction_positional_dim(device, check, rng, fn):
    a = _values(rng, (3, 4), F32)
    expected = getattr(np, fn)(a, axis=1)
    values = (lambda r: r.values) if fn in ("max", "min") else (lambda r: r)
    check(values(getattr(T(a, device), fn)(1)), expected)
    check(values(getattr(T(a, device), fn)(-2, True)),
          getattr(np, fn)(a, axis=-2, keepdims=True))


# ------------------------------------------------------------------ zero-size and 0-d
@pytest.mark.parametrize("dim, keepdim", [(0, False), (0, True), (None, False), ((0, 1), False)],
                         ids=str)
def test_sum_over_zero_size_dim_is_zero(device, check, dim, keepdim):
    a = np.zeros((0, 3), np.float32)
    check(T(a, device).sum(dim=dim, keepdim=keepdim), np.sum(a, axis=dim, keepdims=keepdim))
    ai = np.zeros((0, 3), np.int64)
    check(T(ai, device).sum(dim=dim, keepdim=keepdim), np.sum(ai, axis=dim, keepdims=keepdim))
    check(T(ai, device).prod(dim=dim, keepdim=keepdim), np.prod(ai, axis=dim, keepdims=keepdim))


def test_reduce_nonempty_dim_of_empty_tensor(device, check):
    a = np.zeros((0, 3), np.float32)
    for fn in ("sum", "mean", "amax", "amin", "prod"):
        check(getattr(T(a, device), fn)(dim=1), getattr(np, fn)(a, axis=1))
    check(T(a, device).argmax(dim=1), np.zeros((0,), np.int64))
    check(T(a, device).max(dim=1, keepdim=True).values, np.zeros((0, 1), np.float32))
    check(T(a, device).max(dim=1, keepdim=True).indices, np.zeros((0, 1), np.int64))


@pytest.mark.parametrize("fn", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, None, -2], ids=str)
def test_max_over_zero_size_dim_raises(device, fn, dim):
    t = T(np.zeros((0, 3), np.float32), device)
    with pytest.raises(lazyt.ShapeError) as e:
        getattr(t, fn)(dim=dim).numpy()
    assert fn in str(e.value)
    assert (T(np.ones(2, np.float32), device) + 1).tolist() == [2.0, 2.0]  # still usable


@pytest.mark.parametrize("fn", ["sum", "mean", "max", "min", "prod"])
def test_reduce_0d(device, check, fn):
    a = np.array(2.5, np.float32)
    t = T(a, device)
    check(getattr(t, fn)(), np.array(2.5, np.float32))
    values = (lambda r: r.values) if fn in ("max", "min") else (lambda r: r)
    check(values(getattr(t, fn)(dim=0)), np.array(2.5, np.float32))  # torch: dim 0 / -1 of 0-d
    check(values(getattr(t, fn)(dim=-1, keepdim=True)), np.array(2.5, np.float32))
    if fn in ("max", "min"):
        check(getattr(t, fn)(dim=0).indices, np.array(0, np.int64))
    check(t.argmax(), np.array(0, np.int64))


def test_reduce_full_to_0d(device, check, rng):
    a = _values(rng, (3, 4), F32)
    for fn in ("sum", "mean", "max", "min"):
        out = getattr(T(a, device), fn)()
        check(out, np.asarray(getattr(np, fn)(a)))
        assert out.ndim == 0
    check(T(a, device).sum(keepdim=True), np.sum(a, keepdims=True))


def test_bool_reductions(device, check):
    a = np.array([[True, False, True], [True, True, True]])
    check(T(a, device).sum(), np.array(5, np.int64))
    check(T(a, device).sum(dim=1), np.array([2, 3], np.int64))
    check(T(a, device).prod(dim=1), np.array([0, 1], np.int64))
