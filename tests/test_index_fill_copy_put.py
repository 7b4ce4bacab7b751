"""index_fill, index_copy, index_reduce, put (and their in-place forms), new_empty and the
layout queries (stride, is_contiguous, storage_offset), checked against numpy references on
every device, against torch where it is installed, and by gradcheck."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from lazyt.testing import gradcheck


def _x(device, shape=(3, 4)):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return a, lazyt.tensor(a, device=device)


def _ref_index_fill(a, dim, idx, value):
    out = a.copy()
    sl = [slice(None)] * a.ndim
    sl[dim] = np.asarray(idx, dtype=np.int64) % a.shape[dim]
    out[tuple(sl)] = value
    return out


@pytest.mark.parametrize("dim,idx", [(0, [1]), (1, [0, -1]), (-1, [2, 2]), (1, 3), (0, [])])
def test_index_fill(device, dim, idx):
    a, x = _x(device)
    got = x.index_fill(dim, lazyt.tensor(idx, dtype=lazyt.int64, device=device), -5.0)
    np.testing.assert_array_equal(got.numpy(), _ref_index_fill(a, dim, np.atleast_1d(idx), -5))
    assert lazyt.index_fill(x, dim, lazyt.tensor(idx, dtype=lazyt.int64, device=device),
                            -5.0).shape == x.shape


def test_index_fill_in_place_and_int_dtype(device):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = lazyt.tensor(a, device=device)
    out = x.index_fill_(1, lazyt.tensor([1], device=device), 9)
    assert out is x and x.dtype is lazyt.int32
    np.testing.assert_array_equal(x.numpy(), [[0, 9, 2], [3, 9, 5]])


def test_index_fill_with_a_0d_tensor_value_gets_its_gradient(device):
    a, x = _x(device, (2, 3))
    x.require_grad()
    v = lazyt.tensor(2.0, device=device).require_grad()
    x.index_fill(1, lazyt.tensor([0, 2], device=device), v).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [0, 1, 0]])
    assert v.grad.item() == 4.0


def _ref_index_copy(a, dim, idx, src):
    out = a.copy()
    sl = [slice(None)] * a.ndim
    for i, j in enumerate(idx):
        sl[dim] = j
        ssl = [slice(None)] * a.ndim
        ssl[dim] = i
        out[tuple(sl)] = src[tuple(ssl)]
    return out


@pytest.mark.parametrize("dim,idx", [(0, [2, 0]), (1, [3, 1, 0]), (-1, [1])])
def test_index_copy(device, dim, idx):
    a, x = _x(device)
    shape = list(a.shape)
    shape[dim] = len(idx)
    src = (np.arange(np.prod(shape), dtype=np.float32) + 100).reshape(shape)
    got = x.index_copy(dim, lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device))
    np.testing.assert_array_equal(got.numpy(), _ref_index_copy(a, dim, idx, src))
    x.index_copy_(dim, lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device))
    np.testing.assert_array_equal(x.numpy(), _ref_index_copy(a, dim, idx, src))


def test_index_copy_gradients(device):
    if device.type != "cpu":
        pytest.skip("gradcheck's numeric side runs in float64 on cpu")
    x = lazyt.tensor(np.random.default_rng(0).standard_normal((4, 3))).require_grad()
    s = lazyt.tensor(np.random.default_rng(1).standard_normal((2, 3))).require_grad()
    assert gradcheck(lambda a, b: a.index_copy(0, lazyt.tensor([3, 1]), b) * 1.5, [x, s])
    assert gradcheck(lambda a: a.index_fill(1, lazyt.tensor([0, -1]), 0.5) * a, [x])


def test_index_copy_and_reduce_check_the_source_shape(device):
    _, x = _x(device)
    with pytest.raises(ShapeError, match=r"index_copy: source must have shape \(2, 4\)"):
        x.index_copy(0, lazyt.tensor([0, 1], device=device), lazyt.ones(3, 4, device=device))
    with pytest.raises(ShapeError, match="index_reduce"):
        x.index_reduce(0, lazyt.tensor([0], device=device), lazyt.ones(1, 3, device=device),
                       "amax")
    with pytest.raises(ShapeError, match="0-d or 1-D"):
        x.index_copy(0, lazyt.tensor([[0]], device=device), lazyt.ones(1, 4, device=device))


def test_index_copy_wants_the_inputs_dtype(device):
    _, x = _x(device)
    with pytest.raises(DTypeError, match="index_copy"):
        x.index_copy(0, lazyt.tensor([0], device=device),
                     lazyt.ones(1, 4, dtype=lazyt.int32, device=device))


def _raises_bad_id(device, match, fn):
    """On the host the ids are checked at the call; on a GPU the kernel checks them, and the
    error comes at the first read of the result."""
    with pytest.raises(IndexOutOfRangeError, match=match if device.type == "cpu" else None):
        out = fn()
        out.numpy()


def test_bad_ids_raise_and_the_tensor_stays_usable(device):
    _, x = _x(device)
    one = lazyt.ones(1, device=device)
    _raises_bad_id(device, "index_fill: index 4",
                   lambda: x.index_fill(1, lazyt.tensor([4], device=device), 1.0))
    _raises_bad_id(device, "index_fill: index -5",
                   lambda: x.index_fill(1, lazyt.tensor([-5], device=device), 1.0))
    _raises_bad_id(device, "index_copy: index -1",    # as torch: no negative ids
                   lambda: x.index_copy(1, lazyt.tensor([-1], device=device),
                                        lazyt.ones(3, 1, device=device)))
    _raises_bad_id(device, "put: index 12", lambda: x.put(lazyt.tensor([12], device=device), one))
    _raises_bad_id(device, "put: index -13",
                   lambda: x.put(lazyt.tensor([-13], device=device), one))
    with pytest.raises(DTypeError, match="index_fill: index must be an integer"):
        x.index_fill(0, lazyt.tensor([0.0], device=device), 1.0)
    assert x.sum().item() == 66


def _ref_index_reduce(a, dim, idx, src, reduce, include_self):
    a = np.moveaxis(a, dim, 0).astype(np.float64)
    src = np.moveaxis(src, dim, 0).astype(np.float64)
    out = a.copy()
    for r in set(idx):
        rows = [src[i] for i, j in enumerate(idx) if j == r]
        if include_self:
            rows.append(a[r])
        st = np.stack(rows)
        out[r] = {"prod": st.prod(0), "mean": st.mean(0), "amax": st.max(0),
                  "amin": st.min(0)}[reduce]
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(device, reduce, include_self, dim):
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
    idx = [0, 0, 3] if dim == 0 else [4, 1, 1, 4]
    shape = list(a.shape)
    shape[dim] = len(idx)
    src = rng.uniform(-2, 2, shape).astype(np.float32)
    x = lazyt.tensor(a, device=device)
    got = x.index_reduce(dim, lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device),
                         reduce, include_self=include_self)
    want = _ref_index_reduce(a, dim, idx, src, reduce, include_self)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    x.index_reduce_(dim, lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device),
                    reduce, include_self=include_self)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-5, atol=1e-6)


def test_index_reduce_names_its_modes(device):
    _, x = _x(device)
    with pytest.raises(InvalidArgumentError, match="index_reduce: reduce must be one of"):
        x.index_reduce(0, lazyt.tensor([0], device=device), lazyt.ones(1, 4, device=device),
                       "sum")


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(device, accumulate):
    a, x = _x(device)
    # (a target written twice without accumulate gets an unspecified value: not tested)
    idx = np.array([[0, -1], [5, 5]]) if accumulate else np.array([[0, -1], [5, 6]])
    src = np.array([[10, 20], [30, 40]], np.float32)
    got = x.put(lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device),
                accumulate=accumulate)
    want = a.reshape(-1).copy()
    if accumulate:
        np.add.at(want, idx.reshape(-1) % 12, src.reshape(-1))
    else:
        want[idx.reshape(-1) % 12] = src.reshape(-1)
    np.testing.assert_array_equal(got.numpy().reshape(-1), want)
    x.put_(lazyt.tensor(idx, device=device), lazyt.tensor(src, device=device), accumulate)
    np.testing.assert_array_equal(x.numpy(), got.numpy())


def test_put_wants_as_many_ids_as_values(device):
    _, x = _x(device)
    with pytest.raises(ShapeError, match="put: index"):
        x.put(lazyt.tensor([0, 1], device=device), lazyt.ones(3, device=device))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
    s = np.random.default_rng(6).standard_normal((3, 2)).astype(np.float32)
    L, T = lazyt.tensor(a), torch.tensor(a)
    pairs = [
        (L.index_fill(1, lazyt.tensor([-1, 2]), 0.25), T.index_fill(1, torch.tensor([-1, 2]), 0.25)),
        (L.index_copy(1, lazyt.tensor([4, 0]), lazyt.tensor(s)),
         T.index_copy(1, torch.tensor([4, 0]), torch.tensor(s))),
        (L.put(lazyt.tensor([-2, 7]), lazyt.tensor([1.0, 2.0]), True),
         T.put(torch.tensor([-2, 7]), torch.tensor([1.0, 2.0]), True)),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for shape in [(2, 3, 4), (5,), (0, 3), (3, 0, 2)]:
        assert lazyt.zeros(shape).stride() == torch.zeros(shape).stride()


@pytest.mark.parametrize("shape,want", [((2, 3, 4), (12, 4, 1)), ((5,), (1,)), ((), ()),
                                        ((0, 3), (3, 1)), ((3, 0, 2), (2, 2, 1))])
def test_stride_is_the_row_major_layout(device, shape, want):
    x = lazyt.zeros(shape, device=device)
    assert x.stride() == want
    for d in range(len(shape)):
        assert x.stride(d) == want[d] == x.stride(d - len(shape))
    assert x.is_contiguous() and x.storage_offset() == 0
    assert x.t().is_contiguous() if len(shape) == 2 else True


def test_stride_checks_its_dim(device):
    with pytest.raises(IndexOutOfRangeError, match="stride"):
        lazyt.zeros((), device=device).stride(0)
    with pytest.raises(IndexOutOfRangeError, match="stride"):
        lazyt.zeros(2, 3, device=device).stride(2)
    with pytest.raises(InvalidArgumentError, match="is_contiguous"):
        lazyt.zeros(2, device=device).is_contiguous(memory_format="channels_last")


def test_new_empty(device):
    x = lazyt.ones(2, dtype=lazyt.float16, device=device)
    e = x.new_empty(3, 4)
    assert e.shape == (3, 4) and e.dtype is lazyt.float16 and e.device is x.device
    assert x.new_empty((2,), dtype=lazyt.int32).dtype is lazyt.int32
    assert x.new_empty(2, requires_grad=True).requires_grad
