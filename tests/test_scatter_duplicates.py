"""Writes to a repeated target keep one value, the last write in the index's row-major order
(torch's CPU kernels), never a sum: scatter, index_copy, index_put, put and their in-place
forms, on every device, against numpy's fancy assignment (also last-write-wins) and torch;
gradients reach the winning values only. Accumulating forms still add."""
import numpy as np
import pytest

import lazyt
from lazyt.testing import gradcheck


@pytest.fixture(autouse=True, params=["host", "lazy"])
def winner_search(request, monkeypatch):
    """Index values already on the host are resolved there; pending ones by the lazy rounds:
    every test runs both ways."""
    if request.param == "lazy":
        monkeypatch.setattr(lazyt.selection, "_known_last_writes", lambda *a: None)
    return request.param


def _t(a, device, dtype=None):
    """A lazyt tensor of `a` (a list of floats is float32, as lazyt.tensor makes it)."""
    return lazyt.tensor(a, dtype=dtype, device=device)


def _ref_scatter(a, dim, idx, src):
    """numpy's fancy assignment walks the index in row-major order: the last write wins."""
    out = a.copy()
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    out[tuple(coords)] = src[tuple(slice(0, s) for s in idx.shape)]
    return out


def _ref_index_copy(a, dim, idx, src):
    out = np.moveaxis(a.copy(), dim, 0)
    out[np.asarray(idx)] = np.moveaxis(src, dim, 0)
    return np.moveaxis(out, 0, dim)


# ---------------------------------------------------------------------- the reported cases
def test_the_reported_cases(device):
    z = lazyt.zeros(3, device=device)
    src = _t([1.0, 2.0, 4.0], device)
    ids = _t([1, 1, 0], device)
    np.testing.assert_array_equal(lazyt.scatter(z, 0, _t([1, 1], device), 5.0).numpy(),
                                  [0, 5, 0])
    np.testing.assert_array_equal(lazyt.scatter(z, 0, _t([1, 1, 1], device), src).numpy(),
                                  [0, 4, 0])
    for got in (lazyt.index_copy(z, 0, ids, src), lazyt.index_put(z, (ids,), src),
                lazyt.put(z, ids, src)):
        np.testing.assert_array_equal(got.numpy(), [4, 2, 0])
    assert z.numpy().tolist() == [0, 0, 0]


def test_the_reported_cases_match_torch():
    torch = pytest.importorskip("torch")
    src, ids = [1.0, 2.0, 4.0], [1, 1, 0]
    z, tz = lazyt.zeros(3), torch.zeros(3)
    pairs = [
        (lazyt.scatter(z, 0, lazyt.tensor([1, 1]), 5.0), tz.scatter(0, torch.tensor([1, 1]), 5.0)),
        (lazyt.scatter(z, 0, lazyt.tensor([1, 1, 1]), lazyt.tensor(src)),
         tz.scatter(0, torch.tensor([1, 1, 1]), torch.tensor(src))),
        (lazyt.index_copy(z, 0, lazyt.tensor(ids), lazyt.tensor(src)),
         tz.index_copy(0, torch.tensor(ids), torch.tensor(src))),
        (lazyt.index_put(z, (lazyt.tensor(ids),), lazyt.tensor(src)),
         tz.index_put((torch.tensor(ids),), torch.tensor(src))),
        (lazyt.put(z, lazyt.tensor(ids), lazyt.tensor(src)),
         tz.put(torch.tensor(ids), torch.tensor(src))),
    ]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------- scatter
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_2d(device, dim):
    rng = np.random.default_rng(dim + 5)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    idx_shape = (4, 3) if dim == 0 else (3, 5)   # index smaller than x off `dim`
    n = a.shape[dim]
    idx = rng.integers(0, n, idx_shape)
    src = rng.standard_normal((5, 6)).astype(np.float32)   # src larger than the index
    got = lazyt.scatter(_t(a, device), dim, _t(idx, device), _t(src, device))
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, dim % 2, idx, src))


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_value_2d(device, dim):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 0, 2], [2, 0, 2]]) if dim == 1 else np.array([[1, 1, 0, 1], [1, 2, 0, 1]])
    got = lazyt.scatter(_t(a, device), dim, _t(idx, device), value=-3.0)
    src = np.full(idx.shape, -3.0, np.float32)
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, dim, idx, src))
    np.testing.assert_array_equal(
        lazyt.scatter(_t(a, device), dim, _t(idx, device), -3.0).numpy(), got.numpy())


@pytest.mark.parametrize("length", [2, 126, 127, 700, 5000])
def test_scatter_many_writes_to_few_targets(device, length):
    """Lengths around the search's rounds: 126 positions take one, 127 two, 5000 three."""
    rng = np.random.default_rng(length)
    n = 7
    idx = rng.integers(0, n, length)
    idx[-1] = 0                      # the last position wins target 0
    idx[: length // 2] = 3           # a long run into one target
    src = rng.standard_normal(length).astype(np.float32)
    a = np.full(n, 9.0, np.float32)
    got = lazyt.scatter(_t(a, device), 0, _t(idx, device), _t(src, device))
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, 0, idx, src))


@pytest.mark.parametrize("length", [300, 4000])
def test_scatter_all_to_one_target(device, length):
    src = np.arange(length, dtype=np.float32) + 1
    got = lazyt.scatter(lazyt.zeros(2, device=device), 0, lazyt.zeros(length, dtype=lazyt.int64,
                                                                       device=device),
                        _t(src, device))
    np.testing.assert_array_equal(got.numpy(), [length, 0])


def test_scatter_2d_many_rows(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 40)).astype(np.float32)
    idx = rng.integers(0, 6, (300, 40))
    src = rng.standard_normal((300, 40)).astype(np.float32)
    got = lazyt.scatter(_t(a, device), 0, _t(idx, device), _t(src, device))
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, 0, idx, src))


@pytest.mark.parametrize("dtype", ["float16", "int32", "int64", "bool"])
def test_scatter_dtypes(device, dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, (3, 4)).astype(dtype)
    src = rng.integers(0, 2 if dtype == "bool" else 50, (5, 4)).astype(dtype)
    idx = rng.integers(0, 3, (5, 4))
    got = lazyt.scatter(_t(a, device), 0, _t(idx, device), _t(src, device))
    assert got.dtype is getattr(lazyt, "bool_" if dtype == "bool" else dtype)
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, 0, idx, src))


def test_scatter_no_duplicates(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 5)).astype(np.float32)
    idx = np.argsort(rng.random((8, 5)), axis=0)      # each column a permutation
    src = rng.standard_normal((8, 5)).astype(np.float32)
    got = lazyt.scatter(_t(a, device), 0, _t(idx, device), _t(src, device))
    np.testing.assert_array_equal(got.numpy(), _ref_scatter(a, 0, idx, src))
    perm = rng.permutation(1000)
    v = rng.standard_normal(1000).astype(np.float32)
    got = lazyt.scatter(lazyt.zeros(1000, device=device), 0, _t(perm, device), _t(v, device))
    want = np.zeros(1000, np.float32)
    want[perm] = v
    np.testing.assert_array_equal(got.numpy(), want)


def test_scatter_special_values_of_losers_do_not_leak(device):
    """A losing write is dropped, not added as zero: its NaN or inf never reaches the target."""
    src = _t([np.nan, np.inf, 2.0, -np.inf, -0.0], device)
    got = lazyt.scatter(lazyt.ones(3, device=device), 0, _t([0, 0, 0, 1, 2], device), src)
    np.testing.assert_array_equal(got.numpy(), [2.0, -np.inf, 0.0])


def test_scatter_reduce_still_combines(device):
    z = lazyt.zeros(3, device=device)
    got = lazyt.scatter(z, 0, _t([1, 1, 0], device), _t([1.0, 2.0, 4.0], device), reduce="add")
    np.testing.assert_array_equal(got.numpy(), [4, 3, 0])


def test_scatter_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    for dim, idx_shape in ((0, (9, 6)), (1, (5, 12)), (1, (3, 4))):
        idx = rng.integers(0, a.shape[dim], idx_shape)
        src = rng.standard_normal((9, 12)).astype(np.float32)
        got = lazyt.tensor(a).scatter(dim, lazyt.tensor(idx), lazyt.tensor(src))
        want = torch.tensor(a).scatter(dim, torch.tensor(idx), torch.tensor(src))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        got = lazyt.tensor(a).scatter(dim, lazyt.tensor(idx), 2.5)
        want = torch.tensor(a).scatter(dim, torch.tensor(idx), 2.5)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------- index_copy
@pytest.mark.parametrize("dim", [0, 1])
def test_index_copy_duplicates(device, dim):
    rng = np.random.default_rng(dim)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    idx = [3, 1, 3, 3, 0, 1] if dim == 0 else [4, 4, 0, 2, 0, 4]
    shape = [4, 5]
    shape[dim] = len(idx)
    src = rng.standard_normal(shape).astype(np.float32)
    got = lazyt.index_copy(_t(a, device), dim, _t(idx, device), _t(src, device))
    np.testing.assert_array_equal(got.numpy(), _ref_index_copy(a, dim, idx, src))


def test_index_copy_0d_and_dtypes(device):
    x = _t(np.float32(1.0), device)
    got = x.index_copy(0, _t([0, 0], device), _t([2.0, 3.0], device))
    assert got.shape == () and got.item() == 3.0
    a = np.array([[1, 2], [3, 4]], np.int32)
    got = _t(a, device).index_copy(0, _t([1, 1, 1], device),
                                   _t([[5, 6], [7, 8], [9, 10]], device, lazyt.int32))
    np.testing.assert_array_equal(got.numpy(), [[1, 2], [9, 10]])
    m = _t([False, False, False], device)
    got = m.index_copy(0, _t([2, 2], device), _t([True, False], device))
    assert got.numpy().tolist() == [False, False, False]


def test_index_copy_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    idx = [5, 0, 5, 2, 0]
    s = rng.standard_normal((4, 5)).astype(np.float32)
    got = lazyt.tensor(a).index_copy(1, lazyt.tensor(idx), lazyt.tensor(s))
    want = torch.tensor(a).index_copy(1, torch.tensor(idx), torch.tensor(s))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------- index_put, put
def test_index_put_duplicates(device):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3, 2)).astype(np.float32)
    rows, cols = np.array([[1, 3], [1, 1]]), np.array([2, 2])          # broadcast together
    v = rng.standard_normal((2, 2, 2)).astype(np.float32)
    want = a.copy()
    want[rows, cols] = v
    got = lazyt.index_put(_t(a, device), (_t(rows, device), _t(cols, device)), _t(v, device))
    np.testing.assert_array_equal(got.numpy(), want)
    # a value broadcast over the indexed shape, negative ids
    want = a.copy()
    want[[0, -4, 2]] = np.array([7.0, 8.0], np.float32)
    got = lazyt.index_put(_t(a, device), (_t([0, -4, 2], device),),
                          _t([7.0, 8.0], device))
    np.testing.assert_array_equal(got.numpy(), want)


def test_index_put_accumulate_still_adds(device):
    z = lazyt.zeros(3, device=device)
    got = lazyt.index_put(z, (_t([1, 1, 0], device),), _t([1.0, 2.0, 4.0], device), True)
    np.testing.assert_array_equal(got.numpy(), [4, 3, 0])
    got = lazyt.put(z, _t([1, -2, 0], device), _t([1.0, 2.0, 4.0], device), accumulate=True)
    np.testing.assert_array_equal(got.numpy(), [4, 3, 0])


def test_index_put_bool_mask_and_scalar(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = lazyt.index_put(_t(a, device), (_t([True, False], device),), 0.5)
    np.testing.assert_array_equal(got.numpy(), [[0.5, 0.5, 0.5], [3, 4, 5]])


def test_put_duplicates_and_negative_ids(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([[4, -2], [0, 4]])               # -2 is 4 too: the last (value 13) wins
    v = np.array([[10, 11], [12, 13]], np.float32)
    want = a.copy().reshape(-1)
    want[ids.reshape(-1) % 6] = v.reshape(-1)
    got = lazyt.put(_t(a, device), _t(ids, device), _t(v, device))
    np.testing.assert_array_equal(got.numpy(), want.reshape(2, 3))


def test_index_put_and_put_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    ids = rng.integers(-5, 5, 12)
    v = rng.standard_normal((12, 3)).astype(np.float32)
    got = lazyt.tensor(a).index_put((lazyt.tensor(ids),), lazyt.tensor(v))
    want = torch.tensor(a).index_put((torch.tensor(ids),), torch.tensor(v))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ids = rng.integers(-15, 15, 40)
    v = rng.standard_normal(40).astype(np.float32)
    got = lazyt.tensor(a).put(lazyt.tensor(ids), lazyt.tensor(v))
    want = torch.tensor(a).put(torch.tensor(ids), torch.tensor(v))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------- in place
def test_in_place_forms(device):
    src, ids = _t([1.0, 2.0, 4.0], device), _t([1, 1, 0], device)
    cases = {
        "scatter_": lambda z: z.scatter_(0, _t([1, 1, 1], device), src),
        "scatter_ value": lambda z: z.scatter_(0, _t([1, 1], device), 5.0),
        "index_copy_": lambda z: z.index_copy_(0, ids, src),
        "index_put_": lambda z: z.index_put_((ids,), src),
        "put_": lambda z: z.put_(ids, src),
    }
    want = {"scatter_": [0, 4, 0], "scatter_ value": [0, 5, 0]}
    for name, fn in cases.items():
        z = lazyt.zeros(3, device=device)
        assert fn(z) is z, name
        np.testing.assert_array_equal(z.numpy(), want.get(name, [4, 2, 0]), err_msg=name)


# ---------------------------------------------------------------------- gradients
def _f64(shape, seed):
    return lazyt.tensor(np.random.default_rng(seed).standard_normal(shape)).require_grad()


def test_gradients_reach_the_winning_values_only():
    x, s = _f64(3, 0), _f64(4, 1)
    out = lazyt.scatter(x, 0, lazyt.tensor([1, 1, 2, 1]), s)
    out.backward(lazyt.tensor([1.0, 2.0, 3.0], dtype=lazyt.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0])
    np.testing.assert_array_equal(s.grad.numpy(), [0, 0, 3, 2])


@pytest.mark.parametrize("op", ["scatter", "scatter_value", "index_copy", "index_put", "put"])
def test_gradcheck_with_duplicates(op):
    x = _f64((4, 3), 2)
    fns = {
        "scatter": (lambda a, b: a.scatter(0, lazyt.tensor([[1, 3, 1], [1, 0, 1], [2, 3, 1]]), b),
                    (3, 4)),
        "scatter_value": (lambda a, b: a.scatter(1, lazyt.tensor([[2, 2], [0, 1]]), 0.5) * b,
                          (4, 3)),
        "index_copy": (lambda a, b: a.index_copy(0, lazyt.tensor([3, 1, 3]), b), (3, 3)),
        "index_put": (lambda a, b: a.index_put((lazyt.tensor([2, 0, -2]),), b), (3, 3)),
        "put": (lambda a, b: a.put(lazyt.tensor([5, 0, 5, -7]), b), (4,)),
    }
    fn, shape = fns[op]
    assert gradcheck(lambda a, b: fn(a, b) * 1.5, [x, _f64(shape, 3)])


def test_ids_on_the_host_skip_the_lazy_rounds(winner_search, monkeypatch):
    """ids made from data are resolved on the host (one pass); ids from pending ops, and any
    ids inside lazyt.compile, take the lazy rounds."""
    if winner_search == "lazy":
        pytest.skip("this test patches the searches itself")
    rounds = []
    real = lazyt.selection._digit_plan
    monkeypatch.setattr(lazyt.selection, "_digit_plan",
                        lambda *a: rounds.append(a) or real(*a))
    z, src = lazyt.zeros(3), lazyt.tensor([1.0, 2.0, 4.0])
    ids = lazyt.tensor([1, 1, 0])
    assert lazyt.scatter(z, 0, ids, src).numpy().tolist() == [4, 2, 0]
    assert not rounds
    assert lazyt.scatter(z, 0, ids + 0, src).numpy().tolist() == [4, 2, 0]   # pending ids
    assert rounds
    rounds.clear()
    f = lazyt.compile(lambda i, s: lazyt.scatter(lazyt.zeros(3), 0, i, s))
    for ids_np in ([1, 1, 0], [2, 0, 2]):
        got = f(lazyt.tensor(ids_np), src).numpy()
        want = np.zeros(3, np.float32)
        want[np.array(ids_np)] = [1.0, 2.0, 4.0]
        np.testing.assert_array_equal(got, want)
    assert rounds
