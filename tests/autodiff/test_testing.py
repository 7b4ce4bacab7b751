"""`lazyt.testing.assert_close`: tensors or arrays on either side, dtype-aware tolerances."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.testing import assert_close


def test_assert_close_accepts_tensors_and_arrays(ad_device_short):
    t = lazyt.tensor(np.array([1.0, 2.0, 3.0]), device=ad_device_short)
    assert_close(t, np.array([1.0, 2.0, 3.0 + 1e-12]))
    assert_close(np.array([1.0, 2.0, 3.0]), t)
    assert_close(t, t * 1.0)
    assert_close(t.float(), [1.0, 2.0, 3.0 + 1e-7])  # float32 tolerances


def test_assert_close_raises_on_mismatch(ad_device_short):
    t = lazyt.tensor(np.array([1.0, 2.0]), device=ad_device_short)
    with pytest.raises(AssertionError):
        assert_close(t, [1.0, 2.1])
    with pytest.raises(AssertionError, match="shape"):
        assert_close(t, [1.0, 2.0, 3.0])
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(t, t.float())
    assert_close(t, [1.0, 2.1], atol=0.2)
    with pytest.raises(AssertionError):
        assert_close(lazyt.tensor([1, 2], device=ad_device_short), [1, 3])
    assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
