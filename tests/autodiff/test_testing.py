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
    assert_close(t, [1.0, 2.1], atol=0.2, rtol=0.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="both"):
        assert_close(t, [1.0, 2.1], atol=0.2)
    with pytest.raises(AssertionError):
        assert_close(lazyt.tensor([1, 2], device=ad_device_short), [1, 3])
    assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), equal_nan=True)
    with pytest.raises(AssertionError):                       # torch's default: NaN != NaN
        assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))


def test_assert_close_takes_torchs_arguments_and_containers():
    torch = pytest.importorskip("torch")
    a = lazyt.tensor([1.0, 2.0])
    assert_close({"x": [a, 3], "y": (a * 2,)}, {"x": [a, 3], "y": (a * 2,)})
    with pytest.raises(AssertionError, match=r"\['y'\]\[0\]"):
        assert_close({"x": [a], "y": (a,)}, {"x": [a], "y": (a * 2,)})
    with pytest.raises(AssertionError, match="custom"):
        assert_close(a, a + 1, msg="custom")
    with pytest.raises(AssertionError, match="^wrapped:"):
        assert_close(a, a + 1, msg=lambda m: "wrapped: " + m)
    assert_close(a, a.double(), check_dtype=False)
    assert_close(float("inf"), float("inf"))
    for got, want in (([1.0, 1.0 + 1.2e-6], [1.0, 1.0]), ([1.0, 1.0 + 2e-5], [1.0, 1.0])):
        ok = True
        try:
            torch.testing.assert_close(torch.tensor(got), torch.tensor(want))
        except AssertionError:
            ok = False
        if ok:
            assert_close(lazyt.tensor(got), lazyt.tensor(want))
        else:
            with pytest.raises(AssertionError):
                assert_close(lazyt.tensor(got), lazyt.tensor(want))
