"""Type promotion follows torch (`torch.result_type`): categories bool < integer < floating;
between dimensioned tensors the higher category's dtype, within a category the wider; 0-d
tensors and Python numbers count by category only.

The expected tables are written out by hand from torch's documented rules (torch is not a
dependency) and were checked against torch 2.13 (`torch.promote_types` / `torch.result_type`
for every pair of these nine dtypes); `test_tables_match_torch` checks them, and lazyt, against
torch where it is installed."""
import numpy as np
import pytest

import lazyt
from lazyt import promotion as pr

B, U8, I8, I16, I32, I64, F16, F32, F64 = (
    lazyt.bool_, lazyt.uint8, lazyt.int8, lazyt.int16, lazyt.int32, lazyt.int64,
    lazyt.float16, lazyt.float32, lazyt.float64)
DTYPES = (B, U8, I8, I16, I32, I64, F16, F32, F64)

# torch.promote_types: row dtype with column dtype, two dimensioned tensors (or two 0-d ones).
# uint8 with int8 is int16: the narrowest signed integer holding both.
#            bool  uint8 int8  int16 int32 int64 f16   f32   f64
TENSOR_TENSOR = {
    B:   (B,   U8,  I8,  I16, I32, I64, F16, F32, F64),
    U8:  (U8,  U8,  I16, I16, I32, I64, F16, F32, F64),
    I8:  (I8,  I16, I8,  I16, I32, I64, F16, F32, F64),
    I16: (I16, I16, I16, I16, I32, I64, F16, F32, F64),
    I32: (I32, I32, I32, I32, I32, I64, F16, F32, F64),
    I64: (I64, I64, I64, I64, I64, I64, F16, F32, F64),
    F16: (F16, F16, F16, F16, F16, F16, F16, F32, F64),
    F32: (F32, F32, F32, F32, F32, F32, F32, F32, F64),
    F64: (F64, F64, F64, F64, F64, F64, F64, F64, F64),
}

# A dimensioned tensor (row) with a 0-d tensor (column): the 0-d tensor counts only when its
# category is higher (then its dtype wins: int64 with a 0-d float64 is float64 in torch; a
# uint8 tensor with a 0-d int8 stays uint8).
#            bool  uint8 int8  int16 int32 int64 f16   f32   f64   (0-d)
TENSOR_ZERO_DIM = {
    B:   (B,   U8,  I8,  I16, I32, I64, F16, F32, F64),
    U8:  (U8,  U8,  U8,  U8,  U8,  U8,  F16, F32, F64),
    I8:  (I8,  I8,  I8,  I8,  I8,  I8,  F16, F32, F64),
    I16: (I16, I16, I16, I16, I16, I16, F16, F32, F64),
    I32: (I32, I32, I32, I32, I32, I32, F16, F32, F64),
    I64: (I64, I64, I64, I64, I64, I64, F16, F32, F64),
    F16: (F16, F16, F16, F16, F16, F16, F16, F16, F16),
    F32: (F32, F32, F32, F32, F32, F32, F32, F32, F32),
    F64: (F64, F64, F64, F64, F64, F64, F64, F64, F64),
}

# A tensor (dimensioned or 0-d, row) with a Python number (column): a float is the default
# float (float32), an int the default int (int64), each counting only when its category is
# higher than the tensor's.
SCALARS = (True, 2, 2.5)
#            True  2     2.5
TENSOR_SCALAR = {
    B:   (B,   I64, F32),
    U8:  (U8,  U8,  F32),
    I8:  (I8,  I8,  F32),
    I16: (I16, I16, F32),
    I32: (I32, I32, F32),
    I64: (I64, I64, F32),
    F16: (F16, F16, F16),
    F32: (F32, F32, F32),
    F64: (F64, F64, F64),
}

PAIRS = [(a, b) for a in DTYPES for b in DTYPES]


def _skip_unsupported(device, *dtypes):
    if device.base == "wgpu" and F64 in dtypes:
        pytest.skip("wgpu has no float64 (DESIGN.md, dtypes per backend)")


def _values(d, n=3):
    """Small values every dtype holds exactly (bools: True, False, True)."""
    return np.array([1, 0, 3][:n]).astype(d.np)


def _expected(op, a, b, d):
    return op(np.asarray(a).astype(d.np), np.asarray(b).astype(d.np))


def _ids(pairs):
    return [f"{a.name}-{b.name}" for a, b in pairs]


# ------------------------------------------------------------------ the rule itself
class _Meta:
    """A stand-in tensor for `result_type`: a dtype and a rank."""

    def __init__(self, dtype, ndim):
        self.dtype, self.ndim = dtype, ndim


@pytest.mark.parametrize("a, b", PAIRS, ids=_ids(PAIRS))
def test_result_type_tables(a, b):
    i, j = DTYPES.index(a), DTYPES.index(b)
    assert lazyt.dtype.promote(a, b) is TENSOR_TENSOR[a][j]
    assert pr.result_type(_Meta(a, 1), _Meta(b, 2)) is TENSOR_TENSOR[a][j]
    assert pr.result_type(_Meta(a, 0), _Meta(b, 0)) is TENSOR_TENSOR[a][j]
    assert pr.result_type(_Meta(a, 1), _Meta(b, 0)) is TENSOR_ZERO_DIM[a][j]
    assert pr.result_type(_Meta(b, 0), _Meta(a, 1)) is TENSOR_ZERO_DIM[a][j]
    assert pr.pair_dtype(a, False, b, True) is TENSOR_ZERO_DIM[a][j]
    assert pr.pair_dtype(b, True, a, False) is TENSOR_ZERO_DIM[a][j]
    assert TENSOR_TENSOR[b][i] is TENSOR_TENSOR[a][j]  # the table is symmetric


@pytest.mark.parametrize("d", DTYPES, ids=[d.name for d in DTYPES])
def test_result_type_with_python_numbers(d):
    for s, want in zip(SCALARS, TENSOR_SCALAR[d]):
        assert pr.result_type(_Meta(d, 2), s) is want, s
        assert pr.result_type(s, _Meta(d, 0)) is want, s
        assert lazyt.dtype.promote_scalar(d, lazyt.dtype.scalar_kind(s)) is want, s


def test_result_type_of_three_groups():
    # dimensioned int32, 0-d int64, a float: the float's category is higher than both
    assert pr.result_type(_Meta(I32, 1), _Meta(I64, 0), 2.5) is F32
    # a 0-d float16 is higher than the int tensor; the float number adds nothing to it
    assert pr.result_type(_Meta(I32, 1), _Meta(F16, 0), 2.5) is F16
    assert pr.result_type(_Meta(B, 1), _Meta(B, 0), 2) is I64
    assert pr.result_type(_Meta(F16, 1), _Meta(F64, 0), 2.5) is F16
    assert pr.result_type(_Meta(I32, 2), _Meta(I64, 1)) is I64   # both dimensioned
    assert pr.result_type(_Meta(F32, 0), _Meta(F64, 0), 2) is F64
    assert pr.result_type(2, 2.5) is F32 and pr.result_type(True, 2) is I64
    assert pr.result_type(True, False) is B
    assert pr.result_type(np.float64(2.5), _Meta(I32, 1)) is F32   # numpy scalars are numbers
    with pytest.raises(lazyt.DTypeError, match="result_type"):
        pr.result_type()


# ------------------------------------------------------------------ ops on every device
@pytest.mark.parametrize("a, b", PAIRS, ids=_ids(PAIRS))
def test_tensor_tensor(device, check, a, b):
    want = TENSOR_TENSOR[a][DTYPES.index(b)]
    _skip_unsupported(device, a, b, want)
    x = lazyt.tensor(_values(a), device=device)
    y = lazyt.tensor(_values(b)[::-1].copy(), device=device)
    check(x + y, _expected(np.add, _values(a), _values(b)[::-1], want))
    check(y * x, _expected(np.multiply, _values(b)[::-1], _values(a), want))
    check(x == y, _values(a).astype(want.np) == _values(b)[::-1].astype(want.np))
    # two 0-d tensors promote as two dimensioned ones
    x0, y0 = lazyt.tensor(_values(a)[2], device=device), lazyt.tensor(_values(b)[0], device=device)
    check(x0 + y0, _expected(np.add, _values(a)[2], _values(b)[0], want))


@pytest.mark.parametrize("a, b", PAIRS, ids=_ids(PAIRS))
def test_tensor_zero_dim(device, check, a, b):
    want = TENSOR_ZERO_DIM[a][DTYPES.index(b)]
    _skip_unsupported(device, a, b, want)
    x = lazyt.tensor(_values(a), device=device)
    z = lazyt.tensor(_values(b)[2], device=device)           # 0-d
    check(x + z, _expected(np.add, _values(a), _values(b)[2], want))
    check(z + x, _expected(np.add, _values(b)[2], _values(a), want))
    check(lazyt.maximum(z, x), _expected(np.maximum, _values(b)[2], _values(a), want))


@pytest.mark.parametrize("d", DTYPES, ids=[d.name for d in DTYPES])
def test_tensor_python_number(device, check, d):
    _skip_unsupported(device, d)
    x = lazyt.tensor(_values(d), device=device)
    x0 = lazyt.tensor(_values(d)[2], device=device)
    for s, want in zip(SCALARS, TENSOR_SCALAR[d]):
        check(x + s, _expected(np.add, _values(d), s, want))
        check(s + x, _expected(np.add, s, _values(d), want))
        check(x0 * s, _expected(np.multiply, _values(d)[2], s, want))


def test_the_issue_examples(device, check):
    i32 = lazyt.tensor(np.array([1, 2, 3], np.int32), device=device)
    f32 = lazyt.tensor(np.array([0.5, 1.5, 2.5], np.float32), device=device)
    # numpy's rule gave float64 here, which wgpu cannot hold
    check(i32 + f32, np.array([1.5, 3.5, 5.5], np.float32))
    check(i32 + 2.5, np.array([3.5, 4.5, 5.5], np.float32))
    check(i32 + True, np.array([2, 3, 4], np.int32))
    # a comparison is computed in the promoted dtype: 2.5 is not truncated to 2
    check(i32 < lazyt.tensor(np.float32(2.5), device=device), np.array([True, True, False]))
    check(i32 < 2.5, np.array([True, True, False]))


@pytest.mark.parametrize("a, b", PAIRS, ids=_ids(PAIRS))
def test_where(device, check, a, b):
    want = TENSOR_TENSOR[a][DTYPES.index(b)]
    _skip_unsupported(device, a, b, want)
    cond = lazyt.tensor(np.array([True, False, True]), device=device)
    x, y = lazyt.tensor(_values(a), device=device), lazyt.tensor(_values(b), device=device)
    ref = np.where([True, False, True], _values(a).astype(want.np), _values(b).astype(want.np))
    check(lazyt.where(cond, x, y), ref)
    zero_dim = TENSOR_ZERO_DIM[a][DTYPES.index(b)]
    if device.base != "wgpu" or zero_dim is not F64:
        y0 = lazyt.tensor(_values(b)[2], device=device)
        check(lazyt.where(cond, x, y0),
              np.where([True, False, True], _values(a).astype(zero_dim.np),
                       _values(b)[2].astype(zero_dim.np)))


@pytest.mark.parametrize("d", DTYPES, ids=[d.name for d in DTYPES])
def test_where_python_numbers(device, check, d):
    _skip_unsupported(device, d)
    cond = lazyt.tensor(np.array([True, False, True]), device=device)
    x = lazyt.tensor(_values(d), device=device)
    for s, want in zip(SCALARS, TENSOR_SCALAR[d]):
        check(lazyt.where(cond, x, s),
              np.where([True, False, True], _values(d).astype(want.np), np.asarray(s, want.np)))
    check(lazyt.where(cond, 1.0, 0), np.array([1.0, 0.0, 1.0], np.float32))
    check(lazyt.where(cond, 1, False), np.array([1, 0, 1], np.int64))


@pytest.mark.parametrize("a, b", PAIRS, ids=_ids(PAIRS))
def test_cat_and_stack(device, check, a, b):
    want = TENSOR_TENSOR[a][DTYPES.index(b)]
    _skip_unsupported(device, a, b, want)
    x, y = lazyt.tensor(_values(a), device=device), lazyt.tensor(_values(b), device=device)
    ref = [_values(a).astype(want.np), _values(b).astype(want.np)]
    check(lazyt.cat([x, y]), np.concatenate(ref))
    check(lazyt.stack([x, y]), np.stack(ref))
    # stack of 0-d tensors: they become rows first, so the dimensioned rule applies
    x0, y0 = lazyt.tensor(_values(a)[2], device=device), lazyt.tensor(_values(b)[2], device=device)
    check(lazyt.stack([x0, y0]), np.stack([r[2] for r in ref]))


MATMUL_PAIRS = [(I32, F32), (I64, F16), (F16, F32), (I32, I64), (F32, F64), (U8, I8),
                (U8, U8), (I16, F32)]


@pytest.mark.parametrize("a, b", MATMUL_PAIRS, ids=_ids(MATMUL_PAIRS))
def test_matmul(device, check, a, b):
    """torch's matmul wants one dtype; lazyt promotes by the tensor table instead (no float64
    from int32 @ float32)."""
    want = TENSOR_TENSOR[a][DTYPES.index(b)]
    _skip_unsupported(device, a, b, want)
    ra, rb = np.arange(6).reshape(2, 3) % 3, np.arange(6).reshape(3, 2) % 2
    x = lazyt.tensor(ra.astype(a.np), device=device)
    y = lazyt.tensor(rb.astype(b.np), device=device)
    check(x @ y, (ra @ rb).astype(want.np))


# ------------------------------------------------------------------ against torch itself
@pytest.fixture(scope="module")
def torch():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed here; the hand-written tables stand in for it")
    return torch


def test_tables_match_torch(torch):
    tdt = {d: getattr(torch, d.name) for d in DTYPES}

    def name(t):
        return str(t).removeprefix("torch.")
    cpu = lazyt.device("cpu")
    for a, b in PAIRS:
        j = DTYPES.index(b)
        ta, tb = torch.ones(2, dtype=tdt[a]), torch.ones(2, dtype=tdt[b])
        za, zb = torch.ones((), dtype=tdt[a]), torch.ones((), dtype=tdt[b])
        assert name(torch.result_type(ta, tb)) == TENSOR_TENSOR[a][j].name, (a, b)
        assert name(torch.result_type(za, zb)) == TENSOR_TENSOR[a][j].name, (a, b)
        assert name(torch.result_type(ta, zb)) == TENSOR_ZERO_DIM[a][j].name, (a, b)
        assert name(torch.result_type(zb, ta)) == TENSOR_ZERO_DIM[a][j].name, (a, b)
        la = lazyt.tensor(np.ones(2, a.np), device=cpu)
        lb = lazyt.tensor(np.ones(2, b.np), device=cpu)
        lzb = lazyt.tensor(np.ones((), b.np), device=cpu)
        assert (la + lb).dtype.name == name((ta + tb).dtype), (a, b)
        assert (la + lzb).dtype.name == name((ta + zb).dtype), (a, b)
        assert lazyt.where(la > 0, la, lb).dtype.name == \
            name(torch.where(ta > 0, ta, tb).dtype), (a, b)
        assert lazyt.cat([la, lb]).dtype.name == name(torch.cat([ta, tb]).dtype), (a, b)
    for d in DTYPES:
        for s, want in zip(SCALARS, TENSOR_SCALAR[d]):
            assert name(torch.result_type(torch.ones(2, dtype=tdt[d]), s)) == want.name, (d, s)
            assert name(torch.result_type(torch.ones((), dtype=tdt[d]), s)) == want.name
