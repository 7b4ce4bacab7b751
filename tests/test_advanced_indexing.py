"""`x[key]` with several advanced indices (integer lists/tensors, boolean masks inside a tuple),
broadcast together, against numpy and torch: values, result layout, gradients, errors (the
runtime stays usable) and `lazyt.compile` replays."""
import numpy as np
import pytest

import lazyt
from lazyt.testing import gradcheck

A = np.arange(3 * 4 * 5 * 6, dtype=np.float32).reshape(3, 4, 5, 6)
M1 = np.array([True, False, True, True])                      # over dim 1 of A (3 picks)
M2 = np.array([[True, False, False, True, False]] * 3 + [[False] * 5])   # over dims 1, 2
I = np.array


def _id(key):
    return repr(key).replace(" ", "").replace("\n", "").replace("array", "")


# keys whose result numpy and torch agree on (no int or 0-d index splits the advanced ones)
SHARED_KEYS = [
    ([0, 2], [1, 3]),
    ([0, -1], [-4, 3]),
    ([2, 0, 1], [3, 3, 0], [4, 0, -5]),
    ([0, 1], [1, 2], [2, 3], [3, 4]),
    (slice(None), [0, 2], [1, 4]),
    (slice(1, None), [[0], [3]], [1, 4, 4]),
    ([0, 2], slice(None), [1, 4]),                # separated by a slice: index dims go first
    ([[0, 1]], slice(1, 3), [[4], [0]], slice(None, None, 2)),
    (slice(None), [1, 0], slice(None), [5, -6]),
    (I([[0], [2]]), I([1, 3, 0])),                # broadcast (2, 1) with (3,)
    (Ellipsis, [1, 0], [4, 2]),
    ([2, 1], Ellipsis, [3, 3]),                   # Ellipsis spans two dims: separated
    (None, [0, 1], [2, 3]),
    ([0, 1], None, [2, 3]),                       # None separates them too
    ([1, 2], [0, 3], slice(None, None, -2)),
    ([0, 1], 2, [3, 4]),                          # an int between adjacent index tensors
    (2, [0, 1], [3, 4]),
    ([1], [2, 3], 1),
    (I(1), [0, 2]),                               # 0-d index with a list
    (I(2), I(3), [1, 0], slice(None)),
    ([2, 2, 1], [0, 1, 2], [[4], [0]]),
    (slice(None), M1),                            # masks inside a tuple
    (slice(None), M1, [1, 0, 4]),
    (slice(None), M1, 0),
    (0, M1),
    (slice(None), M2),
    (1, M2, slice(1, 4)),
    (I([0, 2, 1]), M1),
    (slice(None), M1, slice(None), [1, 2, 3]),
    (I(np.zeros(0, np.int64)), [1]),              # empty index
    ([[0, 1], [2, 0]], Ellipsis, [[1, 1], [5, 0]]),
]


def _as_tensor(k, device, lazy):
    """Integer lists and arrays of `k` as lazyt tensors; `lazy` computes them by pending ops."""
    if isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype != np.bool_:
        t = lazyt.tensor(np.asarray(k, np.int64), device=device)
        return (t * 3 - 2 * t) if lazy else t
    if isinstance(k, np.ndarray):
        return lazyt.tensor(k, device=device)
    return k


@pytest.mark.parametrize("key", SHARED_KEYS, ids=_id)
@pytest.mark.parametrize("form", ["host", "tensor", "pending"])
def test_matches_numpy(device, check, key, form):
    x = lazyt.tensor(A, device=device)
    k = key if form == "host" else tuple(_as_tensor(e, device, form == "pending") for e in key)
    check(x[k], A[key], device=device)


@pytest.mark.parametrize("key", SHARED_KEYS, ids=_id)
def test_matches_torch(key):
    torch = pytest.importorskip("torch")
    if any(isinstance(e, slice) and (e.step or 1) < 0 for e in key):
        pytest.skip("torch has no negative slice steps")
    tk = tuple(torch.tensor(e) if isinstance(e, (list, np.ndarray)) else e for e in key)
    want = torch.tensor(A)[tk].numpy()
    np.testing.assert_array_equal(lazyt.tensor(A)[key].numpy(), want)


# keys where torch applies ints (and 0-d index tensors) first, so numpy's layout differs:
# lazyt follows torch
TORCH_KEYS = [
    (1, slice(None), [0, 2]),
    (slice(None), 0, slice(None), [1, 2]),
    (None, [1, 2], None, 0),
    (slice(None), [1], Ellipsis, [2]),            # Ellipsis of no dims does not separate
    (slice(None), I(1), slice(None), [1, 2]),
    (slice(None), M1, slice(None), 0),
    (0, slice(None), [1, 2], slice(None)),
    (slice(None), [[1, 0]], 2, [[3], [4]]),
    ([0, 2], 1, slice(None), [2, 3]),
]


@pytest.mark.parametrize("key", TORCH_KEYS, ids=_id)
def test_int_and_index_tensor_follow_torch(device, check, key):
    torch = pytest.importorskip("torch")
    tk = tuple(torch.tensor(e) if isinstance(e, (list, np.ndarray)) else e for e in key)
    want = torch.tensor(A)[tk].numpy()
    x = lazyt.tensor(A, device=device)
    check(x[key], want, device=device)
    check(x[tuple(_as_tensor(e, device, True) for e in key)], want, device=device)


def test_common_torch_idioms(device, check, rng):
    logp = rng.standard_normal((6, 5)).astype(np.float32)
    labels = np.array([4, 0, 2, 2, 1, 3])
    t = lazyt.tensor(logp, device=device)
    lab = lazyt.tensor(labels, device=device)
    check(t[lazyt.arange(6, device=device), lab], logp[np.arange(6), labels])
    rows, cols = np.array([0, 5, 2]), np.array([1, 4])
    r = lazyt.tensor(rows, device=device)
    check(t[r[:, None], lazyt.tensor(cols, device=device)], logp[rows[:, None], cols])
    check(t[[0, 1], [1, 2]], logp[[0, 1], [1, 2]])
    mask = logp[:, 0] > 0
    check(t[lazyt.tensor(mask, device=device), 0], logp[mask, 0])
    check(t[:, [True, False, True, True, False]], logp[:, [True, False, True, True, False]])
    check(t[(0, 2), (1, 1)], logp[[0, 2], [1, 1]])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_keeps_dtype_and_takes_int32_indices(device, check, dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    x = lazyt.tensor(a, device=device)
    i = np.array([1, 0, 1], np.int32)
    check(x[lazyt.tensor(i, device=device), :, [3, 0, -1]], a[i, :, [3, 0, -1]])


def test_single_index_path_unchanged(device, check):
    x = lazyt.tensor(A, device=device)
    check(x[:, [3, -1, 0]], A[:, [3, -1, 0]])
    check(x[1, :, lazyt.tensor(np.array([[0], [4]]), device=device)], A[1][:, [[0], [4]]])
    check(x[[]], A[np.zeros(0, np.int64)])


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("fn", [
    lambda x: x[[0, 2, 0], :, [1, -1, 1]],
    lambda x: x[lazyt.tensor(np.array([[0], [2]])), lazyt.tensor(np.array([1, 3, 1]))],
    lambda x: x[:, np.array([[True, False, True, False, True]] * 4)],
    lambda x: x[1, [3, 0], None, [4, 4]],
    lambda x: x[..., [0, 0, 2], [1, 1, 3]],
], ids=["separated", "broadcast", "mask2d", "int_none", "ellipsis_repeats"])
def test_gradients(device, fn):
    rng = np.random.default_rng(0)
    x = lazyt.tensor(rng.standard_normal((3, 4, 5)), device=device).require_grad()
    assert gradcheck(fn, [x])


# ---------------------------------------------------------------------------- errors
def _usable(device):
    x = lazyt.tensor(A, device=device)
    np.testing.assert_array_equal(x[[0, 1], [2, 3]].numpy(), A[[0, 1], [2, 3]])
    assert (x + 1).sum().item() == float((A + 1).sum())


@pytest.mark.parametrize("form", ["host", "tensor", "pending"])
def test_broadcast_mismatch_raises(device, form):
    x = lazyt.tensor(A, device=device)
    key = tuple(_as_tensor(e, device, form == "pending") if form != "host" else e
                for e in ([0, 1], slice(None), [1, 2, 3]))
    with pytest.raises(lazyt.IndexOutOfRangeError, match=r"getitem.*\(2,\), \(3,\)"):
        x[key]
    with pytest.raises(IndexError, match=r"getitem.*\(2,\), \(3,\)"):
        x[[0, 1], M1]
    _usable(device)


@pytest.mark.parametrize("key", [
    ([0, 1], [1, 4]), ([0, 1], [1, -5]), ([3, 0], [1, 1]), (slice(None), [0, 1], [0, 5]),
    ([[0]], slice(None), [0, 6]),
], ids=_id)
@pytest.mark.parametrize("form", ["host", "tensor", "pending"])
def test_out_of_range_raises(device, key, form):
    x = lazyt.tensor(A, device=device)
    k = key if form == "host" else tuple(_as_tensor(e, device, form == "pending") for e in key)
    # known values raise at the call, naming getitem; pending ones when the result is read
    with pytest.raises(lazyt.IndexOutOfRangeError, match="out of (bounds|range)"):
        x[k].numpy()
    if form == "host":
        with pytest.raises(IndexError, match="getitem: index .* out of bounds"):
            x[k]
    _usable(device)


def test_bad_keys_raise(device):
    x = lazyt.tensor(A, device=device)
    cases = [
        (lambda: x[[0, 1], [1.0, 2.0]], lazyt.DTypeError, "integer tensor"),
        (lambda: x[[0, 1], np.array([1, 2], np.uint8)], lazyt.DTypeError, "uint8"),
        (lambda: x[:, M1[:3]], lazyt.IndexOutOfRangeError, r"mask of shape \(3,\)"),
        (lambda: x[M2, M2, 0], lazyt.IndexOutOfRangeError, "too many indices"),
        (lambda: x[0, lazyt.tensor(True, device=device)], lazyt.DTypeError, "0-d boolean"),
        (lambda: x[[0], 1.5], lazyt.DTypeError, "unsupported index"),
    ]
    for call, error, fragment in cases:
        with pytest.raises(error, match=fragment):
            call()
    _usable(device)


# ---------------------------------------------------------------------------- compile
def test_compiled_replays_follow_new_indices(device, check):
    if not device.fusion:
        pytest.skip("fusion=False: a compiled function is a plain call there")
    f = lazyt.compile(lambda x, i, j: x[i[:, None], :, j] * 2.0)
    x = lazyt.tensor(A, device=device)
    for s in range(4):
        i, j = np.array([s % 3, 2]), np.array([1, -s - 1, 3])
        got = f(x, lazyt.tensor(i, device=device), lazyt.tensor(j, device=device))
        check(got, A[i[:, None], :, j] * 2.0)
