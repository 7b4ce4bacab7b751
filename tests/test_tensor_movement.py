"""Matmul and movement ops against numpy: matmul/@ (1-D operands, batched broadcasting),
transpose/t/T/permute, reshape/view, expand/expand_as, squeeze/unsqueeze, flatten,
cat/stack/chunk/split, contiguous."""
import numpy as np
import pytest

import lazyt

F32, F64, I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


def _arange(shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# ------------------------------------------------------------------ matmul
MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((1, 1), (1, 1)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((0, 4), (4, 5)),
    ((3, 0), (0, 5)), ((2, 0, 3, 4), (4, 2)), ((3, 4), (4, 0)),
]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_shapes(device, check, rng, sa, sb):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    ta, tb = T(a, device), T(b, device)
    check(ta @ tb, expected, rtol=1e-5, atol=1e-5, device=device)
    check(ta.matmul(tb), expected, rtol=1e-5, atol=1e-5, device=device)


def test_matmul_batched_broadcast_shape(device):
    a = lazyt.ones(2, 1, 3, 4, device=device)
    b = lazyt.ones(5, 4, 6, device=device)
    out = a @ b
    assert out.shape == (2, 5, 3, 6)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 5, 3, 6), 4.0, np.float32))


@pytest.mark.parametrize("da, db", [(F64, F64), (I64, I64), (F32, F64), (I64, F32),
                                    (np.dtype(np.int32), I64)], ids=str)
def test_matmul_dtypes(device, check, rng, da, db):
    a = rng.integers(-3, 4, (2, 3)).astype(da)
    b = rng.integers(-3, 4, (3, 4)).astype(db)
    # torch's promotion: int64 with float32 is float32 (numpy's rule gave float64)
    d = np.promote_types(da, db) if da.kind == db.kind else da if da.kind == "f" else db
    check(T(a, device) @ T(b, device), np.matmul(a.astype(d), b.astype(d)))


def test_matmul_with_numpy_operand_on_either_side(device, check, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    check(T(a, device) @ b, a @ b, atol=1e-5)
    out = a @ T(b, device)
    check(out, a @ b, atol=1e-5)


# ------------------------------------------------------------------ transpose / permute
@pytest.mark.parametrize("shape, d0, d1", [((2, 3), 0, 1), ((2, 3), 1, 0), ((2, 3, 4), 0, 2),
                                           ((2, 3, 4), -1, -2), ((2, 3, 4), 1, 1),
                                           ((0, 3), 0, 1), ((3,), 0, -1)], ids=str)
def test_transpose(device, check, shape, d0, d1):
    a = _arange(shape)
    check(T(a, device).transpose(d0, d1), np.swapaxes(a, d0, d1), device=device)


def test_t_and_T(device, check):
    a = _arange((2, 3))
    check(T(a, device).t(), a.T)
    check(T(a, device).T, a.T)
    check(T(a, device).T.T, a)


@pytest.mark.parametrize("shape, dims", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 1, 2)),
                                         ((2, 3, 4), (-1, 0, 1)), ((2, 3), (1, 0)),
                                         ((2, 3, 4, 5), (3, 1, 0, 2)), ((), ()), ((0, 2), (1, 0))],
                         ids=str)
def test_permute(device, check, shape, dims):
    a = _arange(shape, np.int64)
    check(T(a, device).permute(*dims), np.transpose(a, dims), device=device)


# ------------------------------------------------------------------ reshape / view
@pytest.mark.parametrize("shape, new", [
    ((2, 3), (3, 2)), ((2, 3), (6,)), ((2, 3), (-1,)), ((2, 3), (3, -1)), ((2, 3, 4), (4, -1, 2)),
    ((6,), (1, 2, 1, 3)), ((), (1,)), ((), (-1,)), ((1,), ()), ((1, 1), ()), ((0, 3), (3, 0)),
    ((0, 3), (-1, 3)), ((2, 0), (0,)), ((4,), (2, 2)),
], ids=str)
@pytest.mark.parametrize("method", ["reshape", "view"])
def test_reshape_view(device, check, shape, new, method):
    a = _arange(shape)
    check(getattr(T(a, device), method)(*new), a.reshape(new), device=device)


def test_reshape_after_transpose(device, check):
    a = _arange((3, 4))
    check(T(a, device).t().reshape(-1), a.T.reshape(-1))
    check(T(a, device).transpose(0, 1).view(2, 6), a.T.reshape(2, 6))


# ------------------------------------------------------------------ expand
@pytest.mark.parametrize("shape, sizes, expected_shape", [
    ((3, 1), (3, 4), (3, 4)), ((3, 1), (-1, 4), (3, 4)), ((3,), (2, 3), (2, 3)),
    ((3, 1), (2, 3, 4), (2, 3, 4)), ((3, 1), (2, -1, 4), (2, 3, 4)), ((), (2, 3), (2, 3)),
    ((1,), (0,), (0,)), ((1, 1), (2, 1, 5), (2, 1, 5)), ((2, 3), (2, 3), (2, 3)),
    ((2, 3), (-1, -1), (2, 3)),
], ids=str)
def test_expand(device, check, shape, sizes, expected_shape):
    a = _arange(shape)
    check(T(a, device).expand(*sizes), np.broadcast_to(a, expected_shape), device=device)


def test_expand_as_and_ops_on_expanded(device, check):
    a = _arange((3, 1))
    other = lazyt.zeros(2, 3, 4, device=device)
    e = T(a, device).expand_as(other)
    check(e, np.broadcast_to(a, (2, 3, 4)))
    check(e * 2 + 1, np.broadcast_to(a, (2, 3, 4)) * 2 + 1)
    check(e.sum(dim=0), np.broadcast_to(a, (2, 3, 4)).sum(axis=0))
    check(e.contiguous(), np.broadcast_to(a, (2, 3, 4)))


# ------------------------------------------------------------------ squeeze / unsqueeze / flatten
@pytest.mark.parametrize("shape, dim, expected", [
    ((1, 3, 1, 2), None, (3, 2)), ((1, 3, 1, 2), 0, (3, 1, 2)), ((1, 3, 1, 2), 2, (1, 3, 2)),
    ((1, 3, 1, 2), -2, (1, 3, 2)), ((1, 3, 1, 2), 1, (1, 3, 1, 2)), ((1, 3, 1, 2), -1, (1, 3, 1, 2)),
    ((1, 1), None, ()), ((), None, ()), ((0, 1), 1, (0,)), ((0, 1), None, (0,)),
], ids=str)
def test_squeeze(device, check, shape, dim, expected):
    a = _arange(shape)
    t = T(a, device)
    out = t.squeeze() if dim is None else t.squeeze(dim)
    check(out, a.reshape(expected), device=device)


@pytest.mark.parametrize("shape, dim", [((2, 3), 0), ((2, 3), 1), ((2, 3), 2), ((2, 3), -1),
                                        ((2, 3), -3), ((), 0), ((), -1), ((0,), 1)], ids=str)
def test_unsqueeze(device, check, shape, dim):
    a = _arange(shape)
    check(T(a, device).unsqueeze(dim), np.expand_dims(a, dim), device=device)


@pytest.mark.parametrize("shape, args, expected", [
    ((2, 3, 4), (), (24,)), ((2, 3, 4), (1,), (2, 12)), ((2, 3, 4), (0, 1), (6, 4)),
    ((2, 3, 4), (1, -1), (2, 12)), ((2, 3, 4), (-2, -1), (2, 12)), ((2, 3, 4), (2, 2), (2, 3, 4)),
    ((2, 3, 4, 5), (1, 2), (2, 12, 5)), ((5,), (), (5,)), ((), (), (1,)), ((2, 0, 3), (), (0,)),
], ids=str)
def test_flatten(device, check, shape, args, expected):
    a = _arange(shape)
    check(T(a, device).flatten(*args), a.reshape(expected), device=device)


def test_flatten_keywords(device, check):
    a = _arange((2, 3, 4))
    check(T(a, device).flatten(start_dim=1), a.reshape(2, 12))
    check(T(a, device).flatten(end_dim=1), a.reshape(6, 4))


# ------------------------------------------------------------------ cat / stack
@pytest.mark.parametrize("shapes, dim", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0), (2, 2)], 1), ([(2, 3), (2, 5)], -1),
    ([(2, 3, 4), (2, 1, 4)], 1), ([(3,)], 0), ([(0, 3), (2, 3)], 0), ([(1,), (1,), (1,)], 0),
    ([(2, 3), (2, 3)], -2),
], ids=str)
def test_cat(device, check, shapes, dim):
    arrs = [_arange(s) + 100 * i for i, s in enumerate(shapes)]
    out = lazyt.cat([T(a, device) for a in arrs], dim=dim)
    check(out, np.concatenate(arrs, axis=dim), device=device)


def test_cat_default_dim_and_tuple_input(device, check):
    arrs = [_arange((1, 2)), _arange((2, 2)) + 10]
    check(lazyt.cat([T(a, device) for a in arrs]), np.concatenate(arrs))
    check(lazyt.cat(tuple(T(a, device) for a in arrs), 0), np.concatenate(arrs))


@pytest.mark.parametrize("shape, n, dim", [((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 2, 2),
                                           ((2, 3), 2, -1), ((2, 3), 2, -3), ((), 4, 0),
                                           ((0, 2), 2, 1), ((4,), 1, 0)], ids=str)
def test_stack(device, check, shape, n, dim):
    arrs = [_arange(shape) + 10 * i for i in range(n)]
    out = lazyt.stack([T(a, device) for a in arrs], dim=dim)
    check(out, np.stack(arrs, axis=dim), device=device)
    if dim == 0:
        check(lazyt.stack([T(a, device) for a in arrs]), np.stack(arrs))


# ------------------------------------------------------------------ chunk / split (torch semantics)
@pytest.mark.parametrize("size, chunks, sizes", [
    (7, 3, [3, 3, 1]), (6, 3, [2, 2, 2]), (6, 4, [2, 2, 2]), (5, 4, [2, 2, 1]), (3, 5, [1, 1, 1]),
    (1, 1, [1]), (10, 4, [3, 3, 3, 1]),
], ids=str)
def test_chunk(device, check, size, chunks, sizes):
    a = _arange((size, 2))
    parts = T(a, device).chunk(chunks)
    assert isinstance(parts, (list, tuple))
    assert [p.shape[0] for p in parts] == sizes
    bounds = np.cumsum([0] + sizes)
    for p, lo, hi in zip(parts, bounds[:-1], bounds[1:]):
        check(p, a[lo:hi], device=device)


def test_chunk_along_dim(device, check):
    a = _arange((2, 5, 3))
    parts = T(a, device).chunk(2, dim=1)
    assert len(parts) == 2
    check(parts[0], a[:, :3])
    check(parts[1], a[:, 3:])
    parts = T(a, device).chunk(3, -1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        check(p, a[:, :, i:i + 1])


@pytest.mark.parametrize("size, arg, sizes", [
    (5, 2, [2, 2, 1]), (6, 2, [2, 2, 2]), (4, 5, [4]), (5, [1, 4], [1, 4]), (5, [2, 0, 3], [2, 0, 3]),
    (3, (1, 1, 1), [1, 1, 1]), (5, 1, [1, 1, 1, 1, 1]),
], ids=str)
def test_split(device, check, size, arg, sizes):
    a = _arange((size, 3))
    parts = T(a, device).split(arg)
    assert isinstance(parts, (list, tuple))
    assert [p.shape[0] for p in parts] == sizes
    bounds = np.cumsum([0] + sizes)
    for p, lo, hi in zip(parts, bounds[:-1], bounds[1:]):
        check(p, a[lo:hi], device=device)


def test_split_along_dim(device, check):
    a = _arange((2, 7))
    parts = T(a, device).split(3, dim=1)
    assert [p.shape for p in parts] == [(2, 3), (2, 3), (2, 1)]
    for p, sl in zip(parts, [slice(0, 3), slice(3, 6), slice(6, 7)]):
        check(p, a[:, sl])
    parts = T(a, device).split([5, 2], -1)
    check(parts[0], a[:, :5])
    check(parts[1], a[:, 5:])


def test_functional_forms(device, check):
    a = _arange((4, 3))
    t = T(a, device)
    check(lazyt.transpose(t, 0, 1), a.T)
    check(lazyt.matmul(t, T(a.T.copy(), device)), a @ a.T)


def test_contiguous(device, check):
    a = _arange((2, 3, 4))
    p = T(a, device).permute(2, 0, 1)
    c = p.contiguous()
    check(c, np.ascontiguousarray(np.transpose(a, (2, 0, 1))), device=device)
    check(T(a, device)[:, ::-1].contiguous(), a[:, ::-1])
    check(T(a, device).contiguous(), a)
    check(T(np.array(1.5, np.float32), device).contiguous(), np.array(1.5, np.float32))
    check(T(np.zeros((0, 2), np.float32), device).t().contiguous(), np.zeros((2, 0), np.float32))
