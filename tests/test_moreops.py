"""torch ops as composites (`lazyt/moreops.py`): values, dtypes and shapes against numpy on
every device, float64 gradients on cpu, and errors."""
import math

import numpy as np
import pytest

import lazyt
import lazyt.moreops as moreops  # registers the ops (whether or not lazyt/__init__ does)
from lazyt.testing import gradcheck


class _Namespace:
    """`lazyt`, with the function forms of `lazyt.moreops` (before lazyt re-exports them)."""

    def __getattr__(self, name):
        return getattr(moreops if name in moreops.__all__ else lazyt, name)


L = _Namespace()
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:divide by zero:RuntimeWarning")


def _t(a, device, dtype=None):
    return L.tensor(np.asarray(a), dtype=dtype, device=device)


def _f32(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


# ---------------------------------------------------------------------- elementwise
UNARY = {
    "expm1": (np.expm1, (-3.0, 3.0)),
    "log1p": (np.log1p, (-0.9, 3.0)),
    "deg2rad": (np.deg2rad, (-400.0, 400.0)),
    "rad2deg": (np.rad2deg, (-7.0, 7.0)),
    "logit": (lambda x: np.log(x / (1 - x)), (0.05, 0.95)),
    "sgn": (np.sign, (-2.0, 2.0)),
    "frac": (lambda x: x - np.trunc(x), (-5.0, 5.0)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_every_device(device, check, rng, name):
    ref, (lo, hi) = UNARY[name]
    x = _f32(rng, 3, 5, lo=lo, hi=hi)
    check(getattr(L, name)(_t(x, device)), ref(x.astype(np.float64)).astype(np.float32),
          rtol=2e-5, atol=2e-6)
    check(getattr(_t(x, device), name)(), ref(x.astype(np.float64)).astype(np.float32),
          rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["expm1", "log1p"])
def test_expm1_log1p_tiny_and_float64(name):
    x = np.array([1e-30, -1e-12, 1e-8, 0.3, -0.49, 0.51, 0.0, 5.0, 40.0])
    want = getattr(np, name)(x)
    got = getattr(L, name)(L.tensor(x, dtype=L.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    ints = L.tensor([1, 2])
    assert getattr(L, name)(ints).dtype == L.float32
    assert getattr(L, name)(L.tensor([0.001], dtype=L.float16)).dtype == L.float16


def test_binary_float_every_device(device, check, rng):
    y, x = _f32(rng, 4, 5), _f32(rng, 5)
    x[0], y[0, 0], y[1, 0] = 0.0, 0.0, -1.0
    Y, X = _t(y, device), _t(x, device)
    y64, x64 = y.astype(np.float64), x.astype(np.float64)
    check(L.atan2(Y, X), np.arctan2(y64, x64).astype(np.float32), atol=2e-6)
    check(L.arctan2(Y, X), np.arctan2(y64, x64).astype(np.float32), atol=2e-6)
    check(Y.atan2(X), np.arctan2(y64, x64).astype(np.float32), atol=2e-6)
    check(L.hypot(Y, X), np.hypot(y, x))
    check(Y.hypot(2.0), np.hypot(y, np.float32(2.0)))
    pos = np.abs(x) + 0.1
    want = np.where(y == 0, 0.0, y64 * np.log(pos.astype(np.float64))).astype(np.float32)
    check(L.xlogy(Y, _t(pos, device)), want, atol=2e-6)


def test_atan2_hypot_edges_float64():
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 3e300, 1e-300])
    y, x = np.meshgrid(v, v, indexing="ij")
    got = L.atan2(L.tensor(y), L.tensor(x)).numpy()
    np.testing.assert_allclose(got, np.arctan2(y, x), rtol=1e-15, atol=0)
    assert np.array_equal(np.signbit(got), np.signbit(np.arctan2(y, x)))
    np.testing.assert_allclose(L.hypot(L.tensor(y), L.tensor(x)).numpy(), np.hypot(y, x),
                               rtol=1e-15)
    assert L.atan2(L.tensor([1, 2]), L.tensor([3, 4])).dtype == L.float32


def test_xlogy_zero_and_nan():
    out = L.xlogy(L.tensor([0.0, 0.0, 2.0, 1.0]), L.tensor([0.0, np.nan, np.e, 3.0])).numpy()
    np.testing.assert_allclose(out, [0.0, np.nan, 2.0, np.log(3.0)], equal_nan=True)
    assert L.xlogy(L.tensor([1, 2]), 2).dtype == L.float32


def test_logical_every_device(device, check):
    a = np.array([[0, 1, 2], [3, 0, -1]], dtype=np.int32)
    b = np.array([0.0, 0.5, 0.0], dtype=np.float32)
    A, B = _t(a, device), _t(b, device)
    check(L.logical_and(A, B), np.logical_and(a, b))
    check(L.logical_or(A, B), np.logical_or(a, b))
    check(A.logical_xor(B), np.logical_xor(a, b))


def test_nan_to_num_clamp_minmax_every_device(device, check):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0], dtype=np.float32)
    X = _t(x, device)
    check(L.nan_to_num(X), np.nan_to_num(x))
    check(X.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
          np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0))
    check(L.clamp_min(X, 0.0), np.where(x < 0, 0, x).astype(np.float32))
    check(X.clamp_max(1.0), np.where(x > 1, 1, x).astype(np.float32))
    check(L.clip(X, -1.0, 1.0), np.where(np.isnan(x), x, np.clip(x, -1, 1)))
    ints = _t(np.array([1, 2], dtype=np.int32), device)
    check(L.nan_to_num(ints), np.array([1, 2], dtype=np.int32))


def test_float_power_dtype(device, check):
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    check(L.float_power(_t(x, device), 2), np.float_power(x, 2))   # float64 (xfails on wgpu)
    check(L.float_power(2, L.tensor([1, 2, 3], device=device)), np.array([2.0, 4.0, 8.0]))


def test_logit_eps_and_sgn_frac_ints():
    x = L.tensor([0.0, 0.5, 1.0], dtype=L.float64)
    np.testing.assert_allclose(L.logit(x, eps=0.25).numpy(),
                               np.log([1 / 3, 1.0, 3.0]), rtol=1e-14)
    assert L.sgn(L.tensor([-3, 0, 2])).numpy().tolist() == [-1, 0, 1]
    assert L.deg2rad(L.tensor([180])).dtype == L.float32


# ---------------------------------------------------------------------- reductions
def test_reductions_every_device(device, check, rng):
    x = _f32(rng, 3, 4, 5)
    X = _t(x, device)
    check(L.amax(X), x.max())
    check(L.amax(X, (0, 2)), x.max((0, 2)))
    check(X.amin(1, keepdim=True), x.min(1, keepdims=True))
    mn, mx = L.aminmax(X, dim=-1)
    check(mn, x.min(-1))
    check(mx, x.max(-1))
    mn, mx = X.aminmax()
    check(mn, x.min())
    check(mx, x.max())
    y = x.copy()
    y[0, 0, :3] = np.nan
    y[1, 2, :] = np.nan
    Y = _t(y, device)
    check(L.nansum(Y, 2), np.nansum(y, 2))
    check(Y.nansum(), np.nansum(y), rtol=1e-4)
    with np.errstate(all="ignore"):
        check(L.nanmean(Y, -1, keepdim=True), np.nanmean(y, -1, keepdims=True))
    z = np.array([[0, 1, 2], [0, 0, 3]], dtype=np.int32)
    check(L.count_nonzero(_t(z, device)), np.array(3, dtype=np.int64))
    check(_t(z, device).count_nonzero(dim=1), np.count_nonzero(z, axis=1).astype(np.int64))
    check(L.count_nonzero(_t(z, device), dim=(0, 1)), np.array(3, dtype=np.int64))


# ---------------------------------------------------------------------- linear algebra
def test_linalg_every_device(device, check, rng):
    a, b = _f32(rng, 4), _f32(rng, 4)
    m, v = _f32(rng, 3, 4), _f32(rng, 4)
    b1, b2 = _f32(rng, 2, 3, 4), _f32(rng, 2, 4, 5)
    c, m2 = _f32(rng, 5), _f32(rng, 4, 5)
    A, B, M, V = (_t(u, device) for u in (a, b, m, v))
    check(L.dot(A, B), np.dot(a, b), rtol=1e-5)
    check(A.dot(B), np.dot(a, b), rtol=1e-5)
    check(L.outer(A, _t(c, device)), np.outer(a, c))
    check(A.ger(_t(c, device)), np.outer(a, c))
    check(L.mv(M, V), m @ v, rtol=1e-5)
    check(L.bmm(_t(b1, device), _t(b2, device)), b1 @ b2, rtol=1e-5, atol=1e-5)
    check(L.addmm(_t(c, device), M, _t(m2, device), beta=0.5, alpha=2.0),
          0.5 * c + 2.0 * (m @ m2), rtol=1e-5, atol=1e-5)
    nan_in = np.full((3, 5), np.nan, dtype=np.float32)
    check(M.addmm(_t(m2, device), mat2=None) if False else
          L.addmm(_t(nan_in, device), M, _t(m2, device), beta=0), m @ m2, rtol=1e-5, atol=1e-5)
    inp = _f32(rng, 2, 3, 5)
    check(L.baddbmm(_t(inp, device), _t(b1, device), _t(b2, device), alpha=-1.0),
          inp - b1 @ b2, rtol=1e-5, atol=1e-5)
    sq = _f32(rng, 4, 4)
    check(L.trace(_t(sq, device)), np.trace(sq), rtol=1e-5)
    check(_t(np.arange(9, dtype=np.int32).reshape(3, 3), device).trace(), np.array(12))
    u, w = _f32(rng, 2, 3), _f32(rng, 2, 3)
    check(L.cross(_t(u, device), _t(w, device), dim=1), np.cross(u, w), rtol=1e-5, atol=1e-6)
    check(_t(u.T, device).cross(_t(w.T, device)), np.cross(u.T, w.T, axis=0), rtol=1e-5,
          atol=1e-6)
    k1, k2 = _f32(rng, 2, 3), _f32(rng, 3, 2)
    check(L.kron(_t(k1, device), _t(k2, device)), np.kron(k1, k2))
    check(L.kron(_t(a, device), _t(k2, device)), np.kron(a, k2))
    x = _f32(rng, 3, 4)
    X = _t(x, device)
    check(L.norm(X), np.array(np.linalg.norm(x), dtype=np.float32), rtol=1e-5)
    check(X.norm(dim=1), np.linalg.norm(x, axis=1), rtol=1e-5)
    check(L.norm(X, p=math.inf, dim=0, keepdim=True), np.abs(x).max(0, keepdims=True))
    check(L.norm(X, p=1, dim=(0, 1)), np.abs(x).sum(), rtol=1e-5)
    check(L.norm(X, p=3, dim=1), (np.abs(x) ** 3).sum(1) ** (1 / 3), rtol=1e-5)
    check(L.norm(X, p=0), np.array(12.0, dtype=np.float32))
    y = _f32(rng, 4)
    check(L.dist(X, _t(y, device)), np.array(np.linalg.norm(x - y), dtype=np.float32),
          rtol=1e-5)
    check(X.dist(_t(y, device), p=1), np.abs(x - y).sum(), rtol=1e-5)


@pytest.mark.parametrize("offset,dims", [(0, (-2, -1)), (1, (-2, -1)), (-2, (0, 2)),
                                         (1, (1, 0))])
def test_diag_embed(device, check, rng, offset, dims):
    x = _f32(rng, 2, 3)
    n = 3 + abs(offset)
    want = np.zeros((2, n, n), np.float32)
    for b in range(2):
        want[b] = np.diag(x[b], offset)
    want = np.moveaxis(want, (1, 2), dims)
    check(L.diag_embed(_t(x, device), offset, *dims), want)
    check(_t(x, device).diag_embed(offset=offset, dim1=dims[0], dim2=dims[1]), want)


# ---------------------------------------------------------------------- layout
def test_layout_every_device(device, check, rng):
    x = _f32(rng, 2, 3, 4)
    X = _t(x, device)
    check(L.ravel(X), x.ravel())
    check(X.ravel(), x.ravel())
    check(L.swapaxes(X, 0, 2), np.swapaxes(x, 0, 2))
    check(L.swapdims(X, 1, -1), np.swapaxes(x, 1, -1))
    check(X.swapdims(0, 1), np.swapaxes(x, 0, 1))
    check(L.t(X[0]), x[0].T)
    check(L.broadcast_to(_t(x[0, 0], device), (2, 4)), np.broadcast_to(x[0, 0], (2, 4)))
    parts = L.unbind(X, 1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        check(p, x[:, i])
    for i, p in enumerate(X.unbind(-1)):
        check(p, x[..., i])
    for spec in (3, [1, 3], [2, -1], [3, 1], (5,)):
        got = L.tensor_split(X, spec, dim=2)
        want = np.array_split(x, spec, axis=2) if isinstance(spec, int) else \
            [x[..., lo:max(lo, hi)] for lo, hi in zip(
                [0] + [min(i % 4 if i < 0 else i, 4) for i in spec],
                [min(i % 4 if i < 0 else i, 4) for i in spec] + [4])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
    for g, w in zip(X.tensor_split(L.tensor([1]), 0), np.split(x, [1], 0)):
        check(g, w)
    a, b = _f32(rng, 3), _f32(rng, 3)
    m = _f32(rng, 3, 2)
    for fn in ("hstack", "vstack", "dstack", "column_stack"):
        ref = getattr(np, fn)
        check(getattr(L, fn)([_t(a, device), _t(b, device)]), ref([a, b]))
    check(L.hstack([_t(m, device), _t(m, device)]), np.hstack([m, m]))
    check(L.vstack([_t(m.T, device), _t(a, device)]), np.vstack([m.T, a]))
    check(L.dstack([_t(m, device), _t(m, device)]), np.dstack([m, m]))
    check(L.column_stack([_t(a, device), _t(m, device)]), np.column_stack([a, m]))
    p, q = L.broadcast_tensors(_t(a, device), _t(m[:, :1], device))
    pa, qa = np.broadcast_arrays(a, m[:, :1])
    check(p, np.ascontiguousarray(pa))
    check(q, np.ascontiguousarray(qa))
    for k in (-1, 0, 1, 2, 3, 5):
        check(L.rot90(X, k), np.rot90(x, k))
        check(X.rot90(k, (2, 0)), np.rot90(x, k, (2, 0)))
    for n in (0, 1, 2, 5):
        check(L.diff(X, n), np.diff(x, n))
        check(X.diff(n, dim=0), np.diff(x, n, axis=0))
    pre = _f32(rng, 2, 3, 1)
    check(L.diff(X, prepend=_t(pre, device), append=_t(pre, device)),
          np.diff(x, prepend=pre, append=pre))
    bl = np.array([True, True, False, True])
    check(L.diff(_t(bl, device)), np.diff(bl))
    idx = np.array([[0, -1], [5, 23]])
    check(L.take(X, _t(idx, device)), np.take(x, idx))
    check(X.take(_t(idx, device)), np.take(x, idx))
    ind = rng.integers(0, 3, (2, 2, 4))
    check(L.take_along_dim(X, _t(ind, device), 1), np.take_along_axis(x, ind, 1))
    check(X.take_along_dim(_t(ind[:1], device), dim=1),
          np.take_along_axis(x, np.broadcast_to(ind[:1], (2, 2, 4)), 1))
    flat = rng.integers(0, 24, (5,))
    check(L.take_along_dim(X, _t(flat, device)), x.ravel()[flat])


def test_new_methods(device, check):
    x = L.tensor([1.0, 2.0], dtype=L.float32, device=device)
    check(x.new_zeros(2, 3), np.zeros((2, 3), np.float32), device=device)
    check(x.new_ones((3,)), np.ones(3, np.float32), device=device)
    check(x.new_full((2,), 7, dtype=L.int32), np.full(2, 7, np.int32), device=device)
    check(x.new_tensor([[1, 2]]), np.array([[1.0, 2.0]], np.float32), device=device)
    check(x.new_tensor(x), np.array([1.0, 2.0], np.float32), device=device)
    assert not hasattr(lazyt, "new_zeros") and "new_zeros" not in moreops.__all__


def test_existing_ops_are_not_overridden():
    import lazyt.functional as F
    assert L.Tensor.clip is F.clamp and moreops.clip is F.clamp
    assert L.Tensor.broadcast_to is F.expand and L.Tensor.swapaxes is F.transpose
    assert L.Tensor.expand_as is F.expand_as and not hasattr(moreops, "type_as")


# ---------------------------------------------------------------------- gradients (cpu)
def _g(a):
    return L.tensor(np.asarray(a, dtype=np.float64)).require_grad()


def test_gradients_elementwise():
    rng = np.random.default_rng(0)
    x = _g(rng.uniform(-1.5, 1.5, 7))
    for fn in (L.expm1, L.deg2rad, L.rad2deg, L.frac, L.nan_to_num):
        assert gradcheck(fn, [x])
    assert gradcheck(L.log1p, [_g(rng.uniform(-0.8, 2, 7))])
    assert gradcheck(L.logit, [_g(rng.uniform(0.1, 0.9, 7))])
    assert gradcheck(lambda v: L.logit(v, eps=0.2), [_g([0.1, 0.3, 0.5, 0.85])])
    y, z = _g(rng.uniform(-2, 2, (3, 4))), _g(rng.uniform(-2, 2, 4))
    assert gradcheck(L.atan2, [y, z])
    assert gradcheck(L.hypot, [y, z])
    assert gradcheck(L.xlogy, [y, _g(rng.uniform(0.2, 2, 4))])
    assert gradcheck(lambda a: L.clamp_min(a, 0.1), [y])
    assert gradcheck(lambda a: L.clamp_max(a, 0.1), [y])
    assert gradcheck(L.float_power, [_g(rng.uniform(0.5, 2, 4)), _g(rng.uniform(-1, 1, 4))])
    g = L.xlogy(_g([0.0]), L.tensor([0.0], dtype=L.float64).require_grad())
    assert np.isfinite(g.numpy()).all()


def test_gradients_reductions_and_linalg():
    rng = np.random.default_rng(1)
    x = _g(rng.uniform(-2, 2, (3, 4)))
    assert gradcheck(lambda a: L.amax(a, 1), [x])
    assert gradcheck(lambda a: L.amin(a, (0, 1)), [x])
    assert gradcheck(lambda a: L.aminmax(a, dim=0), [x])
    assert gradcheck(lambda a: L.nansum(a, 0), [x])
    assert gradcheck(lambda a: L.nanmean(a, 1), [x])
    v, w = _g(rng.uniform(-1, 1, 4)), _g(rng.uniform(-1, 1, 3))
    assert gradcheck(L.dot, [v, _g(rng.uniform(-1, 1, 4))])
    assert gradcheck(L.outer, [v, w])
    assert gradcheck(L.mv, [x, v])
    assert gradcheck(L.bmm, [_g(rng.uniform(-1, 1, (2, 3, 4))), _g(rng.uniform(-1, 1, (2, 4, 2)))])
    assert gradcheck(lambda i, a, b: L.addmm(i, a, b, beta=0.5, alpha=3.0),
                     [_g(rng.uniform(-1, 1, 2)), x, _g(rng.uniform(-1, 1, (4, 2)))])
    assert gradcheck(L.baddbmm, [_g(rng.uniform(-1, 1, (2, 3, 2))),
                                 _g(rng.uniform(-1, 1, (2, 3, 4))), _g(rng.uniform(-1, 1, (2, 4, 2)))])
    assert gradcheck(L.trace, [_g(rng.uniform(-1, 1, (3, 3)))])
    assert gradcheck(lambda a: L.diag_embed(a, 1), [x])
    assert gradcheck(L.cross, [_g(rng.uniform(-1, 1, (2, 3))), _g(rng.uniform(-1, 1, (2, 3)))])
    assert gradcheck(L.kron, [_g(rng.uniform(-1, 1, (2, 2))), _g(rng.uniform(-1, 1, (3,)))])
    for p in ("fro", 1, 3, math.inf):
        assert gradcheck(lambda a: L.norm(a, p, dim=1), [x])
    assert gradcheck(L.dist, [x, v])
    z = L.tensor(np.zeros(3)).require_grad()
    assert np.array_equal(L.norm(z).backward()[z].numpy(), np.zeros(3))


def test_gradients_layout():
    rng = np.random.default_rng(2)
    x = _g(rng.uniform(-2, 2, (2, 3, 4)))
    assert gradcheck(lambda a: L.unbind(a, 1), [x])
    assert gradcheck(lambda a: L.tensor_split(a, 3, 2), [x])
    assert gradcheck(lambda a: L.rot90(a, 1, (1, 2)), [x])
    assert gradcheck(lambda a: L.diff(a, 2), [x])
    assert gradcheck(lambda a: L.take(a, L.tensor([[0, -1], [5, 5]])), [x])
    assert gradcheck(lambda a: L.take_along_dim(a, L.tensor([[[0], [2]]]), 1), [x])
    assert gradcheck(lambda a, b: L.hstack([a, b]), [_g([1.0, 2.0]), _g([3.0])])
    assert gradcheck(lambda a, b: L.column_stack([a, b]), [_g([1.0, 2.0]), _g([[3.0], [4.0]])])
    assert gradcheck(lambda a: L.broadcast_tensors(a, x)[0], [_g(rng.uniform(-1, 1, 4))])


# ---------------------------------------------------------------------- errors
def test_errors():
    v, m = L.ones(3), L.ones(2, 3)
    cases = [
        (L.ShapeError, "dot", lambda: L.dot(v, L.ones(4))),
        (L.ShapeError, "dot", lambda: L.dot(m, m)),
        (L.DTypeError, "dot", lambda: L.dot(v, L.ones(3, dtype=L.float64))),
        (L.ShapeError, "mv", lambda: L.mv(m, L.ones(2))),
        (L.ShapeError, "bmm", lambda: L.bmm(m, m)),
        (L.ShapeError, "bmm", lambda: L.bmm(L.ones(2, 2, 3), L.ones(3, 3, 2))),
        (L.ShapeError, "addmm", lambda: L.addmm(v, m, m)),
        (L.ShapeError, "addmm", lambda: L.addmm(L.ones(5), m, m.t())),
        (L.ShapeError, "trace", lambda: L.trace(v)),
        (L.ShapeError, "cross", lambda: L.cross(m, m, dim=0)),
        (L.ShapeError, "cross", lambda: L.cross(L.ones(2, 2), L.ones(2, 2))),
        (L.InvalidArgumentError, "diag_embed", lambda: L.diag_embed(m, 0, 1, 1)),
        (L.DTypeError, "norm", lambda: L.norm(L.tensor([1, 2]))),
        (L.InvalidArgumentError, "norm", lambda: L.norm(m, "nuc")),
        (L.DTypeError, "nanmean", lambda: L.nanmean(L.tensor([1, 2]))),
        (L.DTypeError, "frac", lambda: L.frac(L.tensor([1, 2]))),
        (L.InvalidArgumentError, "tensor_split", lambda: L.tensor_split(m, 0)),
        (L.DTypeError, "tensor_split", lambda: L.tensor_split(m, 1.5)),
        (L.InvalidArgumentError, "rot90", lambda: L.rot90(m, 1, (0,))),
        (L.InvalidArgumentError, "rot90", lambda: L.rot90(m, 1, (1, 1))),
        (L.ShapeError, "rot90", lambda: L.rot90(v)),
        (L.InvalidArgumentError, "diff", lambda: L.diff(v, -1)),
        (L.ShapeError, "diff", lambda: L.diff(L.tensor(1.0))),
        (L.DTypeError, "take", lambda: L.take(v, L.tensor([0.5]))),
        (L.ShapeError, "take_along_dim", lambda: L.take_along_dim(m, L.tensor([0]), 0)),
        (L.InvalidArgumentError, "hstack", lambda: L.hstack([])),
        (L.ShapeError, "broadcast_tensors", lambda: L.broadcast_tensors(v, L.ones(2))),
        (L.ShapeError, "atan2", lambda: L.atan2(v, L.ones(2))),
        (L.DTypeError, "logical_and", lambda: L.logical_and(v, [1, 2])),
        (L.InvalidArgumentError, "aminmax", lambda: L.aminmax(m, dim=(0, 1))),
        (L.IndexOutOfRangeError, "unbind", lambda: L.unbind(m, 2)),
    ]
    for exc, op, fn in cases:
        with pytest.raises(exc, match=op):
            fn()
    with pytest.raises(L.IndexOutOfRangeError):
        L.take(v, L.tensor([3])).numpy()
