"""Every core primitive of WgpuBackend against numpy (lazyt's NumpyBackend), per supported dtype,
with broadcasting, strided views, zero-size and 0-d tensors."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
import lazyt.dtype as dt
from lazyt.backends.numpy import NumpyBackend
from lazyt.backends.wgpu.renderer import WGSL
from lazyt.errors import DTypeError, IndexOutOfRangeError, ShapeError
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp

REF = NumpyBackend()
F32, F16, I32, I64, B = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32),
                         np.dtype(np.int64), np.dtype(np.bool_))
KIND = {F32: "float", F16: "float", I32: "int", I64: "int", B: "bool"}
# The domain each float unary op is tested on (special values are tested separately).
POSITIVE = {UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT, UnaryOp.RECIPROCAL}


def sample(rng, shape, dtype, op=None):
    dtype = np.dtype(dtype)
    if dtype == B:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-20, 21, shape).astype(dtype)
    lo = 0.05 if op in POSITIVE else -3.0
    return rng.uniform(lo, 3.0, shape).astype(dtype)


def ref_unary(op, a):
    """numpy reference computed in float64 for floats, rounded to the input dtype."""
    if a.dtype.kind == "f":
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return np.asarray(REF.unary(op, a.astype(np.float64))).astype(a.dtype)
    return REF.unary(op, a)


UNARY_CASES = [(op, d) for op in UnaryOp for d in (F32, F16, I32, I64, B)
               if KIND[d] in WGSL.unary_table[op]]


@pytest.mark.parametrize("op, dtype", UNARY_CASES, ids=lambda v: getattr(v, "value", str(v)))
def test_unary(backend, up, down, close, rng, op, dtype):
    a = sample(rng, (3, 37), dtype, op)
    close(down(backend.unary(op, up(a))), ref_unary(op, a))


def test_unary_special_values(backend, up, down, close):
    x = np.array([0.0, -0.0, 1e-8, -1e-8, 0.3, -0.7, 5.0, -5.0, 30.0, -30.0, 100.0, -100.0,
                  np.inf, -np.inf, np.nan], np.float32)
    for op in (UnaryOp.TANH, UnaryOp.SIGMOID, UnaryOp.ERF, UnaryOp.RELU, UnaryOp.SIGN,
               UnaryOp.ABS, UnaryOp.NEG, UnaryOp.EXP):
        close(down(backend.unary(op, up(x))), ref_unary(op, x), atol=1e-6)
    pos = np.array([0.0, 1e-30, 1.0, 4.0, np.inf], np.float32)
    for op in (UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT, UnaryOp.RECIPROCAL):
        with np.errstate(divide="ignore"):
            close(down(backend.unary(op, up(pos))), ref_unary(op, pos))


def test_erf_tanh_accuracy_over_a_range(backend, up, down, close):
    x = np.linspace(-6, 6, 4001).astype(np.float32)
    for op in (UnaryOp.ERF, UnaryOp.TANH):
        close(down(backend.unary(op, up(x))), ref_unary(op, x), rtol=1e-5, atol=3e-7)


def binary_inputs(rng, op, dtype, sa, sb):
    a, b = sample(rng, sa, dtype), sample(rng, sb, dtype)
    if op is BinaryOp.POW and dtype.kind == "f":
        a = np.abs(a) + np.asarray(0.1, dtype)
        b = np.clip(b, -2, 2)
    elif op is BinaryOp.POW:
        b = np.abs(b) % 5
    elif op in (BinaryOp.SHL, BinaryOp.SHR):
        b = np.abs(b) % 8
    elif op in (BinaryOp.DIV, BinaryOp.FLOOR_DIV, BinaryOp.MOD) and dtype.kind != "b":
        b = np.where(b == 0, np.asarray(3, dtype), b)
    return a, b


BINARY_CASES = [(op, d) for op in BinaryOp for d in (F32, F16, I32, I64, B)
                if KIND[d] in WGSL.binary_table[op] and not (d != F32 and op is BinaryOp.DIV
                                                     and KIND[d] != "float")]


@pytest.mark.parametrize("op, dtype", BINARY_CASES, ids=lambda v: getattr(v, "value", str(v)))
def test_binary_broadcast(backend, up, down, close, rng, op, dtype):
    a, b = binary_inputs(rng, op, dtype, (4, 1, 5), (3, 1))
    expected = REF.binary(op, a, b)
    close(down(backend.binary(op, up(a), up(b))), expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, B])
def test_binary_with_scalars(backend, up, down, close, rng, dtype):
    a = sample(rng, (2, 9), dtype)
    ops = [BinaryOp.ADD, BinaryOp.MUL, BinaryOp.MAXIMUM, BinaryOp.LT, BinaryOp.EQ]
    if dtype != B:
        ops += [BinaryOp.SUB, BinaryOp.POW]
    s = {F32: 1.5, F16: 1.5, I64: 3, B: True}[dtype]
    for op in ops:
        if op is BinaryOp.POW:
            close(down(backend.binary(op, up(np.abs(a)), 2)), REF.binary(op, np.abs(a),
                                                                           a.dtype.type(2)))
            continue
        sv = a.dtype.type(s)
        close(down(backend.binary(op, up(a), s)), REF.binary(op, a, sv))
        close(down(backend.binary(op, s, up(a))), REF.binary(op, sv, a))


def test_float_semantics_of_numpy(backend, up, down, close):
    a = np.array([7.0, -7.0, 7.0, -7.0, 0.0, 3.5, np.nan, 1.0, -2.0, -8.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 2.0, 0.0, 1.0, np.nan, 3.0, 1 / 3], np.float32)
    with np.errstate(all="ignore"):
        for op in (BinaryOp.FLOOR_DIV, BinaryOp.MOD, BinaryOp.POW, BinaryOp.MAXIMUM,
                   BinaryOp.MINIMUM, BinaryOp.DIV):
            close(down(backend.binary(op, up(a), up(b))), REF.binary(op, a, b), atol=1e-5)
    base = np.array([0.0, 0.0, 0.0, -2.0, -2.0, 1.0, 2.0], np.float32)
    exp = np.array([0.0, 2.0, -1.0, 3.0, 2.0, np.nan, -1.0], np.float32)
    with np.errstate(all="ignore"):
        close(down(backend.binary(BinaryOp.POW, up(base), up(exp))),
              REF.binary(BinaryOp.POW, base, exp))


def test_int_semantics_of_numpy(backend, up, down, close):
    a = np.array([7, -7, 7, -7, 0, 5, 2, -3], np.int64)
    b = np.array([2, 2, -2, -2, 3, 0, 10, 3], np.int64)
    with np.errstate(all="ignore"):
        for op in (BinaryOp.FLOOR_DIV, BinaryOp.MOD):
            close(down(backend.binary(op, up(a), up(b))), REF.binary(op, a, b))
    close(down(backend.binary(BinaryOp.POW, up(a), up(np.abs(b)))),
          REF.binary(BinaryOp.POW, a, np.abs(b)))


def test_strided_operands(backend, up, down, close, rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((8, 6)).astype(np.float32)
    ta, tb = up(a), up(b)
    view_a = backend.slice(ta, ((5, -1, -2), (1, 8, 2)))           # negative and step-2 slices
    view_b = backend.permute(backend.slice(tb, ((1, 8, 2), (5, -1, -2))), (1, 0))
    assert not view_a.is_contiguous() and not view_b.is_contiguous()
    close(down(backend.binary(BinaryOp.SUB, view_a, view_b)),
          a[5::-2, 1::2] - b[1::2, 5::-2].T)
    close(down(backend.unary(UnaryOp.EXP, view_b)), np.exp(b[1::2, 5::-2].T))


def test_where(backend, up, down, close, rng):
    c = rng.random((3, 1, 4)) < 0.5
    for dtype in (F32, F16, I64, B):
        a, b = sample(rng, (5, 1), dtype), sample(rng, (1, 4), dtype)
        close(down(backend.where(up(c), up(a), up(b))), np.where(c, a, b))
        close(down(backend.where(up(c), up(a), b.dtype.type(1))),
              np.where(c, a, b.dtype.type(1)).astype(dtype))
        close(down(backend.where(up(c), a.dtype.type(0), up(b))),
              np.where(c, a.dtype.type(0), b).astype(dtype))


@pytest.mark.parametrize("src", [F32, F16, I32, I64, B], ids=str)
def test_cast(backend, up, down, close, rng, src):
    a = sample(rng, (4, 6), src)
    if src.kind == "f":
        a[0, :3] = [0.0, -0.0, 2.75]
    for dst in (F32, F16, I32, I64, B):
        got = backend.cast(up(a), dt.from_numpy(dst))
        close(down(got), a.astype(dst))


def test_cast_int32_int64_is_metadata_only(backend, up):
    x = up(np.arange(5, dtype=np.int32))
    y = backend.cast(x, dt.int64)
    assert y.handle is x.handle and y.dtype is dt.int64


REDUCE_CASES = [(op, d) for op in ReduceOp for d in (F32, F16, I32, I64, B)
                if not (d == B and op in (ReduceOp.MEAN, ReduceOp.PROD))
                and not (d.kind == "i" and op is ReduceOp.MEAN)]


@pytest.mark.parametrize("op, dtype", REDUCE_CASES, ids=lambda v: getattr(v, "value", str(v)))
def test_reduce(backend, up, down, close, rng, op, dtype):
    a = sample(rng, (3, 4, 70), dtype)
    if op is ReduceOp.PROD:
        a = (a / 8 + 1).astype(dtype) if dtype.kind == "f" else (a % 3 - 1).astype(dtype)
    dims_list = [(0,), (2,), (1,)] if op in (ReduceOp.ARGMAX, ReduceOp.ARGMIN) else \
        [(0,), (2,), (0, 2), (0, 1, 2)]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == F32 else {}
    for dims in dims_list:
        for keepdim in (False, True):
            expected = REF.reduce(op, a, dims, keepdim)
            close(down(backend.reduce(op, up(a), dims, keepdim)), expected, **tol)


def test_reduce_strided_large_and_split(backend, up, down, close, rng):
    a = rng.standard_normal((40, 3000)).astype(np.float32)
    ta = backend.permute(up(a), (1, 0))           # (3000, 40), reduced dim strided
    for op in (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.ARGMIN, ReduceOp.MEAN):
        close(down(backend.reduce(op, ta, (0,), False)), REF.reduce(op, a.T, (0,), False),
              rtol=1e-4, atol=1e-4)
    big = rng.standard_normal(200_000).astype(np.float32)      # two-pass split reduction
    for op in (ReduceOp.SUM, ReduceOp.MEAN, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.ARGMAX):
        close(down(backend.reduce(op, up(big), (0,), True)),
              REF.reduce(op, big.astype(np.float64), (0,), True).astype(
                  np.int64 if op is ReduceOp.ARGMAX else np.float32), rtol=1e-4, atol=1e-3)
    ints = rng.integers(-5, 6, 100_000).astype(np.int64)
    close(down(backend.reduce(ReduceOp.SUM, up(ints), (0,), False)),
          REF.reduce(ReduceOp.SUM, ints, (0,), False))


def test_reduce_nan_and_ties(backend, up, down, close):
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, 1.0, 2.0]], np.float32)
    for op in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.ARGMAX, ReduceOp.ARGMIN, ReduceOp.SUM):
        close(down(backend.reduce(op, up(a), (1,), False)), REF.reduce(op, a, (1,), False))
    many = np.zeros(1000, np.float32)
    many[[300, 700]] = 5.0
    close(down(backend.reduce(ReduceOp.ARGMAX, up(many), (0,), False)), np.array(300))


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64], ids=str)
@pytest.mark.parametrize("sa, sb", [((33, 17), (17, 45)), ((2, 1, 5, 6), (1, 3, 6, 4)),
                                    ((1, 8), (8, 1)), ((4, 64, 32), (4, 32, 64))])
def test_matmul(backend, up, down, close, rng, dtype, sa, sb):
    a, b = sample(rng, sa, dtype), sample(rng, sb, dtype)
    if dtype.kind == "i":
        a, b = a % 5, b % 5
    tol = dict(rtol=1e-2, atol=5e-2) if dtype == F16 else dict(rtol=1e-4, atol=1e-4)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    close(down(backend.matmul(up(a), up(b))), expected, **tol)


def test_matmul_transposed_views_and_empty(backend, up, down, close, rng):
    a = rng.standard_normal((12, 9)).astype(np.float32)
    b = rng.standard_normal((7, 12)).astype(np.float32)
    got = backend.matmul(backend.permute(up(a), (1, 0)), backend.permute(up(b), (1, 0)))
    close(down(got), a.T @ b.T, rtol=1e-4, atol=1e-5)
    close(down(backend.matmul(up(np.zeros((3, 0), np.float32)), up(np.zeros((0, 4), np.float32)))),
          np.zeros((3, 4), np.float32))
    close(down(backend.matmul(up(np.zeros((0, 5), np.float32)), up(np.ones((5, 4), np.float32)))),
          np.zeros((0, 4), np.float32))


@pytest.mark.parametrize("vec4", [True, False])
def test_matmul_small_grid_config(backend, up, down, close, rng, monkeypatch, vec4):
    """GPUs use half-width tiles when the product makes few big tiles (a software adapter
    has no second config: it is forced here so the kernel runs in CI)."""
    from lazyt.backends.wgpu import codegen as cg
    monkeypatch.setattr(backend, "matmul_config",
                        cg.MatmulConfig(bm=128, bn=128, bk=8, tm=8, tn=8, prefetch=False))
    monkeypatch.setattr(backend, "matmul_config_small",
                        cg.MatmulConfig(bm=64, bn=64, bk=16, tm=8, tn=4, pad=4))
    monkeypatch.setattr(backend, "matmul_config_narrow",
                        cg.MatmulConfig(bm=64, bn=32, bk=16, tm=4, tn=4))
    for n in (8, 30, 32):  # outputs of at most 32 columns: the narrow tiles
        a = rng.standard_normal((3, 70, 20)).astype(np.float32)
        b = rng.standard_normal((3, 20, n)).astype(np.float32)
        close(down(backend.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)
        pv = backend.permute(up(np.ascontiguousarray(b.transpose(0, 2, 1))), (0, 2, 1))
        close(down(backend.matmul(up(a), pv)), a @ b, rtol=1e-4, atol=1e-4)
    a = rng.standard_normal((2, 136, 40)).astype(np.float32)
    b = rng.standard_normal((2, 40, 72 if vec4 else 70)).astype(np.float32)
    close(down(backend.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)
    w = rng.standard_normal((72, 40)).astype(np.float32)  # a transposed weight (vec4 along K)
    close(down(backend.matmul(up(a), backend.permute(up(w), (1, 0)))), a @ w.T, rtol=1e-4,
          atol=1e-4)


@pytest.mark.parametrize("cfg", [(32, 32, 8, 4, 4), (128, 64, 8, 8, 4), (64, 64, 16, 4, 4),
                                 (128, 128, 8, 8, 8), (64, 64, 16, 8, 4, 4), (32, 32, 8, 4, 4, 8)],
                         ids=str)
@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_matmul_rhs_contiguous_along_k(backend, up, down, close, rng, monkeypatch, cfg, dtype):
    """x @ W^T with W [N, K] (nn.Linear's weight): rhs loads run along K (vec4). Partial
    tiles, batch dims, offsets and the scalar fallback (K or the row stride not a multiple
    of 4) all give numpy's result, with the workgroup tiles' rows padded (a sixth number) or
    not."""
    from lazyt.backends.wgpu import codegen as cg
    if dtype == F16 and not backend.client.has_f16:
        pytest.skip("the adapter has no shader-f16")
    bm, bn, bk, tm, tn, pad = cfg + (0,) * (6 - len(cfg))
    for name in ("matmul_config", "matmul_config_small"):
        monkeypatch.setattr(backend, name, cg.MatmulConfig(bm=bm, bn=bn, bk=bk, tm=tm, tn=tn,
                                                           pad=pad))
    tol = dict(rtol=1e-2, atol=5e-2) if dtype == F16 else dict(rtol=1e-4, atol=1e-4)
    for (m, k, n) in [(37, 40, 20), (130, 64, 68), (5, 12, 4), (3, 10, 8)]:
        a = sample(rng, (2, m, k), dtype)
        w = sample(rng, (n, k), dtype)
        wt = backend.reshape(backend.permute(up(w), (1, 0)), (1, k, n))
        want = (a.astype(np.float64) @ w.T.astype(np.float64)).astype(dtype)
        close(down(backend.matmul(up(a), wt)), want, **tol)
        # the weight at an offset: rows 1.. of a bigger one (offset k, a multiple of 4 or not)
        big = sample(rng, (n + 1, k), dtype)
        view = backend.slice(up(big), ((1, n + 1, 1), (0, k, 1)))
        wt = backend.reshape(backend.permute(view, (1, 0)), (1, k, n))
        want = (a.astype(np.float64) @ big[1:].T.astype(np.float64)).astype(dtype)
        close(down(backend.matmul(up(a), wt)), want, **tol)


def test_reshape_is_a_view_when_it_can_be(backend, up, down, close):
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    t = up(a)
    v = backend.reshape(t, (2, 3, 8))
    assert v.handle is t.handle and v.is_contiguous()
    sl = backend.slice(t, ((0, 6, 1), (0, 4, 1)))                 # (6, 4) rows of a (6, 8)
    v2 = backend.reshape(sl, (3, 2, 2, 2))
    assert v2.handle is t.handle
    close(down(v2), a[:, :4].reshape(3, 2, 2, 2))
    p = backend.permute(t, (1, 0))
    v3 = backend.reshape(p, (48,))                                # needs a copy
    assert v3.handle is not t.handle
    close(down(v3), a.T.reshape(48))
    close(down(backend.reshape(backend.permute(t, (1, 0)), (8, 2, 3))), a.T.reshape(8, 2, 3))


def test_movement_views(backend, up, down, close):
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    t = up(a)
    close(down(backend.permute(t, (2, 0, 1))), a.transpose(2, 0, 1))
    e = backend.expand(up(a[:, :1, :]), (2, 5, 4))
    assert e.strides[1] == 0
    close(down(e), np.broadcast_to(a[:, :1, :], (2, 5, 4)))
    close(down(backend.expand(up(np.array([1.5], np.float32)), (2, 3))), np.full((2, 3), 1.5, F32))
    close(down(backend.slice(t, ((1, 2, 1), (2, -1, -1), (3, -1, -2)))), a[1:2, 2::-1, 3::-2])
    empty = backend.slice(t, ((0, 2, 1), (1, 1, 1), (0, 4, 1)))
    close(down(empty), a[:, 1:1, :])
    c = backend.contiguous(backend.permute(t, (1, 0, 2)))
    assert c.is_contiguous()
    close(down(c), np.ascontiguousarray(a.transpose(1, 0, 2)))


@pytest.mark.parametrize("dtype", [F32, F16, I64, B], ids=str)
def test_cat(backend, up, down, close, rng, dtype):
    xs = [sample(rng, (2, n, 3), dtype) for n in (1, 4, 0, 2)]
    close(down(backend.cat([up(x) for x in xs], 1)), np.concatenate(xs, 1))
    ys = [sample(rng, (n, 5), dtype) for n in (3, 2)]
    ts = [backend.permute(up(np.ascontiguousarray(y.T)), (1, 0)) for y in ys]   # strided
    close(down(backend.cat(ts, 0)), np.concatenate(ys, 0))


@pytest.mark.parametrize("dtype", [F32, F16, I64, B], ids=str)
def test_gather_family(backend, up, down, close, rng, dtype):
    x = sample(rng, (4, 6), dtype)
    idx = rng.integers(0, 6, (4, 3))
    close(down(backend.gather(up(x), 1, up(idx))), REF.gather(x, 1, idx))
    idx0 = rng.integers(0, 4, (2, 6))
    close(down(backend.gather(up(x), 0, up(idx0))), REF.gather(x, 0, idx0))
    rows = np.array([3, 0, 3, 1])
    close(down(backend.index_select(up(x), 0, up(rows))), REF.index_select(x, 0, rows))
    close(down(backend.index_select(up(x), 1, up(rows))), REF.index_select(x, 1, rows))


@pytest.mark.parametrize("dtype", [F32, F16, I64], ids=str)
def test_scatter_add_and_index_add(backend, up, down, close, rng, dtype):
    x = sample(rng, (4, 6), dtype)
    src = sample(rng, (4, 5), dtype)
    idx = rng.integers(0, 6, (3, 5))              # smaller than src: only its part is used
    close(down(backend.scatter_add(up(x), 1, up(idx), up(src))),
          REF.scatter_add(x, 1, idx, src), atol=1e-2 if dtype == F16 else 1e-6)
    idx0 = rng.integers(0, 4, (4, 6))
    src0 = sample(rng, (4, 6), dtype)
    close(down(backend.scatter_add(up(x), 0, up(idx0), up(src0))),
          REF.scatter_add(x, 0, idx0, src0), atol=1e-2 if dtype == F16 else 1e-6)
    rows = np.array([1, 1, 3, 0, 1])
    s = sample(rng, (5, 6), dtype)
    close(down(backend.index_add(up(x), 0, up(rows), up(s))), REF.index_add(x, 0, rows, s),
          atol=1e-2 if dtype == F16 else 1e-6)
    s1 = sample(rng, (4, 5), dtype)
    close(down(backend.index_add(up(x), 1, up(np.array([5, 0, 5, 2, 5])), up(s1))),
          REF.index_add(x, 1, np.array([5, 0, 5, 2, 5]), s1), atol=1e-2 if dtype == F16 else 1e-6)


def test_scatter_add_is_deterministic(backend, up, down):
    x = np.zeros(8, np.float32)
    idx = np.zeros(4096, np.int64)
    src = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    runs = {down(backend.scatter_add(up(x), 0, up(idx), up(src))).tobytes() for _ in range(3)}
    assert len(runs) == 1
    expected = np.zeros(8, np.float32)
    np.add.at(expected, idx, src)         # the same order: sequential over the index
    np.testing.assert_array_equal(np.frombuffer(runs.pop(), np.float32), expected)


@pytest.mark.parametrize("op", ["gather", "index_select", "scatter_add", "index_add"])
@pytest.mark.parametrize("bad", [6, -1])
def test_index_out_of_range_raises_on_read(backend, up, down, op, bad):
    x = up(np.ones((3, 6), np.float32))
    if op == "gather":
        out = backend.gather(x, 1, up(np.array([[0, bad]] * 3)))
    elif op == "index_select":
        out = backend.index_select(x, 1, up(np.array([0, bad])))
    elif op == "scatter_add":
        out = backend.scatter_add(x, 1, up(np.array([[0, bad]] * 3)),
                                  up(np.ones((3, 2), np.float32)))
    else:
        out = backend.index_add(x, 1, up(np.array([0, bad])), up(np.ones((3, 2), np.float32)))
    with pytest.raises(IndexOutOfRangeError, match=rf"{op}: index {bad} is out of range"):
        down(out)
    np.testing.assert_array_equal(down(x), np.ones((3, 6), np.float32))   # usable afterwards


@pytest.mark.parametrize("dtype, value", [(dt.float32, -2.5), (dt.float16, 0.1),
                                          (dt.int32, -7), (dt.int64, 2**31 - 1),
                                          (dt.bool_, True), (dt.float32, float("nan"))])
def test_full_zeros_empty(backend, down, close, dtype, value):
    close(down(backend.full((3, 5), value, dtype)), np.full((3, 5), value, dtype.np))
    close(down(backend.full((7,), value, dtype)), np.full((7,), value, dtype.np))
    close(down(backend.zeros((2, 3), dtype)), np.zeros((2, 3), dtype.np))
    assert backend.empty((4, 0), dtype).shape == (4, 0)
    close(down(backend.full((), value, dtype)), np.full((), value, dtype.np))


@pytest.mark.parametrize("arr", [np.array([1.5, -2], np.float32), np.array([[1, -2]], np.int32),
                                 np.array([2**31 - 1, -2**31], np.int64),
                                 np.array([True, False]), np.array(0.5, np.float16),
                                 np.zeros((0, 3), np.int64), np.array(7, np.int64)], ids=str)
def test_roundtrip(backend, up, down, close, arr):
    t = up(arr)
    assert t.shape == arr.shape and t.dtype is dt.from_numpy(arr.dtype)
    close(down(t), arr)


def test_int64_range_check(backend, up):
    with pytest.raises(DTypeError, match=r"int64 value 2147483648 does not fit on wgpu:0"):
        up(np.array([1, 2**31], np.int64))
    with pytest.raises(DTypeError, match="does not fit"):
        up(np.array([-2**31 - 1], np.int64))
    with pytest.raises(DTypeError, match="does not fit"):
        backend.full((2,), 2**40, dt.int64)


def test_float64_raises_naming_the_device(backend, up):
    for make in (lambda: up(np.zeros(3)), lambda: backend.full((2,), 1.0, dt.float64),
                 lambda: backend.zeros((2,), dt.float64),
                 lambda: backend.cast(up(np.zeros(2, np.float32)), dt.float64)):
        with pytest.raises(DTypeError, match=r"float64 is not supported on wgpu:0"):
            make()
    with pytest.raises(DTypeError, match="float64 is not supported on wgpu"):
        lazyt.tensor([1.0, 2.0], dtype=lazyt.float64, device="wgpu")


def test_zero_size_and_0d(backend, up, down, close):
    z = np.zeros((0, 4), np.float32)
    s = np.array(2.5, np.float32)
    close(down(backend.unary(UnaryOp.EXP, up(z))), z)
    close(down(backend.binary(BinaryOp.ADD, up(z), up(np.ones(4, np.float32)))), z)
    close(down(backend.reduce(ReduceOp.SUM, up(z), (0,), False)), np.zeros(4, np.float32))
    close(down(backend.reduce(ReduceOp.PROD, up(z), (0,), True)), np.ones((1, 4), np.float32))
    close(down(backend.reduce(ReduceOp.SUM, up(z), (1,), False)), np.zeros(0, np.float32))
    close(down(backend.unary(UnaryOp.NEG, up(s))), -s)
    close(down(backend.binary(BinaryOp.MUL, up(s), up(np.arange(3, dtype=np.float32)))),
          s * np.arange(3, dtype=np.float32))
    close(down(backend.reduce(ReduceOp.MAX, up(s), (), False)), s)
    close(down(backend.matmul(up(np.ones((2, 0, 3), np.float32)),
                              up(np.ones((2, 3, 5), np.float32)))), np.zeros((2, 0, 5), np.float32))
    with pytest.raises(ShapeError):
        backend.reduce(ReduceOp.MAX, up(z), (0,), False)
