"""Elementwise ops against numpy: arithmetic with broadcasting and scalars on either side, dtype
promotion (tensor-tensor = torch.promote_types, Python scalars weak), comparisons, logical ops,
where, maximum/minimum, clamp, and the math/activation functions."""
import math
import operator

import numpy as np
import pytest

import lazyt

F32, F64, F16, I32, I64, B = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
                              np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))
ALL_DTYPES = [F32, F64, F16, I32, I64, B]


def torch_promote(da, db):
    """torch.promote_types of two numpy dtypes: the higher category's (bool < int < float),
    within one category the wider (numpy would make int64 with float32 float64)."""
    cat = {"b": 0, "i": 1, "f": 2}
    if cat[da.kind] != cat[db.kind]:
        return da if cat[da.kind] > cat[db.kind] else db
    return da if da.itemsize >= db.itemsize else db


def data(rng, shape, dtype, kind="any"):
    """Random test values: kind 'any', 'positive' (> 0) or 'nonzero'."""
    dtype = np.dtype(dtype)
    if dtype == B:
        out = rng.random(shape) < 0.5
        return np.ones(shape, bool) if kind in ("positive", "nonzero") else out
    if dtype.kind == "f":
        if kind == "positive":
            return rng.uniform(0.5, 3.0, shape).astype(dtype)
        v = rng.uniform(-3.0, 3.0, shape)
        if kind == "nonzero":
            v = np.where(np.abs(v) < 0.25, 1.0, v)
        return v.astype(dtype)
    if kind == "positive":
        return rng.integers(1, 6, shape).astype(dtype)
    v = rng.integers(-5, 6, shape)
    if kind == "nonzero":
        v = np.where(v == 0, 3, v)
    return v.astype(dtype)


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


def np_binary(name, a, b):
    with np.errstate(all="ignore"):
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                "pow": np.power, "floordiv": np.floor_divide, "mod": np.mod}[name](a, b)


PY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "truediv": operator.truediv, "pow": operator.pow, "floordiv": operator.floordiv,
          "mod": operator.mod}

BROADCAST_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)),
    ((), (2, 3)), ((2, 3), ()), ((), ()), ((0, 3), (1, 3)), ((0,), (0,)), ((2, 0, 3), (3,)),
    ((1,), (0,)), ((5, 1, 1), (1, 4, 1)), ((1, 1), (3, 1, 2)),
]


def _operands(rng, name, sa, sb, dtype):
    a = data(rng, sa, dtype, "positive" if name == "pow" else "any")
    if name in ("truediv", "floordiv", "mod"):
        b = data(rng, sb, dtype, "nonzero")
    elif name == "pow":
        b = data(rng, sb, dtype, "any") if dtype.kind == "f" else rng.integers(0, 4, sb).astype(dtype)
    else:
        b = data(rng, sb, dtype)
    return a, b


def _expected(name, a, b):
    """numpy reference; true division of ints gives float32."""
    if name == "truediv" and np.result_type(a, b).kind in "biu":
        return np_binary(name, np.asarray(a, np.float64), np.asarray(b, np.float64)).astype(F32)
    return np_binary(name, a, b)


@pytest.mark.parametrize("sa, sb", BROADCAST_SHAPES, ids=[f"{a}-{b}" for a, b in BROADCAST_SHAPES])
@pytest.mark.parametrize("name", list(PY_OPS))
def test_binary_broadcasting_float32(device, check, rng, name, sa, sb):
    a, b = _operands(rng, name, sa, sb, F32)
    check(PY_OPS[name](T(a, device), T(b, device)), _expected(name, a, b), device=device)


@pytest.mark.parametrize("sa, sb", BROADCAST_SHAPES[:8] + BROADCAST_SHAPES[8:10],
                         ids=[f"{a}-{b}" for a, b in BROADCAST_SHAPES[:10]])
@pytest.mark.parametrize("name", list(PY_OPS))
def test_binary_broadcasting_int64(device, check, rng, name, sa, sb):
    a, b = _operands(rng, name, sa, sb, I64)
    check(PY_OPS[name](T(a, device), T(b, device)), _expected(name, a, b), device=device)


PROMOTION_CASES = [(name, da, db) for name in ("add", "truediv", "sub")
                   for da in ALL_DTYPES for db in ALL_DTYPES
                   if not (name == "sub" and da == B and db == B)]  # numpy has no bool - bool


@pytest.mark.parametrize("name, da, db", PROMOTION_CASES,
                         ids=[f"{n}-{a}-{b}" for n, a, b in PROMOTION_CASES])
def test_tensor_tensor_promotion(device, check, rng, name, da, db):
    a = data(rng, (2, 3), da)
    b = data(rng, (3,), db, "nonzero" if name == "truediv" else "any")
    pt = torch_promote(da, db)
    ref = np_binary(name, a.astype(np.float64), b.astype(np.float64))
    if name == "truediv":
        expected = ref.astype(pt if pt.kind == "f" else F32)
    else:
        expected = np_binary(name, a.astype(pt), b.astype(pt))
    out = PY_OPS[name](T(a, device), T(b, device))
    check(out, expected, device=device)


@pytest.mark.parametrize("tdtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [-3, 2.5], ids=["int-3", "float2.5"])
@pytest.mark.parametrize("name", ["add", "sub", "mul"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_python_scalar_is_weak(device, check, rng, tdtype, scalar, name, side):
    a = data(rng, (2, 3), tdtype)
    t = T(a, device)
    if isinstance(scalar, float):
        rd = tdtype if tdtype.kind == "f" else F32
    else:
        rd = I64 if tdtype == B else tdtype
    x = a.astype(np.float64) if rd.kind == "f" else a.astype(np.int64)
    if side == "right":
        out = PY_OPS[name](t, scalar)
        expected = np_binary(name, x, scalar).astype(rd)
    else:
        out = PY_OPS[name](scalar, t)
        expected = np_binary(name, scalar, x).astype(rd)
    check(out, expected, device=device)


@pytest.mark.parametrize("tdtype", [I32, I64, B, F16, F32, F64], ids=str)
def test_true_division_dtypes_with_scalars(device, check, rng, tdtype):
    a = data(rng, (4,), tdtype, "nonzero")
    t = T(a, device)
    rd = tdtype if tdtype.kind == "f" else F32
    x = a.astype(np.float64)
    check(t / 2, (x / 2).astype(rd))
    check(3 / t, (3 / x).astype(rd))
    check(t / 0.5, (x / 0.5).astype(rd))
    check(1.5 / t, (1.5 / x).astype(rd))
    check(t / t, (x / x).astype(rd))


@pytest.mark.parametrize("dtype", [I64, I32, np.dtype(np.int16), np.dtype(np.int8), F32, F64],
                         ids=str)
def test_floordiv_mod_sign_semantics(device, check, dtype):
    a = np.array([-7, -3, 3, 7, 0, -8], dtype)
    b = np.array([2, -2, 3, -4, 5, 3], dtype)
    ta, tb = T(a, device), T(b, device)
    check(ta // tb, np.floor_divide(a, b))
    check(ta % tb, np.mod(a, b))
    check(ta // 2, np.floor_divide(a, dtype.type(2)))
    check(ta % 3, np.mod(a, dtype.type(3)))
    check(ta // -2, np.floor_divide(a, dtype.type(-2)))
    check(ta % -3, np.mod(a, dtype.type(-3)))
    check(-7 // tb, np.floor_divide(dtype.type(-7), b))
    check(7 % tb, np.mod(dtype.type(7), b))


def test_floordiv_mod_float_by_int_scalar(device, check):
    a = np.array([-2.5, -1.0, 0.5, 3.75], np.float32)
    t = T(a, device)
    check(t // 2, np.floor_divide(a, np.float32(2)))
    check(t % 2, np.mod(a, np.float32(2)))
    check(t // 0.5, np.floor_divide(a, np.float32(0.5)))
    check(t % 1.5, np.mod(a, np.float32(1.5)))
    i = T(np.array([-7, 7], np.int64), device)
    check(i // 2.0, np.floor_divide(np.array([-7, 7], np.float32), np.float32(2)))
    check(i % 2.5, np.mod(np.array([-7, 7], np.float32), np.float32(2.5)))


def test_pow_forms(device, check, rng):
    ai = np.array([[0, 1, 2], [3, -2, 5]], np.int64)
    ti = T(ai, device)
    check(ti ** 2, ai ** 2)
    check(ti ** 0, ai ** 0)
    check(2 ** T(np.array([0, 1, 5]), device), np.array([1, 2, 32], np.int64))
    check(T(np.array([1, 4, 9]), device) ** 0.5, np.array([1, 2, 3], np.float32))
    af = data(rng, (3, 4), F32, "positive")
    tf = T(af, device)
    check(tf ** 2, af ** np.float32(2))
    check(tf ** 0.5, np.sqrt(af))
    check(tf ** -1.5, (af.astype(np.float64) ** -1.5).astype(F32))
    check(2.0 ** tf, (2.0 ** af.astype(np.float64)).astype(F32))
    check(3 ** tf, (3.0 ** af.astype(np.float64)).astype(F32))
    e = data(rng, (4,), F32)
    check(tf ** T(e, device), (af.astype(np.float64) ** e.astype(np.float64)).astype(F32))
    neg = np.array([-2.0, -1.0, 3.0], np.float32)
    check(T(neg, device) ** 2, neg ** 2)
    check(T(neg, device) ** 3, neg ** 3)


@pytest.mark.parametrize("dtype", [F32, F64, F16, I32, I64, np.dtype(np.int16),
                                   np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (5,)], ids=str)
def test_neg_abs(device, check, rng, dtype, shape):
    a = data(rng, shape, dtype)
    t = T(a, device)
    check(-t, -a, device=device)
    check(abs(t), np.abs(a), device=device)
    check(-(-t), a)


# ------------------------------------------------------------------ comparisons and logic
CMP = [("eq", operator.eq, np.equal), ("ne", operator.ne, np.not_equal),
       ("lt", operator.lt, np.less), ("le", operator.le, np.less_equal),
       ("gt", operator.gt, np.greater), ("ge", operator.ge, np.greater_equal)]


@pytest.mark.parametrize("name, op, npop", CMP, ids=[c[0] for c in CMP])
@pytest.mark.parametrize("sa, sb", BROADCAST_SHAPES[:10], ids=[f"{a}-{b}" for a, b in BROADCAST_SHAPES[:10]])
def test_comparisons_broadcast(device, check, rng, name, op, npop, sa, sb):
    a = rng.integers(0, 3, sa).astype(np.float32)
    b = rng.integers(0, 3, sb).astype(np.float32)
    check(op(T(a, device), T(b, device)), npop(a, b), device=device)


@pytest.mark.parametrize("name, op, npop", CMP, ids=[c[0] for c in CMP])
def test_comparisons_with_scalars(device, check, name, op, npop):
    a = np.array([[0, 1, 2], [3, 1, -1]], np.int64)
    b = np.array([0.0, 1.5, 2.0], np.float32)
    ta, tb = T(a, device), T(b, device)
    check(op(ta, 1), npop(a, 1))
    check(op(1, ta), npop(1, a))
    check(op(tb, 1.5), npop(b, 1.5))
    check(op(1.5, tb), npop(1.5, b))
    check(op(ta, 1.5), npop(a, 1.5))
    check(op(T(np.array(2.0, np.float32), device), 2), np.array(npop(2.0, 2)))
    bo = np.array([True, False, True])
    check(op(T(bo, device), T(bo[::-1].copy(), device)), npop(bo, bo[::-1]))


@pytest.mark.parametrize("name, op, npop", CMP, ids=[c[0] for c in CMP])
def test_comparisons_promote_int64_and_float32(device, check, name, op, npop):
    a = np.array([[0, 1, 2], [3, 1, -1]], np.int64)
    b = np.array([0.0, 1.5, 2.0], np.float32)
    ta, tb = T(a, device), T(b, device)
    check(op(ta, tb), npop(a, b))
    check(op(tb, ta), npop(b, a))


def test_comparison_returns_tensor_and_tensor_stays_hashable(device):
    t = T(np.array([1.0, 2.0], np.float32), device)
    u = T(np.array([1.0, 3.0], np.float32), device)
    assert isinstance(t == u, lazyt.Tensor)
    assert isinstance(t != u, lazyt.Tensor)
    np.testing.assert_array_equal((t == u).numpy(), [True, False])
    assert hash(t) == hash(t)
    d = {t: "t", u: "u"}
    assert d[t] == "t" and d[u] == "u"
    assert len({t, u, t}) == 2
    assert t in {t}


@pytest.mark.parametrize("sa, sb", [((4,), (4,)), ((2, 1), (1, 3)), ((), (3,)), ((0, 2), (2,))],
                         ids=str)
def test_logical_and_or_not(device, check, rng, sa, sb):
    a = rng.random(sa) < 0.5
    b = rng.random(sb) < 0.5
    ta, tb = T(a, device), T(b, device)
    check(ta & tb, a & b, device=device)
    check(ta | tb, a | b, device=device)
    check(~ta, ~a, device=device)
    check(~(ta & tb) | ta, ~(a & b) | a)


def test_logical_ops_of_comparisons(device, check, rng):
    a = data(rng, (3, 4), F32)
    t = T(a, device)
    check((t > 0) & (t < 1), (a > 0) & (a < 1))
    check((t < -1) | (t > 1), (a < -1) | (a > 1))
    check(~(t > 0), ~(a > 0))


# ------------------------------------------------------------------ where / maximum / minimum / clamp
@pytest.mark.parametrize("sc, sa, sb", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1)),
                                        ((3,), (2, 1), ()), ((1, 3), (2, 1), (3,)),
                                        ((), (4,), (4,)), ((0, 3), (3,), (1, 3))], ids=str)
def test_where_tensors_broadcast(device, check, rng, sc, sa, sb):
    c = rng.random(sc) < 0.5
    a = data(rng, sa, F32)
    b = data(rng, sb, F32)
    out = lazyt.where(T(c, device), T(a, device), T(b, device))
    check(out, np.where(c, a, b), device=device)


def test_where_scalars_and_dtypes(device, check, rng):
    c = rng.random((3, 4)) < 0.5
    a = data(rng, (3, 4), F32)
    tc, ta = T(c, device), T(a, device)
    check(lazyt.where(tc, ta, 0.0), np.where(c, a, np.float32(0)))
    check(lazyt.where(tc, ta, 0), np.where(c, a, np.float32(0)))
    check(lazyt.where(tc, -1.5, ta), np.where(c, np.float32(-1.5), a))
    ai = np.arange(12).reshape(3, 4)
    check(lazyt.where(tc, T(ai, device), 7), np.where(c, ai, 7))
    check(lazyt.where(tc, T(ai, device), 0.5), np.where(c, ai, 0.5).astype(F32))  # weak float
    cond_from_cmp = ta > 0
    check(lazyt.where(cond_from_cmp, ta, -ta), np.abs(a))


def test_where_promotes_like_torch(device, check, rng):
    c = rng.random((3, 4)) < 0.5
    a = data(rng, (3, 4), F32)
    ai = np.arange(12).reshape(3, 4)
    tc, ta = T(c, device), T(a, device)
    a64 = data(rng, (4,), F64)
    check(lazyt.where(tc, ta, T(a64, device)), np.where(c, a, a64))          # float64
    check(lazyt.where(tc, T(ai, device), ta), np.where(c, ai.astype(F32), a))  # int64+f32 -> f32


def test_tensor_where_method(device, check, rng):
    c = rng.random((2, 3)) < 0.5
    a = data(rng, (2, 3), F32)
    o = data(rng, (3,), F32)
    check(T(a, device).where(T(c, device), T(o, device)), np.where(c, a, o))
    check(T(a, device).where(T(c, device), 0.0), np.where(c, a, np.float32(0)))


@pytest.mark.parametrize("fn, npfn", [("maximum", np.maximum), ("minimum", np.minimum)])
@pytest.mark.parametrize("da, db, sa, sb", [
    (F32, F32, (2, 3), (2, 3)), (F32, F32, (2, 1), (1, 3)), (I64, I64, (4,), ()),
    (I64, F32, (3,), (3,)), (F64, F32, (2, 2), (2,)), (I32, I64, (3,), (3,)),
    (F32, F32, (0, 3), (3,)), (F32, F32, (), ()),
], ids=str)
def test_maximum_minimum(device, check, rng, fn, npfn, da, db, sa, sb):
    a, b = data(rng, sa, da), data(rng, sb, db)
    pt = torch_promote(da, db)
    check(getattr(lazyt, fn)(T(a, device), T(b, device)), npfn(a.astype(pt), b.astype(pt)),
          device=device)


def test_clamp(device, check, rng):
    a = data(rng, (3, 4), F32)
    t = T(a, device)
    check(t.clamp(min=-1.0, max=1.0), np.clip(a, -1, 1))
    check(t.clamp(-1.0, 1.0), np.clip(a, -1, 1))
    check(t.clamp(min=0.0), np.maximum(a, np.float32(0)))
    check(t.clamp(max=0.5), np.minimum(a, np.float32(0.5)))
    check(t.clamp(min=0), np.maximum(a, np.float32(0)))
    lo = data(rng, (4,), F32) - 1
    hi = lo + 1.5
    check(t.clamp(min=T(lo, device), max=T(hi, device)), np.minimum(np.maximum(a, lo), hi))
    check(t.clamp(min=T(lo, device)), np.maximum(a, lo))
    ai = np.arange(-5, 5)
    check(T(ai, device).clamp(-2, 3), np.clip(ai, -2, 3))
    check(T(np.zeros((0, 2), np.float32), device).clamp(0, 1), np.zeros((0, 2), np.float32))


# ------------------------------------------------------------------ math and activations
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


MATH = {
    "exp": (np.exp, "any"), "log": (np.log, "positive"), "sqrt": (np.sqrt, "positive"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "positive"), "tanh": (np.tanh, "any"),
    "sigmoid": (_sigmoid, "any"), "sin": (np.sin, "any"), "cos": (np.cos, "any"),
    "erf": (_erf, "any"), "relu": (lambda x: np.maximum(x, 0), "any"),
    "gelu": (_gelu, "any"), "silu": (lambda x: x * _sigmoid(x), "any"),
}
FLOAT_MATH = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "erf"]


def _tol(dtype):
    return dict(rtol=5e-3, atol=5e-3) if dtype == F16 else {}


@pytest.mark.parametrize("name", list(MATH))
@pytest.mark.parametrize("dtype", [F32, F64, F16], ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)], ids=str)
def test_math_functions(device, check, rng, name, dtype, shape):
    ref, kind = MATH[name]
    a = data(rng, shape, dtype, kind)
    expected = np.asarray(ref(a.astype(np.float64))).astype(dtype)
    t = T(a, device)
    check(getattr(t, name)(), expected, device=device, **_tol(dtype))
    check(getattr(lazyt, name)(t), expected, device=device, **_tol(dtype))


@pytest.mark.parametrize("name", FLOAT_MATH)
@pytest.mark.parametrize("dtype", [I64, I32, np.dtype(np.int16), np.dtype(np.uint8)], ids=str)
def test_float_math_on_ints_gives_float32(device, check, name, dtype):
    ref, kind = MATH[name]
    a = np.array([[1, 2, 3], [4, 1, 2]], dtype)
    expected = np.asarray(ref(a.astype(np.float64))).astype(F32)
    check(getattr(T(a, device), name)(), expected)
    check(getattr(lazyt, name)(T(a, device)), expected)


def test_relu_on_int_keeps_int(device, check):
    a = np.array([-3, 0, 2], np.int64)
    check(T(a, device).relu(), np.maximum(a, 0))


def test_math_special_values(device, check):
    x = np.array([-30.0, -1.0, 0.0, 1.0, 30.0], np.float32)
    t = T(x, device)
    check(t.sigmoid(), _sigmoid(x.astype(np.float64)).astype(F32))
    check(t.erf(), _erf(x.astype(np.float64)).astype(F32))
    check(t.gelu(), _gelu(x.astype(np.float64)).astype(F32))
    check(t.relu(), np.maximum(x, 0))
    z = T(np.array([0.0, 1.0, 4.0], np.float32), device)
    check(z.log(), np.array([-np.inf, 0.0, math.log(4.0)], np.float32))
    check(z.rsqrt(), np.array([np.inf, 1.0, 0.5], np.float32))


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_gelu_tanh_approximation(device, check, rng, dtype):
    a = data(rng, (4, 5), dtype)
    expected = _gelu_tanh(a.astype(np.float64)).astype(dtype)
    t = T(a, device)
    check(t.gelu(approximate="tanh"), expected)
    check(lazyt.gelu(t, approximate="tanh"), expected)
    # the two forms differ (by up to ~1e-3), so the exact form must not be the tanh one
    exact = t.gelu().numpy().astype(np.float64)
    assert np.max(np.abs(exact - _gelu_tanh(a.astype(np.float64)))) > 1e-5


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("shape, dim", [((5,), 0), ((5,), -1), ((3, 4), 0), ((3, 4), 1),
                                        ((3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), -3),
                                        ((0, 4), 1), ((3, 1), 1)], ids=str)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_softmax_log_softmax(device, check, rng, shape, dim, dtype):
    a = data(rng, shape, dtype)
    x = a.astype(np.float64)
    t = T(a, device)
    check(t.softmax(dim), _softmax(x, dim).astype(dtype), device=device)
    check(lazyt.softmax(t, dim), _softmax(x, dim).astype(dtype))
    check(t.log_softmax(dim), _log_softmax(x, dim).astype(dtype), device=device)
    check(lazyt.log_softmax(t, dim), _log_softmax(x, dim).astype(dtype))


def test_softmax_is_stable_for_large_inputs(device, check):
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    t = T(a, device)
    check(t.softmax(-1), _softmax(a.astype(np.float64), -1).astype(F32))
    check(t.log_softmax(-1), _log_softmax(a.astype(np.float64), -1).astype(F32))
    assert np.isfinite(t.softmax(1).numpy()).all()


def test_composite_expression(device, check, rng):
    a = data(rng, (3, 4), F32)
    b = data(rng, (4,), F32, "positive")
    x = a.astype(np.float64)
    y = b.astype(np.float64)
    ta, tb = T(a, device), T(b, device)
    out = ((ta * 2 + tb) / tb - 1).exp().sum(dim=1) + (ta.relu() * tb).mean()
    expected = np.exp((x * 2 + y) / y - 1).sum(axis=1) + (np.maximum(x, 0) * y).mean()
    check(out, expected.astype(F32), rtol=1e-5)


@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_0d(device, check, dim):
    t = T(np.array(3.0, np.float32), device)
    check(t.softmax(dim), np.array(1.0, np.float32))
    check(t.log_softmax(dim), np.array(0.0, np.float32))
