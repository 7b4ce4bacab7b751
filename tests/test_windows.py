"""Window functions (lazyt/windows.py) against torch's."""
import numpy as np
import pytest

import lazyt
from lazyt import DTypeError, InvalidArgumentError

torch = pytest.importorskip("torch")

NAMES = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 16, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, n, periodic):
    got = getattr(lazyt, name)(n, periodic)
    ref = getattr(torch, name)(n, periodic)
    assert got.dtype is lazyt.float32 and got.shape == tuple(ref.shape)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_window_parameters_and_dtypes():
    np.testing.assert_allclose(lazyt.hamming_window(9, False, 0.5, 0.5).numpy(),
                               torch.hamming_window(9, False, 0.5, 0.5).numpy(), atol=1e-6)
    np.testing.assert_allclose(lazyt.kaiser_window(10, True, 5.0).numpy(),
                               torch.kaiser_window(10, True, 5.0).numpy(), rtol=1e-5, atol=1e-6)
    w = lazyt.hann_window(8, dtype=lazyt.float64)
    assert w.dtype is lazyt.float64
    np.testing.assert_allclose(w.numpy(), torch.hann_window(8, dtype=torch.float64).numpy(),
                               rtol=1e-12)
    assert lazyt.hann_window(4, requires_grad=True).requires_grad


def test_window_errors():
    with pytest.raises(InvalidArgumentError):
        lazyt.hann_window(-1)
    with pytest.raises(InvalidArgumentError):
        lazyt.hann_window(2.5)
    with pytest.raises(DTypeError):
        lazyt.hann_window(4, dtype=lazyt.int32)
