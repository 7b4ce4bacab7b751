"""torch's masked and scattered reads and writes as composites (`lazyt/selection.py`):
values against numpy on every device, float64 gradients on cpu, the eager ops' shapes,
errors, and torch where installed."""
import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

X = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) * 0.5
MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])


def _t(a, device):
    return lazyt.tensor(np.asarray(a), device=device)


def _f64(shape, seed=0):
    rng = np.random.default_rng(seed)
    return lazyt.tensor(rng.normal(size=shape), dtype=lazyt.float64).require_grad()


# ---------------------------------------------------------------------- numpy references
def np_scatter(x, dim, idx, src):
    out = x.copy()
    for pos in np.ndindex(idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        out[tuple(tgt)] = src[pos]
    return out


def np_scatter_reduce(x, dim, idx, src, reduce, include_self):
    groups = {}
    for pos in np.ndindex(idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        groups.setdefault(tuple(tgt), []).append(src[pos])
    out = x.copy()
    for tgt, vals in groups.items():
        vals = ([x[tgt]] if include_self else []) + vals
        if reduce == "sum":
            out[tgt] = np.sum(vals)
        elif reduce == "prod":
            out[tgt] = np.prod(vals)
        elif reduce == "amax":
            out[tgt] = np.max(vals)
        elif reduce == "amin":
            out[tgt] = np.min(vals)
        elif x.dtype.kind == "f":
            out[tgt] = np.sum(vals) / len(vals)
        else:
            out[tgt] = np.sum(vals) // len(vals)
    return out


# ---------------------------------------------------------------------- masked_fill
def test_masked_fill_every_device(device, check):
    x, m = _t(X, device), _t(MASK, device)
    check(lazyt.masked_fill(x, m, -2.5), np.where(MASK, np.float32(-2.5), X))
    check(x.masked_fill(_t(MASK[0], device), 7), np.where(MASK[0], np.float32(7), X))
    i = np.arange(12).reshape(3, 4)
    check(_t(i, device).masked_fill(_t(MASK, device), 2.9), np.where(MASK, 2, i))  # truncates
    b = np.zeros((3, 4), bool)
    check(_t(b, device).masked_fill(_t(MASK, device), True), MASK)
    v = lazyt.tensor(3.0, device=device)
    check(x.masked_fill(m, v), np.where(MASK, np.float32(3.0), X))
    # out of place, the mask and the input broadcast together (torch's expand_outplace)
    check(_t(X[0], device).masked_fill(m, 0.0), np.where(MASK, np.float32(0), X[0]))


def test_masked_fill_in_place(device, check):
    x = _t(X, device)
    y = x
    assert x.masked_fill_(_t(MASK, device), 1.0) is x
    check(y, np.where(MASK, np.float32(1.0), X))
    with pytest.raises(lazyt.ShapeError, match="masked_fill_"):
        _t(X[0], device).masked_fill_(_t(MASK, device), 0.0)


def test_masked_fill_gradients():
    m = lazyt.tensor(MASK)
    assert gradcheck(lambda t: t.masked_fill(m, 0.5), [_f64((3, 4))])
    v = lazyt.tensor(1.5, dtype=lazyt.float64).require_grad()
    assert gradcheck(lambda t, s: lazyt.masked_fill(t, m, s), [_f64((3, 4)), v])


def test_masked_fill_errors():
    x = lazyt.ones(3, 4)
    with pytest.raises(lazyt.DTypeError, match="masked_fill: expected a bool mask"):
        x.masked_fill(lazyt.ones(3, 4, dtype=lazyt.int32), 0.0)
    with pytest.raises(lazyt.ShapeError, match="masked_fill: a tensor value must be 0-d"):
        x.masked_fill(lazyt.tensor(MASK), lazyt.ones(1))
    with pytest.raises(lazyt.ShapeError, match="masked_fill"):
        x.masked_fill(lazyt.tensor([True, False]), 0.0)
    with pytest.raises(lazyt.DTypeError, match="masked_fill: expected a number"):
        x.masked_fill(lazyt.tensor(MASK), "a")


# ---------------------------------------------------------------------- masked_select
def test_masked_select_every_device(device, check):
    check(lazyt.masked_select(_t(X, device), _t(MASK, device)), X[MASK])
    check(_t(X, device).masked_select(_t(MASK[1], device)),
          X[np.broadcast_to(MASK[1], (3, 4))])
    check(_t(X[0], device).masked_select(_t(MASK, device)), np.broadcast_to(X[0], (3, 4))[MASK])
    check(_t(X, device).masked_select(_t(np.zeros((3, 4), bool), device)),
          np.zeros(0, np.float32))


def test_masked_select_gradients():
    m = lazyt.tensor(MASK)
    assert gradcheck(lambda t: t.masked_select(m), [_f64((3, 4))])
    assert gradcheck(lambda t: t.masked_select(m), [_f64((4,))])      # broadcast input


def test_masked_select_errors():
    with pytest.raises(lazyt.DTypeError, match="masked_select: expected a bool mask"):
        lazyt.ones(2).masked_select(lazyt.ones(2))
    with pytest.raises(lazyt.ShapeError):
        lazyt.ones(2).masked_select(lazyt.tensor([True, False, True]))


# ---------------------------------------------------------------------- nonzero, argwhere
def test_nonzero_every_device(device, check):
    a = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    check(lazyt.nonzero(_t(a, device)), np.argwhere(a))
    check(_t(a, device).argwhere(), np.argwhere(a))
    check(lazyt.argwhere(_t(MASK, device)), np.argwhere(MASK))
    rows, cols = _t(a, device).nonzero(as_tuple=True)
    check(rows, np.nonzero(a)[0])
    check(cols, np.nonzero(a)[1])
    check(lazyt.nonzero(_t(np.zeros(3, np.float32), device)), np.zeros((0, 1), np.int64))
    check(lazyt.nonzero(lazyt.tensor(5, device=device)), np.zeros((1, 0), np.int64))
    (only,) = lazyt.nonzero(lazyt.tensor(5, device=device), as_tuple=True)
    check(only, np.array([0]))
    assert lazyt.nonzero(_t(a, device)).device == device


# ---------------------------------------------------------------------- one_hot
def test_one_hot_every_device(device, check):
    i = np.array([[0, 3], [1, 1]])
    check(F.one_hot(_t(i, device)), np.eye(4, dtype=np.int64)[i])
    check(F.one_hot(_t(i, device), num_classes=6), np.eye(6, dtype=np.int64)[i])
    check(F.one_hot(_t(i.astype(np.int32), device), 5), np.eye(5, dtype=np.int64)[i])
    check(F.one_hot(lazyt.tensor(2, device=device), 3), np.array([0, 0, 1]))


def test_one_hot_errors():
    with pytest.raises(lazyt.DTypeError, match="one_hot: expected an integer tensor"):
        F.one_hot(lazyt.tensor([0.0, 1.0]))
    with pytest.raises(lazyt.InvalidArgumentError, match="one_hot: cannot infer"):
        F.one_hot(lazyt.zeros(0, dtype=lazyt.int64))
    with pytest.raises(lazyt.IndexOutOfRangeError, match="non-negative"):
        F.one_hot(lazyt.tensor([1, -1]))
    with pytest.raises(lazyt.InvalidArgumentError, match="num_classes"):
        F.one_hot(lazyt.tensor([1]), -3)


# ---------------------------------------------------------------------- scatter
IDX0 = np.array([[2, 0, 1, 2], [0, 2, 0, 1]])          # dim 0, no position written twice
IDX1 = np.array([[3, 0], [1, 2], [0, 3]])               # dim 1


def test_scatter_every_device(device, check):
    src = np.arange(8, dtype=np.float32).reshape(2, 4) + 10
    check(lazyt.scatter(_t(X, device), 0, _t(IDX0, device), _t(src, device)),
          np_scatter(X, 0, IDX0, src))
    src1 = np.arange(9, dtype=np.float32).reshape(3, 3) - 20     # larger than the index
    check(_t(X, device).scatter(1, _t(IDX1, device), _t(src1, device)),
          np_scatter(X, 1, IDX1, src1))
    check(_t(X, device).scatter(1, _t(IDX1, device), 9.5),
          np_scatter(X, 1, IDX1, np.full(IDX1.shape, 9.5, np.float32)))
    check(_t(X, device).scatter(1, _t(IDX1, device), value=-1),
          np_scatter(X, 1, IDX1, np.full(IDX1.shape, -1, np.float32)))
    i = np.arange(12).reshape(3, 4)
    check(_t(i, device).scatter(0, _t(IDX0[:1], device), _t(i[:1] * 100, device)),
          np_scatter(i, 0, IDX0[:1], i[:1] * 100))
    b = np.zeros((3, 4), bool)
    check(_t(b, device).scatter(1, _t(IDX1, device), True),
          np_scatter(b, 1, IDX1, np.ones(IDX1.shape, bool)))
    check(_t(X, device).scatter(1, _t(IDX1, device), 2.0, reduce="add"),
          np_scatter_reduce(X, 1, IDX1, np.full(IDX1.shape, 2, np.float32), "sum", True))
    check(_t(X, device).scatter(0, _t(IDX0, device), _t(src, device), reduce="multiply"),
          np_scatter_reduce(X, 0, IDX0, src, "prod", True))


def test_scatter_in_place(device, check):
    x = _t(X, device)
    assert x.scatter_(1, _t(IDX1, device), 0.0) is x
    check(x, np_scatter(X, 1, IDX1, np.zeros(IDX1.shape, np.float32)))
    y = _t(X, device)
    y.scatter_add_(1, _t(IDX1, device), _t(np.ones((3, 2), np.float32), device))
    check(y, np_scatter_reduce(X, 1, IDX1, np.ones((3, 2), np.float32), "sum", True))


def test_scatter_gradients():
    idx = lazyt.tensor(IDX0)
    assert gradcheck(lambda x, s: x.scatter(0, idx, s), [_f64((3, 4)), _f64((2, 4), 1)])
    assert gradcheck(lambda x, s: x.scatter(1, lazyt.tensor(IDX1), s),
                     [_f64((3, 4)), _f64((3, 3), 2)])
    assert gradcheck(lambda x: x.scatter(1, lazyt.tensor(IDX1), 0.5), [_f64((3, 4))])


def test_scatter_errors():
    x = lazyt.ones(3, 4)
    with pytest.raises(lazyt.DTypeError, match="scatter: src must have the input's dtype"):
        x.scatter(0, lazyt.tensor(IDX0), lazyt.ones(2, 4, dtype=lazyt.float64))
    with pytest.raises(lazyt.ShapeError, match="scatter: index shape .* must fit inside src"):
        x.scatter(0, lazyt.tensor(IDX0), lazyt.ones(1, 4))
    with pytest.raises(lazyt.ShapeError, match="scatter"):
        x.scatter(0, lazyt.tensor([0, 1]), lazyt.ones(2))               # rank differs
    with pytest.raises(lazyt.DTypeError, match="scatter: index must be an integer"):
        x.scatter(0, lazyt.tensor([[0.0]]), 1.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="exactly one of src and value"):
        x.scatter(0, lazyt.tensor(IDX0))
    with pytest.raises(lazyt.InvalidArgumentError, match="reduce must be 'add' or"):
        x.scatter(0, lazyt.tensor(IDX0), 1.0, reduce="max")
    with pytest.raises(lazyt.IndexOutOfRangeError):
        x.scatter(0, lazyt.tensor([[5]]), 1.0).numpy()


# ---------------------------------------------------------------------- scatter_reduce
SR_IDX = np.array([[0, 2, 0, 1], [2, 2, 0, 1]])          # dim 0: repeated targets
SR_SRC = np.array([[1.5, -2, 3, 0.5], [4, -1, -3, 2]], np.float32)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
def test_scatter_reduce_every_device(device, check, reduce, include_self):
    got = lazyt.scatter_reduce(_t(X, device), 0, _t(SR_IDX, device), _t(SR_SRC, device),
                               reduce, include_self=include_self)
    check(got, np_scatter_reduce(X, 0, SR_IDX, SR_SRC, reduce, include_self))
    i, s = np.arange(12).reshape(3, 4) - 4, np.array([[7, -3], [2, 9], [5, 5]])
    idx = np.array([[1, 1], [3, 0], [2, 2]])
    check(_t(i, device).scatter_reduce(1, _t(idx, device), _t(s, device), reduce,
                                       include_self=include_self),
          np_scatter_reduce(i, 1, idx, s, reduce, include_self))


def test_scatter_reduce_partial_index_and_in_place(device, check):
    # the index covers only part of the input outside `dim`
    idx, src = np.array([[0, 0], [1, 0]]), np.array([[2.0, 3.0], [5.0, 7.0]], np.float32)
    for reduce in ("sum", "amax", "prod"):
        check(_t(X, device).scatter_reduce(0, _t(idx, device), _t(src, device), reduce),
              np_scatter_reduce(X, 0, idx, src, reduce, True))
    x = _t(X, device)
    assert x.scatter_reduce_(0, _t(idx, device), _t(src, device), "amin",
                             include_self=False) is x
    check(x, np_scatter_reduce(X, 0, idx, src, "amin", False))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
def test_scatter_reduce_gradients(reduce, include_self):
    idx = lazyt.tensor(SR_IDX)
    assert gradcheck(lambda x, s: x.scatter_reduce(0, idx, s, reduce,
                                                   include_self=include_self),
                     [_f64((3, 4)), _f64((2, 4), 1)])


def test_scatter_reduce_gradient_rules():
    # prod is exact where a value is zero; amax shares a tie evenly (torch's rule)
    x = lazyt.tensor([2.0, 0.0, 1.0], dtype=lazyt.float64).require_grad()
    s = lazyt.tensor([3.0, 5.0, 0.0], dtype=lazyt.float64).require_grad()
    idx = lazyt.tensor([0, 1, 1])
    g = x.scatter_reduce(0, idx, s, "prod").sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), [3.0, 0.0, 1.0])
    np.testing.assert_allclose(g.get(s).numpy(), [2.0, 0.0, 0.0])
    x = lazyt.tensor([4.0, 1.0], dtype=lazyt.float64).require_grad()
    s = lazyt.tensor([4.0, 4.0, 0.5], dtype=lazyt.float64).require_grad()
    g = x.scatter_reduce(0, lazyt.tensor([0, 0, 1]), s, "amax").sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), [1 / 3, 1.0])
    np.testing.assert_allclose(g.get(s).numpy(), [1 / 3, 1 / 3, 0.0])


def test_scatter_reduce_errors():
    x = lazyt.ones(3, 4)
    with pytest.raises(lazyt.InvalidArgumentError, match="scatter_reduce: reduce must be"):
        x.scatter_reduce(0, lazyt.tensor(SR_IDX), lazyt.tensor(SR_SRC), "max")
    with pytest.raises(lazyt.DTypeError, match="scatter_reduce: src must have"):
        x.scatter_reduce(0, lazyt.tensor(SR_IDX), lazyt.ones(2, 4, dtype=lazyt.int64), "sum")
    with pytest.raises(lazyt.ShapeError, match="scatter_reduce"):
        x.scatter_reduce(0, lazyt.zeros(3, 5, dtype=lazyt.int64), lazyt.ones(3, 5), "sum")


# ---------------------------------------------------------------------- index_put
def test_index_put_every_device(device, check):
    x = _t(X, device)
    r, c = np.array([0, 2, -1]), np.array([1, 3, 0])
    v = np.array([10.0, 20.0, 30.0], np.float32)
    want = X.copy()
    want[np.array([0, 2]), np.array([1, 3])] = v[:2]
    want[-1, 0] = v[2]
    check(lazyt.index_put(x, (_t(r, device), _t(c, device)), _t(v, device)), want)
    want = X.copy()
    want[[2, 0]] = np.float32(-1)
    check(x.index_put((_t([2, 0], device),), lazyt.tensor(-1.0, device=device)), want)
    rows = np.array([[0], [2]])                       # broadcasts with the columns
    cols = np.array([1, 2])
    val = np.arange(4, dtype=np.float32).reshape(2, 2)
    want = X.copy()
    want[rows, cols] = val
    check(x.index_put((_t(rows, device), _t(cols, device)), _t(val, device)), want)
    want = X.copy()
    want[MASK] = np.float32(0.25)
    check(x.index_put((_t(MASK, device),), lazyt.tensor(0.25, device=device)), want)
    want = X.copy()
    np.add.at(want, (np.array([1, 1, 2]),), np.ones((3, 4), np.float32))
    check(x.index_put((_t([1, 1, 2], device),), _t(np.ones((3, 4), np.float32), device),
                      accumulate=True), want)
    i = np.arange(6).reshape(2, 3)
    want = i.copy()
    want[1, [0, 2]] = [7, 8]
    check(_t(i, device).index_put((_t([1, 1], device), _t([0, 2], device)), _t([7, 8], device)),
          want)


def test_index_put_in_place(device, check):
    x = _t(X, device)
    assert x.index_put_((_t([1], device), _t([2], device)), lazyt.tensor(5.0, device=device)) is x
    want = X.copy()
    want[1, 2] = 5
    check(x, want)


def test_index_put_gradients():
    idx = (lazyt.tensor([0, 2]), lazyt.tensor([1, 3]))
    assert gradcheck(lambda x, v: x.index_put(idx, v), [_f64((3, 4)), _f64((2,), 1)])
    assert gradcheck(lambda x, v: x.index_put((lazyt.tensor([1, 1, 0]),), v, accumulate=True),
                     [_f64((3, 4)), _f64((3, 4), 1)])
    assert gradcheck(lambda x, v: x.index_put((lazyt.tensor([2]),), v),
                     [_f64((3, 4)), _f64((4,), 2)])


def test_index_put_errors():
    x = lazyt.ones(3, 4)
    with pytest.raises(lazyt.DTypeError, match="index_put: values must have the input's dtype"):
        x.index_put((lazyt.tensor([0]),), lazyt.ones(4, dtype=lazyt.float64))
    with pytest.raises(lazyt.ShapeError, match="index_put: values of shape"):
        x.index_put((lazyt.tensor([0]),), lazyt.ones(3))
    with pytest.raises(lazyt.IndexOutOfRangeError, match="too many indices"):
        x.index_put((lazyt.tensor([0]),) * 3, lazyt.tensor(1.0))
    with pytest.raises(lazyt.DTypeError, match="index_put: indices must be a tuple"):
        x.index_put(lazyt.tensor([0]), lazyt.tensor(1.0))
    with pytest.raises(lazyt.IndexOutOfRangeError, match="boolean index"):
        x.index_put((lazyt.tensor([True, False]),), lazyt.tensor(1.0))
    with pytest.raises(lazyt.IndexOutOfRangeError):
        x.index_put((lazyt.tensor([0]), lazyt.tensor([4])), lazyt.tensor(1.0)).numpy()
    with pytest.raises(lazyt.GradError):
        lazyt.ones(2).require_grad().index_put_((lazyt.tensor([0]),), lazyt.tensor(1.0))


# ---------------------------------------------------------------------- API
def test_functions_and_methods_are_exported():
    for name in lazyt.selection.__all__:
        assert name in lazyt.__all__ and callable(getattr(lazyt, name)), name
        assert hasattr(lazyt.Tensor, name), name
    for name in ("masked_fill_", "scatter_", "scatter_add_", "scatter_reduce_"):
        assert hasattr(lazyt.Tensor, name) and name not in lazyt.__all__, name
    assert "index_put_" in lazyt.__all__          # torch.index_put_(x, indices, values)
    assert "one_hot" in F.__all__ and not hasattr(lazyt, "one_hot")


# ---------------------------------------------------------------------- torch
@needs_torch
def test_against_torch():
    x, m = torch.tensor(X), torch.tensor(MASK)
    np.testing.assert_array_equal(lazyt.tensor(X).masked_fill(lazyt.tensor(MASK), 3).numpy(),
                                  x.masked_fill(m, 3).numpy())
    np.testing.assert_array_equal(lazyt.tensor(X).masked_select(lazyt.tensor(MASK[0])).numpy(),
                                  x.masked_select(m[0]).numpy())
    np.testing.assert_array_equal(lazyt.nonzero(lazyt.tensor(X)).numpy(),
                                  torch.nonzero(x).numpy())
    np.testing.assert_array_equal(F.one_hot(lazyt.tensor([2, 0])).numpy(),
                                  TF.one_hot(torch.tensor([2, 0])).numpy())
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            want = x.scatter_reduce(0, torch.tensor(SR_IDX), torch.tensor(SR_SRC), reduce,
                                    include_self=inc)
            got = lazyt.tensor(X).scatter_reduce(0, lazyt.tensor(SR_IDX), lazyt.tensor(SR_SRC),
                                                 reduce, include_self=inc)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    ti = torch.arange(12).reshape(3, 4) - 4
    want = ti.scatter_reduce(1, torch.tensor([[1, 1], [3, 0], [2, 2]]),
                             torch.tensor([[7, -3], [2, 9], [5, 5]]), "mean")
    got = lazyt.tensor(ti.numpy()).scatter_reduce(1, lazyt.tensor([[1, 1], [3, 0], [2, 2]]),
                                                  lazyt.tensor([[7, -3], [2, 9], [5, 5]]),
                                                  "mean")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    idx = (torch.tensor([[0], [2]]), torch.tensor([1, 2]))
    val = torch.arange(4.0).reshape(2, 2)
    np.testing.assert_array_equal(
        lazyt.tensor(X).index_put(tuple(lazyt.tensor(i.numpy()) for i in idx),
                                  lazyt.tensor(val.numpy())).numpy(),
        x.index_put(idx, val).numpy())
    # gradients of scatter_reduce, ties among src and zeros included (not a tie of an
    # excluded self value with the result: torch then counts self in the split anyway)
    xs = torch.tensor([3.0, -0.5, 1.0], dtype=torch.float64, requires_grad=True)
    ss = torch.tensor([4.0, 4.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    ti = torch.tensor([0, 0, 1, 1])
    for reduce in ("prod", "amax", "amin", "mean"):
        for inc in (True, False):
            gx, gs = torch.autograd.grad(xs.scatter_reduce(0, ti, ss, reduce,
                                                           include_self=inc).sum(), (xs, ss))
            lx = lazyt.tensor(xs.detach().numpy()).require_grad()
            ls = lazyt.tensor(ss.detach().numpy()).require_grad()
            g = lx.scatter_reduce(0, lazyt.tensor(ti.numpy()), ls, reduce,
                                  include_self=inc).sum().backward()
            np.testing.assert_allclose(g.get(lx).numpy(), gx.numpy(), err_msg=reduce)
            np.testing.assert_allclose(g.get(ls).numpy(), gs.numpy(), err_msg=reduce)
