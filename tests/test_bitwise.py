"""Bitwise ops on integer and bool tensors (`& | ^ ~ << >>` and the function forms) against
numpy on every device; floats raise `DTypeError`."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt

OPS = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
       "bitwise_xor": np.bitwise_xor}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(OPS))
def test_integer_ops_match_numpy(device, dtype, name):
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, (3, 4)).astype(dtype)
    b = rng.integers(-1000, 1000, (4,)).astype(dtype)
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    want = OPS[name](a, b)
    got = getattr(lazyt, name)(ta, tb)
    assert got.dtype.np == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(getattr(ta, name)(tb).numpy(), want)
    np.testing.assert_array_equal(getattr(lazyt, name)(ta, 5).numpy(), OPS[name](a, 5))


def test_operators_and_not(device):
    a = np.array([1, 2, 6, -8, 0, 1023], np.int32)
    b = np.array([3, 1, 5, 2, 7, -1], np.int32)
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta | tb).numpy(), a | b)
    np.testing.assert_array_equal((ta ^ tb).numpy(), a ^ b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    np.testing.assert_array_equal((6 & ta).numpy(), 6 & a)
    np.testing.assert_array_equal(lazyt.bitwise_not(ta).numpy(), ~a)
    # a chain fuses into one block and gives the same values
    np.testing.assert_array_equal((((ta ^ tb) & 255) | 1).numpy(), ((a ^ b) & 255) | 1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_shifts_match_numpy_including_amounts_out_of_range(device, dtype):
    a = np.array([1, -8, 5, 0, 12345, -1], dtype)
    amounts = np.array([0, 1, 3, 31, 40, -1], dtype)
    if device.base == "wgpu" and dtype == np.int64:
        amounts = np.array([0, 1, 3, 4, 2, 0], dtype)   # int64 is 32-bit there: no overflow
    ta, tn = lazyt.tensor(a, device=device), lazyt.tensor(amounts, device=device)
    np.testing.assert_array_equal((ta >> tn).numpy(), np.right_shift(a, amounts))
    np.testing.assert_array_equal((ta << 2).numpy(), np.left_shift(a, 2))
    np.testing.assert_array_equal(lazyt.bitwise_right_shift(ta, 1).numpy(), a >> 1)
    if not (device.base == "wgpu" and dtype == np.int64):
        np.testing.assert_array_equal((ta << tn).numpy(), np.left_shift(a, amounts))


def test_int64_left_shift_beyond_32_bits_raises_on_wgpu(device):
    if device.base != "wgpu":
        pytest.skip("int64 is stored in 32 bits on wgpu only")
    x = lazyt.tensor([1, 3], device=device) << 40
    with pytest.raises(lazyt.DTypeError):
        x.numpy()


def test_bools(device):
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    for got, want in (((ta & tb), a & b), ((ta | tb), a | b), ((ta ^ tb), a ^ b),
                      ((~ta), ~a), ((ta ^ True), a ^ True)):
        assert got.dtype is lazyt.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    # bool with int promotes to the integer, as torch
    got = ta & lazyt.tensor([3, 3, 3, 3], device=device)
    assert got.dtype is lazyt.int64
    np.testing.assert_array_equal(got.numpy(), a.astype(np.int64) & 3)


def test_floats_and_bool_shifts_raise(device):
    x = lazyt.ones(3, device=device)
    i = lazyt.tensor([1, 2, 3], device=device)
    for fn in (lambda: x & x, lambda: i | 1.5, lambda: ~x, lambda: x << 1,
               lambda: lazyt.bitwise_xor(i, x)):
        with pytest.raises(lazyt.DTypeError):
            fn()
    flags = lazyt.tensor([True], device=device)
    with pytest.raises(lazyt.DTypeError, match="integer"):
        flags << flags                      # bool shifts bool: torch refuses it too
    np.testing.assert_array_equal((flags << 1).numpy(), [2])   # a number makes it int64
    np.testing.assert_array_equal((i & 1).numpy(), [1, 0, 1])   # the runtime is fine
