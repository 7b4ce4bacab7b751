"""Integer tensors to integer tensor powers, negative exponents included (torch's results:
1 for a base of 1, +-1 for -1 by parity, 0 otherwise), on every device."""
from __future__ import annotations

import numpy as np

import lazyt


def test_negative_integer_exponents(device):
    base = lazyt.tensor([0, 2, -2, 1, -1, -1, 5, 3], device=device)
    exp = lazyt.tensor([-1, -1, -1, -5, -2, -3, 0, 2], device=device)
    out = base ** exp
    assert out.dtype is lazyt.int64
    np.testing.assert_array_equal(out.numpy(), [0, 0, 0, 1, 1, -1, 1, 9])
    np.testing.assert_array_equal((2 ** lazyt.tensor([-1, 3], device=device)).numpy(), [0, 8])
    i32 = lazyt.tensor([2, -1], dtype=lazyt.int32, device=device)
    np.testing.assert_array_equal(i32.pow(lazyt.tensor([-2, -1], dtype=lazyt.int32,
                                                        device=device)).numpy(), [0, -1])


def test_against_torch():
    import pytest
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    b = rng.integers(-3, 4, size=50)
    e = rng.integers(-4, 5, size=50)
    want = (torch.tensor(b) ** torch.tensor(e)).numpy()
    np.testing.assert_array_equal((lazyt.tensor(b) ** lazyt.tensor(e)).numpy(), want)
