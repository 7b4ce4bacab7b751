"""Indexing x[...] against numpy (ints, slices with any step, None, Ellipsis, int lists/tensors),
immutability, and the gathering ops index_select/gather/index_add/scatter_add (torch semantics)."""
import numpy as np
import pytest

import lazyt


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

BASIC_INDICES = [
    0, 2, -1, -3, (1, 2), (1, 2, 3), (-1, -1, -1), slice(None), slice(1, 3), slice(None, None, 2),
    slice(None, None, -1), slice(3, 0, -1), slice(-2, None), slice(10, 20), slice(None, None, -2),
    slice(2, None, -1), slice(-1, -4, -1), slice(1, 1), slice(0, 0), (slice(1, None), -1),
    (slice(None), slice(None, None, -1), slice(1, 4, 2)), (slice(None, None, 3), 1, slice(4, 0, -2)),
    None, (None, 0), (Ellipsis, 0), (0, Ellipsis), (0, Ellipsis, None), (Ellipsis,), Ellipsis,
    (1, None, slice(None, None, -1), None), (None, Ellipsis, None), (Ellipsis, slice(1, 2), None),
    (slice(None), None, 2), (), (0, slice(None), -2), (slice(5, None),), (slice(-100, 100),),
]


def _id(ix):
    return repr(ix).replace(" ", "")


@pytest.mark.parametrize("ix", BASIC_INDICES, ids=[_id(i) for i in BASIC_INDICES])
def test_basic_indexing(device, check, ix):
    check(T(A, device)[ix], A[ix], device=device)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.float64, np.int32])
def test_indexing_keeps_dtype(device, check, dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    t = T(a, device)
    check(t[1], a[1])
    check(t[:, ::-2], a[:, ::-2])
    check(t[2, 3], a[2, 3])


@pytest.mark.parametrize("ix", [
    [0, 2], [2, 0, 2], [1], (slice(None), [3, 1]), (slice(None), [0, 0, 3]), (0, [3, 0]),
    (Ellipsis, [4, 0, 1]), ([2, 0], slice(1, 3)), (slice(None), slice(None), [1, 3]),
    (slice(None, None, -1), [2, 1], 4),
], ids=_id)
@pytest.mark.parametrize("as_tensor", [False, True], ids=["list", "tensor"])
def test_integer_list_or_tensor_selects_along_a_dim(device, check, ix, as_tensor):
    def conv(i):
        return T(np.array(i, np.int64), device) if as_tensor and isinstance(i, list) else i
    lix = tuple(conv(i) for i in ix) if isinstance(ix, tuple) else conv(ix)
    nix = tuple(np.array(i) if isinstance(i, list) else i for i in ix) \
        if isinstance(ix, tuple) else np.array(ix)
    check(T(A, device)[lix], A[nix], device=device)


def test_index_0d(device, check):
    a = np.array(3.5, np.float32)
    t = T(a, device)
    check(t[()], a[()])
    check(t[None], a[None])
    check(t[...], a[...])
    check(t[None, None], a[None, None])


def test_index_zero_size(device, check):
    z = np.zeros((0, 3), np.float32)
    check(T(z, device)[:, 1], z[:, 1])
    check(T(z, device)[:, ::-1], z[:, ::-1])
    check(T(z, device)[None], z[None])
    check(T(A, device)[1:1], A[1:1])
    check(T(A, device)[:, 2:0], A[:, 2:0])


def test_chained_indexing(device, check):
    t = T(A, device)
    check(t[1][2][3], A[1][2][3])
    check(t[::-1][0, ::2], A[::-1][0, ::2])
    check((t * 2)[:, 1:3].sum(dim=1), (A * 2)[:, 1:3].sum(axis=1))


def test_iteration_over_dim0(device, check):
    rows = list(T(A, device))
    assert len(rows) == 3
    for r, ref in zip(rows, A):
        check(r, ref, device=device)
    assert len(T(A, device)) == 3
    assert [r.item() for r in T(np.array([4, 5, 6]), device)] == [4, 5, 6]
    assert list(T(np.zeros((0, 2), np.float32), device)) == []


@pytest.mark.parametrize("ix", [3, -4, (0, 4), (0, -5), (0, 0, 5), (Ellipsis, 5), (slice(None), 7)],
                         ids=_id)
def test_int_out_of_range_raises(device, ix):
    t = T(A, device)
    with pytest.raises(lazyt.IndexOutOfRangeError) as e:
        t[ix]
    assert isinstance(e.value, IndexError)
    assert isinstance(e.value, lazyt.LazytError)
    check_usable(device)


@pytest.mark.parametrize("ix", [[0, 3], [5], (slice(None), [1, 4])], ids=_id)
def test_list_index_out_of_range_raises(device, ix):
    t = T(A, device)
    with pytest.raises(lazyt.IndexOutOfRangeError):
        t[ix].numpy()  # may be raised on read: execution can be lazy
    check_usable(device)


def test_too_many_indices_raises(device):
    with pytest.raises(lazyt.LazytError):
        T(A, device)[0, 0, 0, 0]
    with pytest.raises(lazyt.LazytError):
        T(np.array(1.0), device)[0]


def test_setitem_updates_in_place_as_numpy_does(device):
    t = T(A, device)
    ref = np.array(A, copy=True)
    t[0] = 1
    ref[0] = 1
    t[0, 1:3] = T(np.full(5, -2.0, np.float32), device)    # broadcast over the indexed rows
    ref[0, 1:3] = -2.0
    np.testing.assert_array_equal(t.numpy(), ref)
    with pytest.raises(lazyt.ShapeError, match="broadcast"):
        t[0, 1:3] = T(np.zeros(2, np.float32), device)      # numpy refuses this too


def check_usable(device):
    np.testing.assert_array_equal((lazyt.ones(2, device=device) + 1).numpy(), [2.0, 2.0])


# ------------------------------------------------------------------ gathering
X = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 4


@pytest.mark.parametrize("dim, idx", [(0, [2, 0]), (0, [1, 1, 1, 0]), (1, [3, 0, 3]), (-1, [1]),
                                      (1, []), (-2, [0, 2, 1])], ids=str)
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32], ids=["i64", "i32"])
def test_index_select(device, check, dim, idx, idx_dtype):
    i = np.array(idx, idx_dtype)
    expected = np.take(X, i.astype(np.int64), axis=dim)
    check(T(X, device).index_select(dim, T(i, device)), expected, device=device)
    check(lazyt.index_select(T(X, device), dim, T(i, device)), expected, device=device)


def test_index_select_3d_and_ints(device, check):
    a = np.arange(24).reshape(2, 3, 4)
    i = np.array([2, 0])
    check(T(a, device).index_select(1, T(i, device)), np.take(a, i, axis=1))
    check(T(a, device).index_select(2, T(np.array([3, 3]), device)), np.take(a, [3, 3], axis=2))


def _gather_ref(x, dim, index):
    out = np.empty(index.shape, x.dtype)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = x[tuple(src)]
    return out


@pytest.mark.parametrize("dim, index", [
    (0, [[0, 1, 2, 0], [2, 2, 1, 0]]), (1, [[3, 0], [1, 1], [0, 2]]), (1, [[3], [2]]),
    (0, [[1, 0]]), (-1, [[0, 0, 0, 3, 3], [1, 2, 3, 0, 1], [2, 2, 2, 2, 2]]),
    (1, np.zeros((3, 0), np.int64)),
], ids=["dim0", "dim1", "dim1-smaller-rows", "dim0-smaller", "dim-1-wider", "empty"])
def test_gather(device, check, dim, index):
    index = np.array(index, np.int64)
    expected = _gather_ref(X, dim % 2, index)
    check(T(X, device).gather(dim, T(index, device)), expected, device=device)
    check(lazyt.gather(T(X, device), dim, T(index, device)), expected, device=device)


def test_gather_3d(device, check, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for dim in range(3):
        shape = [2, 3, 4]
        shape[dim] = 5
        index = rng.integers(0, x.shape[dim], shape)
        check(T(x, device).gather(dim, T(index, device)), _gather_ref(x, dim, index))


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        dst = list(pos)
        dst[dim] = index[pos]
        out[tuple(dst)] += src[pos]
    return out


@pytest.mark.parametrize("dim, index, src_shape", [
    (0, [[0, 1, 2, 0], [0, 0, 1, 2]], (2, 4)), (1, [[3, 3], [0, 1], [2, 2]], (3, 2)),
    (1, [[0], [3]], (3, 4)), (0, [[2, 2, 2, 2]], (2, 4)), (-1, [[1, 1, 1, 1, 1]], (1, 5)),
], ids=["dim0", "dim1-repeats", "src-bigger", "dim0-all-same", "dim-1"])
def test_scatter_add(device, check, rng, dim, index, src_shape):
    index = np.array(index, np.int64)
    src = rng.standard_normal(src_shape).astype(np.float32)
    expected = _scatter_add_ref(X, dim % 2, index, src)
    t = T(X, device)
    out = t.scatter_add(dim, T(index, device), T(src, device))
    check(out, expected, device=device)
    check(lazyt.scatter_add(t, dim, T(index, device), T(src, device)), expected, device=device)
    np.testing.assert_array_equal(t.numpy(), X)  # a new tensor; the input is unchanged


def _index_add_ref(x, dim, index, src):
    out = np.moveaxis(x.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    for j, i in enumerate(index):
        out[i] += s[j]
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("dim, index", [(0, [2, 0]), (0, [1, 1, 1]), (1, [3, 0, 3]), (-1, [0]),
                                        (1, [])], ids=str)
def test_index_add(device, check, rng, dim, index):
    index = np.array(index, np.int64)
    src_shape = list(X.shape)
    src_shape[dim] = len(index)
    src = rng.standard_normal(src_shape).astype(np.float32)
    expected = _index_add_ref(X, dim % 2, index, src)
    t = T(X, device)
    check(t.index_add(dim, T(index, device), T(src, device)), expected, device=device)
    check(lazyt.index_add(t, dim, T(index, device), T(src, device)), expected, device=device)
    np.testing.assert_array_equal(t.numpy(), X)


def test_embedding_lookup_and_backward_shape(device, check, rng):
    """What an embedding needs: index_select of rows and index_add of their gradients."""
    table = rng.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([3, 7, 3, 0, 9])
    emb = T(table, device).index_select(0, T(ids, device))
    check(emb, table[ids])
    grad = np.ones((5, 4), np.float32)
    acc = lazyt.zeros(10, 4, device=device).index_add(0, T(ids, device), T(grad, device))
    expected = np.zeros((10, 4), np.float32)
    np.add.at(expected, ids, grad)
    check(acc, expected)


@pytest.mark.parametrize("op", ["index_select", "gather", "index_add", "scatter_add"])
@pytest.mark.parametrize("bad", [4, -1], ids=["too-big", "negative"])
def test_gather_family_index_out_of_range(device, op, bad):
    t = T(X, device)  # (3, 4); dim 1 has size 4
    with pytest.raises(lazyt.IndexOutOfRangeError) as e:
        if op == "index_select":
            t.index_select(1, T(np.array([0, bad]), device)).numpy()
        elif op == "gather":
            t.gather(1, T(np.array([[0, bad]] * 3), device)).numpy()
        elif op == "index_add":
            t.index_add(1, T(np.array([0, bad]), device), lazyt.ones(3, 2, device=device)).numpy()
        else:
            t.scatter_add(1, T(np.array([[0, bad]] * 3), device),
                          lazyt.ones(3, 2, device=device)).numpy()
    assert op in str(e.value)
    assert isinstance(e.value, IndexError)
    check_usable(device)
