"""torch's layout ops, scans and sorting as composites (`lazyt/layout.py`): values against
numpy on every device, float64 gradients on cpu, torch's tie and NaN rules, errors, and torch
where installed."""
import numpy as np
import pytest

import lazyt
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

X = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 4


def _t(a, device):
    return lazyt.tensor(np.asarray(a), device=device)


def _f64(shape, seed=0):
    rng = np.random.default_rng(seed)
    return lazyt.tensor(rng.normal(size=shape), dtype=lazyt.float64).require_grad()


# ---------------------------------------------------------------------- numpy references
def np_pad(x, pads, mode, value=0):
    """torch's pad order (last dim first, negative crops) on top of np.pad."""
    widths = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        widths[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    grow = [(max(0, lo), max(0, hi)) for lo, hi in widths]

    def crop(a):
        return a[tuple(slice(max(0, -lo), a.shape[d] - max(0, -hi))
                       for d, (lo, hi) in enumerate(widths))]
    if mode == "constant":
        return np.pad(crop(x), grow, mode="constant", constant_values=value)
    return crop(np.pad(x, grow, mode={"reflect": "reflect", "replicate": "edge",
                                      "circular": "wrap"}[mode]))


def np_cum_extreme(x, axis, largest):
    """torch's cummax/cummin: the last index of equal values; NaN wins, the last NaN's index."""
    x = np.moveaxis(x, axis, -1)
    vals, idx = np.empty_like(x), np.empty(x.shape, np.int64)
    for pos in np.ndindex(x.shape[:-1]):
        row = x[pos]
        best, k = row[0], 0
        for i, v in enumerate(row):
            if v != v or (best == best and (v >= best if largest else v <= best)):
                best, k = v, i
            vals[pos + (i,)], idx[pos + (i,)] = best, k
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def np_argsort(x, axis, descending):
    """Stable order, NaN last ascending and first descending (torch's rules)."""
    x = np.moveaxis(x, axis, -1)
    out = np.empty(x.shape, np.int64)
    for pos in np.ndindex(x.shape[:-1]):
        row = x[pos].tolist()

        def key(i):
            v = row[i]
            nan = v != v
            if descending:
                return (not nan, 0 if nan else -v, i)
            return (nan, 0 if nan else v, i)
        out[pos] = sorted(range(len(row)), key=key)
    return np.moveaxis(out, -1, axis)


# ---------------------------------------------------------------------- pad
PADS = [((1, 2), "constant"), ((2, 0, 1, 1), "constant"), ((-1, 2), "constant"),
        ((1, -2, -1, 0), "constant"), ((2, 3), "reflect"), ((1, 2, 2, 1), "reflect"),
        ((3, 1), "replicate"), ((1, 1, 2, 0), "replicate"), ((-1, 2), "replicate"),
        ((2, 4), "circular"), ((1, 0, 3, 2), "circular")]


@pytest.mark.parametrize("pads, mode", PADS, ids=[f"{m}{p}" for p, m in PADS])
def test_pad_every_device(device, check, pads, mode):
    check(lazyt.pad(_t(X, device), pads, mode=mode), np_pad(X, pads, mode))


def test_pad_value_dtypes_and_3d(device, check):
    check(lazyt.pad(_t(X, device), (1, 1), value=-2.5), np_pad(X, (1, 1), "constant", -2.5))
    i = np.arange(6).reshape(1, 2, 3)
    check(lazyt.pad(_t(i, device), (1, 0, 0, 1, 1, 1), value=7),
          np_pad(i, (1, 0, 0, 1, 1, 1), "constant", 7))
    b = np.array([[True, False]])
    check(lazyt.pad(_t(b, device), (1, 1), mode="replicate"), np_pad(b, (1, 1), "replicate"))
    check(lazyt.pad(_t(X, device), (-3, -1)), X[:, 3:3])           # cropped to nothing


@pytest.mark.parametrize("pads, mode", [((1, 2), "constant"), ((-1, 1, 1, 0), "constant"),
                                        ((2, 1), "reflect"), ((2, 2, 1, 0), "replicate"),
                                        ((3, 1), "circular")])
def test_pad_gradients(pads, mode):
    assert gradcheck(lambda t: lazyt.pad(t, pads, mode=mode, value=None), [_f64((2, 4))])


def test_pad_errors():
    x = lazyt.ones(2, 3)
    with pytest.raises(lazyt.ShapeError, match="pad: pad must hold"):
        lazyt.pad(x, (1,))
    with pytest.raises(lazyt.ShapeError, match="pad: pad must hold"):
        lazyt.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(lazyt.ShapeError, match="reflect padding .* less than"):
        lazyt.pad(x, (3, 0), mode="reflect")
    with pytest.raises(lazyt.ShapeError, match="circular padding"):
        lazyt.pad(x, (0, 4), mode="circular")
    with pytest.raises(lazyt.ShapeError, match="negative size"):
        lazyt.pad(x, (-2, -2))
    with pytest.raises(lazyt.InvalidArgumentError, match="pad: mode"):
        lazyt.pad(x, (1, 1), mode="mirror")
    with pytest.raises(lazyt.InvalidArgumentError, match="takes no value"):
        lazyt.pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(lazyt.DTypeError, match="pad: pad must be a sequence of ints"):
        lazyt.pad(x, (1.5, 1))


# ---------------------------------------------------------------------- reordering, repetition
def test_flip_roll_movedim_every_device(device, check):
    x3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = _t(x3, device)
    check(t.flip(0), np.flip(x3, 0))
    check(lazyt.flip(t, (0, 2)), np.flip(x3, (0, 2)))
    check(t.flip(-1), np.flip(x3, -1))
    check(lazyt.roll(t, 5), np.roll(x3, 5))
    check(t.roll(-1, 1), np.roll(x3, -1, 1))
    check(t.roll((1, 7), (0, 2)), np.roll(x3, (1, 7), (0, 2)))
    check(t.movedim(0, -1), np.moveaxis(x3, 0, -1))
    check(lazyt.moveaxis(t, (0, 1), (2, 0)), np.moveaxis(x3, (0, 1), (2, 0)))


def test_repeat_tile_repeat_interleave_every_device(device, check):
    t = _t(X, device)
    check(t.repeat(2, 1), np.tile(X, (2, 1)))
    check(t.repeat(2, 1, 3), np.tile(X, (2, 1, 3)))
    check(t.repeat((1, 0)), np.tile(X, (1, 0)))
    check(lazyt.tile(t, (2,)), np.tile(X, (1, 2)))
    check(t.tile(2, 1, 1), np.tile(X, (2, 1, 1)))
    check(t.repeat_interleave(2), np.repeat(X, 2))
    check(lazyt.repeat_interleave(t, 3, dim=1), np.repeat(X, 3, axis=1))
    check(t.repeat_interleave(_t([1, 0, 2], device), dim=0), np.repeat(X, [1, 0, 2], axis=0))
    check(t.repeat_interleave(_t([2], device), dim=-1), np.repeat(X, 2, axis=-1))
    check(lazyt.repeat_interleave(_t([2, 0, 1], device)), np.array([0, 0, 2]))
    check(lazyt.repeat_interleave(_t(np.float32(5.0), device), 2), np.array([5.0, 5.0], np.float32))


def test_repetition_and_reordering_gradients():
    x = _f64((2, 3))
    for fn in (lambda t: t.flip((0, 1)), lambda t: t.roll(2), lambda t: t.roll(1, 1),
               lambda t: t.movedim(1, 0), lambda t: t.repeat(2, 2),
               lambda t: lazyt.tile(t, (1, 2, 1)), lambda t: t.repeat_interleave(2, dim=1),
               lambda t: t.repeat_interleave(lazyt.tensor([3, 1]), dim=0)):
        assert gradcheck(fn, [x])
    g = x.repeat_interleave(lazyt.tensor([0, 2]), dim=0).sum().backward()[x].numpy()
    np.testing.assert_array_equal(g, [[0, 0, 0], [2, 2, 2]])


def test_repetition_errors():
    x = lazyt.ones(2, 3)
    with pytest.raises(lazyt.ShapeError, match="repeat: needs at least 2 sizes"):
        x.repeat(2)
    with pytest.raises(lazyt.InvalidArgumentError, match="repeat: sizes must be non-negative"):
        x.repeat(1, -1)
    with pytest.raises(lazyt.ShapeError, match="repeat_interleave: repeats has 3 counts"):
        x.repeat_interleave(lazyt.tensor([1, 2, 3]), dim=0)
    with pytest.raises(lazyt.InvalidArgumentError, match="non-negative"):
        x.repeat_interleave(lazyt.tensor([1, -1]), dim=0)
    with pytest.raises(lazyt.InvalidArgumentError, match="output_size=5"):
        x.repeat_interleave(2, dim=0, output_size=5)
    with pytest.raises(lazyt.DTypeError, match="repeat_interleave: repeats must be"):
        x.repeat_interleave(lazyt.tensor([1.0, 2.0]), dim=0)
    with pytest.raises(lazyt.InvalidArgumentError, match="flip: dims"):
        x.flip((0, 0))
    with pytest.raises(lazyt.IndexOutOfRangeError, match="flip"):
        x.flip(2)
    with pytest.raises(lazyt.InvalidArgumentError, match="roll: shifts"):
        x.roll((1, 2), 0)
    with pytest.raises(lazyt.InvalidArgumentError, match="movedim"):
        x.movedim((0, 1), 0)


# ---------------------------------------------------------------------- triangles, diagonals
def test_tril_triu_diag_diagonal_every_device(device, check):
    t = _t(X, device)
    for k in (0, 1, -1, 5, -5):
        check(t.tril(k), np.tril(X, k))
        check(lazyt.triu(t, k), np.triu(X, k))
        check(t.diagonal(k), np.diagonal(X, k))
        check(lazyt.diag(t, k), np.diag(X, k))
    v = np.array([1.0, -2.0, 3.0], np.float32)
    for k in (0, 2, -1):
        check(lazyt.diag(_t(v, device), k), np.diag(v, k))
    x3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t3 = _t(x3, device)
    check(t3.tril(), np.tril(x3))
    check(t3.diagonal(1, 1, 2), np.diagonal(x3, 1, 1, 2))
    check(lazyt.diagonal(t3, -1, 2, 0), np.diagonal(x3, -1, 2, 0))
    check(_t(np.ones((3, 3), bool), device).triu(1), np.triu(np.ones((3, 3), bool), 1))
    check(_t(np.arange(4), device).diag(), np.diag(np.arange(4)))


def test_triangle_and_diagonal_gradients_and_errors():
    m = _f64((3, 4))
    for fn in (lambda t: t.tril(1), lambda t: t.triu(-1), lambda t: t.diagonal(1),
               lambda t: lazyt.diag(t, -1), lambda t: lazyt.diag(t[0], 1)):
        assert gradcheck(fn, [m])
    with pytest.raises(lazyt.ShapeError, match="tril: needs a tensor of rank >= 2"):
        lazyt.ones(3).tril()
    with pytest.raises(lazyt.ShapeError, match="diag: needs a 1-D or 2-D"):
        lazyt.ones(1, 2, 3).diag()
    with pytest.raises(lazyt.InvalidArgumentError, match="diagonal: dim1 and dim2"):
        lazyt.ones(2, 2).diagonal(0, 1, -1)


# ---------------------------------------------------------------------- shapes
def test_meshgrid_unflatten_unfold_chunk_every_device(device, check):
    a, b, c = np.arange(3), np.array([10.0, 20.0], np.float32), np.array([7])
    ta, tb, tc = _t(a, device), _t(b, device), _t(c, device)
    for got, want in zip(lazyt.meshgrid(ta, tb, tc, indexing="ij"),
                         np.meshgrid(a, b, c, indexing="ij")):
        check(got, want)
    for got, want in zip(lazyt.meshgrid([ta, tb], indexing="xy"),
                         np.meshgrid(a, b, indexing="xy")):
        check(got, want)
    x3 = np.arange(24, dtype=np.float32).reshape(2, 12)
    t = _t(x3, device)
    check(t.unflatten(1, (3, -1)), x3.reshape(2, 3, 4))
    check(lazyt.unflatten(t, -1, (2, 2, 3)), x3.reshape(2, 2, 2, 3))
    win = np.lib.stride_tricks.sliding_window_view(x3, 5, axis=1)
    check(t.unfold(1, 5, 3), win[:, ::3])
    check(t.unfold(0, 2, 1), np.moveaxis(x3.reshape(1, 2, 12), 1, -1))
    check(t.unfold(1, 12, 1), x3.reshape(2, 1, 12))
    check(_t(np.float32(5.0), device).unfold(0, 1, 1), np.array([5.0], np.float32))
    assert [p.shape[0] for p in _t(np.arange(5), device).chunk(3)] == [2, 2, 1]
    assert [p.shape[0] for p in _t(np.arange(6), device).chunk(4)] == [2, 2, 2]
    assert [p.shape for p in lazyt.zeros(0, 2, device=device).chunk(3)] == [(0, 2)] * 3


def test_shape_gradients_and_errors():
    x = _f64((2, 6))
    for fn in (lambda t: t.unfold(1, 3, 2), lambda t: t.unflatten(1, (2, 3)),
               lambda t: lazyt.meshgrid(t[0], t[1, :2])[0] * lazyt.meshgrid(t[0], t[1, :2])[1]):
        assert gradcheck(fn, [x])
    with pytest.raises(lazyt.ShapeError, match="unflatten: sizes"):
        x.unflatten(1, (4, 2))
    with pytest.raises(lazyt.ShapeError, match="unfold: size 7"):
        x.unfold(1, 7, 1)
    with pytest.raises(lazyt.InvalidArgumentError, match="unfold: step"):
        x.unfold(1, 2, 0)
    with pytest.raises(lazyt.ShapeError, match="meshgrid: expects 0-D or 1-D"):
        lazyt.meshgrid(x)
    with pytest.raises(lazyt.InvalidArgumentError, match="meshgrid: indexing"):
        lazyt.meshgrid(x[0], indexing="ji")


# ---------------------------------------------------------------------- scans
SCAN_X = np.array([[1.5, -2.0, 0.0, 3.0, 0.5, -1.0, 2.0],
                   [0.5, 0.5, 2.0, 2.0, -3.0, 2.0, 1.0],
                   [np.nan, 1.0, 4.0, np.nan, 0.0, 5.0, -1.0]], np.float32)


def test_cumprod_logcumsumexp_every_device(device, check):
    t = _t(SCAN_X[:2], device)
    check(t.cumprod(1), np.cumprod(SCAN_X[:2], 1))
    check(lazyt.cumprod(t, 0), np.cumprod(SCAN_X[:2], 0))
    i = np.array([[2, 0, 3, 1, 5], [1, 1, 2, 3, -1]], np.int32)
    check(lazyt.cumprod(_t(i, device), 1), np.cumprod(i, 1, dtype=np.int64))
    check(_t(i, device).cumprod(0, dtype=lazyt.float32), np.cumprod(i, 0).astype(np.float32))
    check(_t(np.array([True, True, False]), device).cumprod(0), np.array([1, 1, 0]))
    x = np.array([[-1000.0, 0.0, -1000.0, 3.0, -np.inf, 80.0, 88.0]], np.float32)
    check(t.logcumsumexp(1), np.logaddexp.accumulate(SCAN_X[:2], 1), rtol=1e-5)
    check(lazyt.logcumsumexp(_t(x, device), 1),
          np.logaddexp.accumulate(x.astype(np.float64), 1).astype(np.float32), rtol=1e-5)
    check(_t(i, device).logcumsumexp(0),
          np.logaddexp.accumulate(i.astype(np.float64), 0).astype(np.float32), rtol=1e-5)


@pytest.mark.parametrize("largest", [True, False], ids=["cummax", "cummin"])
def test_cummax_cummin_every_device(device, check, largest):
    fn = lazyt.cummax if largest else lazyt.cummin
    for dim in (1, 0):
        values, indices = fn(_t(SCAN_X, device), dim)
        want_v, want_i = np_cum_extreme(SCAN_X, dim, largest)
        check(values, want_v)
        check(indices, want_i)
    i = np.array([3, 1, 3, 4, 4, 0])
    out = getattr(_t(i, device), fn.__name__)(0)
    check(out.values, np_cum_extreme(i, 0, largest)[0])
    check(out.indices, np_cum_extreme(i, 0, largest)[1])


def test_scan_gradients():
    x = lazyt.tensor([[1.5, -2.0, 0.0, 3.0, 0.5], [0.5, 0.7, 0.0, 0.0, -3.0]],
                     dtype=lazyt.float64).require_grad()
    for fn in (lambda t: t.cumprod(1), lambda t: t.cumprod(0), lambda t: t.logcumsumexp(1),
               lambda t: t.logcumsumexp(0)):
        assert gradcheck(fn, [x])
    distinct = _f64((3, 5), seed=1)   # no ties: there the running extreme is not smooth
    assert gradcheck(lambda t: t.cummax(1).values, [distinct])
    assert gradcheck(lambda t: lazyt.cummin(t, 0)[0], [distinct])
    # exact with zeros: d/dx_j of sum_i prod_{k<=i} x_k
    g = x.cumprod(1).sum().backward()[x].numpy()
    v = x.numpy()
    want = [[sum(np.prod(np.delete(v[r, :i + 1], j)) for i in range(j, 5)) for j in range(5)]
            for r in range(2)]
    np.testing.assert_allclose(g, want, rtol=1e-14)
    g = x.cummax(1).values.sum().backward()[x].numpy()   # to the index picked at each step
    np.testing.assert_array_equal(g, [[3, 0, 0, 2, 0], [1, 4, 0, 0, 0]])


def test_scans_zero_d_empty_and_errors(check):
    s = lazyt.tensor(2.5)
    check(s.cumprod(0), np.float32(2.5))
    assert s.cummax(0).values.item() == 2.5 and s.cummax(-1).indices.item() == 0
    e = lazyt.zeros(2, 0)
    assert e.cumprod(1).shape == (2, 0) and e.cummin(1).indices.shape == (2, 0)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="cumprod"):
        lazyt.ones(2, 3).cumprod(2)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="logcumsumexp"):
        lazyt.ones(2, 3).logcumsumexp(-3)


# ---------------------------------------------------------------------- sorting
SORT_X = np.array([[3.0, 1.0, np.nan, 2.0, 1.0, 5.0, -0.0, 0.0, 1.0, 2.0, -np.inf, np.inf, 4.0],
                   [0.5, 0.5, 0.5, -1.0, 9.0, np.nan, np.nan, 0.0, 7.0, 7.0, 1.0, -2.0, 3.0]],
                  np.float32)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_sort_argsort_every_device(device, check, descending):
    t = _t(SORT_X, device)
    for dim in (1, 0):
        want = np_argsort(SORT_X, dim, descending)
        values, indices = lazyt.sort(t, dim, descending=descending, stable=True)
        check(indices, want)
        check(values, np.take_along_axis(SORT_X, want, dim))
        check(t.argsort(dim, descending), want)
    i = np.array([[4, 1, 4, 2, 0, 1], [5, 5, 5, 5, 5, 5]], np.int32)
    check(_t(i, device).sort(descending=descending).indices, np_argsort(i, 1, descending))
    b = np.array([True, False, True, False, True])
    check(_t(b, device).argsort(descending=descending), np_argsort(b, 0, descending))


def test_topk_every_device(device, check):
    t = _t(SORT_X, device)
    values, indices = t.topk(4)
    want = np_argsort(SORT_X, 1, True)[:, :4]
    check(indices, want)
    check(values, np.take_along_axis(SORT_X, want, 1))
    out = lazyt.topk(t, 2, dim=0, largest=False)
    check(out.indices, np_argsort(SORT_X, 0, False)[:2])
    check(t.topk(0).values, np.zeros((2, 0), np.float32))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9])
def test_sort_sizes_and_gradients(n):
    rng = np.random.default_rng(n)
    v = rng.normal(size=(2, n))
    x = lazyt.tensor(v, dtype=lazyt.float64).require_grad()
    np.testing.assert_array_equal(x.sort().values.numpy(), np.sort(v, 1))
    np.testing.assert_array_equal(x.argsort(0, descending=True).numpy(),
                                  np.argsort(-v, 0, kind="stable"))
    assert gradcheck(lambda t: t.sort(descending=True).values, [x])
    assert gradcheck(lambda t: t.topk(min(n, 2), largest=False).values, [x])
    g = x.topk(1).values.sum().backward()[x].numpy()
    np.testing.assert_array_equal(g, np.eye(n)[np.argmax(v, 1)])


def test_sort_zero_d_and_errors():
    s = lazyt.tensor(3.0)
    assert s.sort().values.item() == 3.0 and s.sort().indices.item() == 0
    assert s.topk(1).indices.item() == 0
    with pytest.raises(lazyt.IndexOutOfRangeError, match="topk: k=5"):
        lazyt.ones(2, 4).topk(5)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="sort"):
        lazyt.ones(2, 4).sort(2)


# ---------------------------------------------------------------------- API
def test_functions_and_methods_are_exported():
    function_only = {"pad", "meshgrid"}
    for name in lazyt.layout.__all__:
        assert name in lazyt.__all__ and callable(getattr(lazyt, name)), name
        assert (name in function_only) != hasattr(lazyt.Tensor, name), name
    for name in ("repeat", "unfold"):          # methods only, as in torch
        assert hasattr(lazyt.Tensor, name) and name not in lazyt.__all__


# ---------------------------------------------------------------------- torch
@needs_torch
@pytest.mark.parametrize("pads, mode", PADS, ids=[f"{m}{p}" for p, m in PADS])
def test_pad_matches_torch(pads, mode):
    x = X.reshape(1, 3, 4).astype(np.float64)
    want = TF.pad(torch.tensor(x), pads, mode=mode).numpy()
    np.testing.assert_array_equal(lazyt.pad(lazyt.tensor(x), pads, mode=mode).numpy(), want)


@needs_torch
def test_layout_and_scans_match_torch():
    x = SCAN_X.astype(np.float64)
    lx, tx = lazyt.tensor(x), torch.tensor(x)
    for name, kwargs in (("cummax", dict(dim=1)), ("cummin", dict(dim=0)),
                         ("sort", dict(dim=1, descending=True, stable=True)),
                         ("sort", dict(dim=0, stable=True))):
        got, want = getattr(lx, name)(**kwargs), getattr(tx, name)(**kwargs)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    got, want = lx.topk(3), tx.topk(3)    # torch orders equal values arbitrarily: values only
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    y = np.nan_to_num(x)
    for name, args in (("cumprod", (1,)), ("logcumsumexp", (1,)), ("tril", (1,)),
                       ("triu", (-1,)), ("diagonal", (1,)), ("roll", (2, 1)),
                       ("repeat_interleave", (2, 0)), ("unfold", (1, 3, 2)),
                       ("flip", ((0, 1),)), ("repeat", (2, 1)), ("movedim", (0, 1))):
        np.testing.assert_allclose(getattr(lazyt.tensor(y), name)(*args).numpy(),
                                   getattr(torch.tensor(y), name)(*args).numpy(), rtol=1e-12)
    for got, want in zip(lazyt.meshgrid(lx[0], lx[1], indexing="xy"),
                         torch.meshgrid(tx[0], tx[1], indexing="xy")):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
