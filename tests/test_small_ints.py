"""The narrow integer dtypes uint8, int8 and int16, as torch has them: creation and numpy
round trips, torch's promotion (uint8 with int8 is int16), arithmetic that wraps modulo 2^bits
exactly as numpy's (op by op and inside fused kernels, where wgpu holds them in 32-bit words),
casts, reductions' dtypes, bitwise ops and shifts, comparisons, where/cat, indexing and
scatters. The full promotion table against torch is in test_promotion_torch.py."""
import numpy as np
import pytest

import lazyt

U8, I8, I16 = lazyt.uint8, lazyt.int8, lazyt.int16
SMALL = (U8, I8, I16)
IDS = [d.name for d in SMALL]

#: Values reaching both ends of each dtype (8 of them: the vec4 fused kernels apply).
VALUES = {
    U8: np.array([0, 1, 5, 127, 128, 200, 254, 255], np.uint8),
    I8: np.array([-128, -127, -1, 0, 1, 5, 100, 127], np.int8),
    I16: np.array([-32768, -300, -1, 0, 1, 300, 20000, 32767], np.int16),
}
#: Nonzero divisors, the last of each reaching the far end.
DIVISORS = {
    U8: np.array([1, 2, 3, 7, 255, 128, 9, 250], np.uint8),
    I8: np.array([-1, 2, -3, 7, -128, 127, 9, -5], np.int8),
    I16: np.array([-1, 2, -3, 7, -32768, 32767, 300, -5], np.int16),
}


def _t(a, device):
    return lazyt.tensor(a, device=device)


def _np(fn, *args):
    """numpy's result (its integer arithmetic wraps like torch's), warnings silenced."""
    with np.errstate(all="ignore"):
        return fn(*args)


# ------------------------------------------------------------------ dtype objects
def test_dtypes_and_names():
    assert lazyt.uint8.name == "uint8" and repr(lazyt.int8) == "lazyt.int8"
    for d in SMALL:
        assert d in lazyt.dtype.ALL and lazyt.dtype.as_dtype(d.name) is d
        assert lazyt.dtype.from_numpy(d.np) is d and d.is_int and not d.is_float
    # torch's aliases: torch.uint8 is `byte`, torch.int8 `char`, torch.int16 `short`
    assert lazyt.dtype.as_dtype("byte") is U8
    assert lazyt.dtype.as_dtype("char") is I8
    assert lazyt.dtype.as_dtype("short") is I16
    assert lazyt.dtype.as_dtype(np.uint8) is U8
    assert [d.is_signed for d in SMALL] == [False, True, True]      # torch's is_signed
    assert not lazyt.bool_.is_signed and lazyt.float32.is_signed
    assert [d.bits for d in SMALL] == [8, 8, 16]


# ------------------------------------------------------------------ creation, numpy
@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_creation_and_numpy_round_trip(device, check, d):
    a = VALUES[d]
    check(_t(a, device), a)
    check(lazyt.from_numpy(a).to(device), a)
    t = lazyt.tensor([1, 2, 3], dtype=d, device=device)
    check(t, np.array([1, 2, 3], d.np))
    check(lazyt.zeros(2, 3, dtype=d, device=device), np.zeros((2, 3), d.np))
    check(lazyt.ones(4, dtype=d.name, device=device), np.ones(4, d.np))
    check(lazyt.full((3,), 100, dtype=d, device=device), np.full(3, 100, d.np))
    check(lazyt.arange(5, dtype=d, device=device), np.arange(5, dtype=d.np))
    got = _t(a, device).numpy()
    assert got.dtype == d.np and np.array_equal(got, a)
    assert np.asarray(_t(a, device)).dtype == d.np
    assert _t(a, device).tolist() == a.tolist()
    assert _t(a, device)[-1].item() == int(a[-1]) and isinstance(_t(a, device)[0].item(), int)


@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_fill_values_out_of_range_raise(device, d):
    info = np.iinfo(d.np)
    for bad in (info.max + 1, info.min - 1):
        with pytest.raises(lazyt.DTypeError, match=f"full: the scalar {bad} does not fit"):
            lazyt.full((2,), bad, dtype=d, device=device)


def test_byte_char_short_methods(device, check):
    f = np.array([0.0, 1.9, 100.5, 127.0, 3.2], np.float32)
    x = _t(f, device)
    check(x.byte(), f.astype(np.uint8))
    check(x.char(), f.astype(np.int8))
    check(x.short(), f.astype(np.int16))
    check((-x).char(), (-f).astype(np.int8))            # truncation toward zero
    u = _t(VALUES[U8], device)
    check(u.char(), VALUES[U8].astype(np.int8))         # wraps, as numpy and torch
    check(u.short(), VALUES[U8].astype(np.int16))
    check(u.int(), VALUES[U8].astype(np.int32))
    check(u.long().byte(), VALUES[U8])
    check(_t(VALUES[I16], device).byte(), VALUES[I16].astype(np.uint8))
    check(u.float(), VALUES[U8].astype(np.float32))
    check(u.bool(), VALUES[U8].astype(bool))


# ------------------------------------------------------------------ promotion on devices
def test_promotion_with_small_ints(device, check):
    u, i = _t(VALUES[U8], device), _t(VALUES[I8], device)
    check(u + i, VALUES[U8].astype(np.int16) + VALUES[I8])            # int16, as torch
    check(u + _t(VALUES[I16], device), VALUES[U8].astype(np.int16) + VALUES[I16])
    check(u + _t(VALUES[U8].astype(np.int32), device), VALUES[U8].astype(np.int32) * 2)
    b = VALUES[U8] % 2 == 0
    check(u + _t(b, device), _np(np.add, VALUES[U8], b.astype(np.uint8)))   # bool: uint8
    check(u + _t(np.int64(3), device), _np(np.add, VALUES[U8], np.uint8(3)))  # 0-d: uint8
    check(u + 3, _np(np.add, VALUES[U8], np.uint8(3)))
    check(u + 2.5, VALUES[U8].astype(np.float32) + np.float32(2.5))
    check(u / _t(DIVISORS[U8], device),
          VALUES[U8].astype(np.float32) / DIVISORS[U8].astype(np.float32))   # true division
    check(i * _t(np.float16(0.5), device), VALUES[I8].astype(np.float16) * np.float16(0.5))


# ------------------------------------------------------------------ arithmetic wraps
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
    "mod": np.mod, "maximum": np.maximum, "minimum": np.minimum,
}


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_binary_wraps_like_numpy(device, check, d, op):
    a, b = VALUES[d], DIVISORS[d]
    x, y = _t(a, device), _t(b, device)
    fn = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
          "floordiv": lambda p, q: p // q, "mod": lambda p, q: p % q,
          "maximum": lazyt.maximum, "minimum": lazyt.minimum}[op]
    check(fn(x, y), _np(BINARY[op], a, b))
    check(fn(x[::-2], y[::2]), _np(BINARY[op], a[::-2], b[::2]))     # strided views


@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_unary_and_pow_wrap(device, check, d):
    a = VALUES[d]
    x = _t(a, device)
    check(-x, _np(np.negative, a))
    check(abs(x), _np(np.abs, a))                     # abs(-128) is -128 in int8
    check(x.sign(), np.sign(a))
    check(x.relu(), np.maximum(a, d.np.type(0)))
    check(x ** 2, _np(np.power, a, d.np.type(2)))
    e = np.array([0, 1, 2, 3, 5, 7, 9, 3], d.np)
    check(x ** _t(e, device), _np(np.power, a, e))


@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_python_numbers_keep_the_dtype_and_wrap(device, check, d):
    a = VALUES[d]
    x = _t(a, device)
    k = d.np.type(100)
    check(x + 100, _np(np.add, a, k))
    check(100 - x, _np(np.subtract, k, a))
    check(x * 3, _np(np.multiply, a, d.np.type(3)))
    check(x // 7, _np(np.floor_divide, a, d.np.type(7)))
    info = np.iinfo(d.np)
    with pytest.raises(lazyt.DTypeError, match="does not fit the tensor's dtype"):
        x + (info.max + 1)          # torch wraps the number itself; lazyt refuses it
    with pytest.raises(lazyt.DTypeError, match="does not fit the tensor's dtype"):
        x > (info.min - 1)


@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_fused_chains_wrap_every_intermediate(device, check, d):
    """A chain the Fusion layer runs as one kernel: every intermediate value wraps (wgpu keeps
    them in 32-bit registers), contiguous (vec4 on wgpu), broadcast and strided inputs."""
    a, b = VALUES[d], DIVISORS[d]
    x, y = _t(a, device), _t(b, device)
    k = d.np.type

    def chain(p, q, three, seven):
        r = (p + 100) * three - q
        r = (r * r) // seven
        return lazyt.maximum(r, q) ^ (r << three) if isinstance(p, lazyt.Tensor) else \
            np.maximum(r, q) ^ (r << three)

    with np.errstate(all="ignore"):
        want = chain(a, b, k(3), k(7))
        m = np.stack([a, b])                                       # (2, 8)
        strided = m * k(3) + k(1)
        broadcast = m * b[:2].reshape(2, 1) - k(5)
        widened = (a * k(3)).astype(np.int32) + 1
    check(chain(x, y, 3, 7), want)
    xm = _t(m, device)
    check((xm.t() * 3 + 1).t(), strided)                            # a transposed input
    check(xm * _t(b[:2].reshape(2, 1), device) - 5, broadcast)      # a broadcast one
    check((x * 3).to(lazyt.int32) + 1, widened)


# ------------------------------------------------------------------ casts
@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_casts_between_integer_dtypes(device, check, d):
    a = VALUES[d]
    x = _t(a, device)
    for other in (U8, I8, I16, lazyt.int32, lazyt.int64, lazyt.bool_, lazyt.float32):
        check(x.to(other), a.astype(other.np))
        src = VALUES.get(other, VALUES[I16].astype(other.np))
        check(_t(src, device).to(d), src.astype(d.np))


def test_floats_cast_by_truncation(device, check):
    f = np.array([0.0, 0.9, 1.5, 127.9, 200.2, 255.0, 3.0, 64.5], np.float32)
    check(_t(f, device).byte(), f.astype(np.uint8))
    g = np.array([-128.0, -3.7, -0.5, 0.0, 0.5, 3.7, 126.9, 127.0], np.float32)
    check(_t(g, device).to(I8), g.astype(np.int8))
    check(_t(g * 200, device).to(I16), (g * 200).astype(np.int16))
    h = g.astype(np.float16)
    check(_t(h, device).to(I8), h.astype(np.int8))


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_reduction_dtypes_follow_torch(device, check, d):
    a = VALUES[d].reshape(2, 4)
    x = _t(a, device)
    check(x.sum(), a.sum(dtype=np.int64))                      # int64, as torch
    check(x.sum(1), a.sum(1, dtype=np.int64))
    check(x.prod(0), a.prod(0, dtype=np.int64))
    check(x.cumsum(1), np.cumsum(a, 1, dtype=np.int64))
    check(x.sum(dtype=d), a.sum(dtype=d.np))                   # dtype= is the result's: wraps
    check(x.max(1).values, a.max(1))
    check(x.max(1).indices, a.argmax(1))
    check(x.min(), a.min())
    check(x.argmax(1), a.argmax(1))
    check(x.argmin(), np.int64(a.argmin()))
    check(x.mean(), np.float32(a.astype(np.float64).mean()))   # lazyt: float32 (torch raises)
    as_torch = (lambda r: r.astype(np.uint8)) if d.np == np.uint8 else (lambda r: r)
    check(x.any(1), as_torch(a.any(1)))                       # torch: uint8 stays uint8
    check(x.all(), as_torch(np.asarray(a.all())))


# ------------------------------------------------------------------ bitwise
@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_bitwise_ops_and_shifts(device, check, d):
    a, b = VALUES[d], DIVISORS[d]
    x, y = _t(a, device), _t(b, device)
    check(x & y, a & b)
    check(x | y, a | b)
    check(x ^ y, a ^ b)
    check(~x, ~a)
    check(x & 0x0F, a & d.np.type(0x0F))
    bits = d.bits
    amounts = np.array([0, 1, 3, bits - 1, bits, bits + 1, 20, 2], d.np)
    s = _t(amounts, device)
    check(x << s, _np(np.left_shift, a, amounts))     # amounts >= bits: 0, as numpy
    check(x >> s, _np(np.right_shift, a, amounts))    # the sign for >>
    check(x << 3, _np(np.left_shift, a, d.np.type(3)))
    check(x >> 2, _np(np.right_shift, a, d.np.type(2)))


# ------------------------------------------------------------------ comparisons, where, cat
def test_comparisons_where_cat_stack(device, check):
    u, i = _t(VALUES[U8], device), _t(VALUES[I8], device)
    wu, wi = VALUES[U8].astype(np.int16), VALUES[I8].astype(np.int16)
    check(u < i, wu < wi)                        # computed in int16: 200 > -1, not wrapped
    check(u == i, wu == wi)
    check(u >= 128, VALUES[U8] >= 128)
    check(i != -1, VALUES[I8] != -1)
    check(lazyt.where(u > 100, u, i), np.where(VALUES[U8] > 100, wu, wi))
    check(lazyt.where(u > 100, u, 7), np.where(VALUES[U8] > 100, VALUES[U8], np.uint8(7)))
    check(lazyt.cat([u, i]), np.concatenate([wu, wi]))
    check(lazyt.stack([u, u]), np.stack([VALUES[U8]] * 2))
    check(lazyt.clamp(u, 10, 200), np.clip(VALUES[U8], 10, 200))


# ------------------------------------------------------------------ indexing, scatters
def test_indexing_and_gather(device, check):
    a = VALUES[U8]
    u = _t(a, device)
    idx = np.array([7, 0, 3, 3])
    check(u[_t(idx, device)], a[idx])
    check(u[_t(idx.astype(np.int8), device)], a[idx])         # int8 / int16: positions
    check(u[_t(idx.astype(np.int16), device)], a[idx])
    check(u[_t(a > 100, device)], a[a > 100])                  # a bool mask
    check(u[2:7:2], a[2:7:2])
    check(u.gather(0, _t(idx, device)), a[idx])
    check(lazyt.index_select(u, 0, _t(idx, device)), a[idx])
    m = _t(a.reshape(2, 4), device)
    check(m.t().contiguous(), a.reshape(2, 4).T)
    # an int64 tensor indexes uint8 data, and uint8 positions index float data after .long()
    x = _t(np.arange(8, dtype=np.float32), device)
    check(x[_t(np.array([1, 0, 5], np.uint8), device).long()], np.array([1, 0, 5], np.float32))


def test_uint8_index_tensors_are_refused(device):
    """torch reads a uint8 index as a (deprecated) boolean mask, numpy as positions: lazyt
    raises and names both fixes."""
    x = lazyt.ones(3, device=device)
    mask = _t(np.array([1, 0, 1], np.uint8), device)
    with pytest.raises(lazyt.DTypeError, match=r"getitem: a uint8 index tensor .*\.bool\(\)"):
        x[mask]
    with pytest.raises(lazyt.DTypeError, match="uint8 index"):
        x[np.array([1, 0, 1], np.uint8)]
    with pytest.raises(lazyt.DTypeError, match="uint8 index"):
        x[mask] = 2.0
    with pytest.raises(lazyt.DTypeError, match="index_put: a uint8 index"):
        x.index_put((mask,), lazyt.tensor(1.0, device=device))


@pytest.mark.parametrize("d", SMALL, ids=IDS)
def test_scatter_add_and_matmul_wrap(device, check, d):
    a = VALUES[d]
    idx = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    want = a[:4].copy()
    with np.errstate(all="ignore"):
        np.add.at(want, idx, a)
    check(_t(a[:4], device).scatter_add(0, _t(idx, device), _t(a, device)), want)
    m = a.reshape(2, 4)
    check(_t(m, device) @ _t(m.T.copy(), device), _np(np.matmul, m, m.T))   # wraps
    check(_t(m, device) @ _t(m[0], device), _np(np.matmul, m, m[0]))


def test_in_place_updates_keep_the_dtype(device, check):
    u = _t(VALUES[U8], device)
    u += 100
    check(u, _np(np.add, VALUES[U8], np.uint8(100)))
    u[0] = 7
    assert u.dtype is U8 and u[0].item() == 7
    with pytest.raises(lazyt.DTypeError):
        u /= 2                                     # a float result into a uint8 tensor
