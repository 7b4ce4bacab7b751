"""torch's window functions for spectral analysis: `hann_window`, `hamming_window`,
`blackman_window`, `bartlett_window` and `kaiser_window`. Each is computed in float64 on the
host and cast to `dtype` (the default float), as a constant tensor; `periodic=True` (torch's
default, for `stft`) gives the first `window_length` points of the symmetric window of
`window_length + 1`."""
from __future__ import annotations

import numbers

import numpy as np

from . import dtype as dt
from .creation import _creates, tensor
from .errors import DTypeError, InvalidArgumentError

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _window(op: str, window_length, periodic: bool, dtype, device, symmetric) -> "Tensor":
    if isinstance(window_length, bool) or not isinstance(window_length, numbers.Integral) \
            or window_length < 0:
        raise InvalidArgumentError(f"{op}: window_length must be a non-negative int, got "
                                   f"{window_length!r}")
    d = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if not d.is_float:
        raise DTypeError(f"{op}: expects a floating-point dtype, got {d.name}")
    n = int(window_length)
    if n <= 1:
        values = np.ones(n)
    else:
        m = n + 1 if periodic else n
        values = symmetric(np.arange(m, dtype=np.float64), m)[:n]
    return tensor(values.astype(d.np), dtype=d, device=device)


def _cosine_sum(*coefficients: float):
    def symmetric(k, m):
        phase = 2 * np.pi * k / (m - 1)
        return sum(c * (-1) ** i * np.cos(i * phase) for i, c in enumerate(coefficients))
    return symmetric


@_creates
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None):
    return _window("hann_window", window_length, periodic, dtype, device, _cosine_sum(0.5, 0.5))


@_creates
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, device=None):
    return _window("hamming_window", window_length, periodic, dtype, device,
                   _cosine_sum(alpha, beta))


@_creates
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None):
    return _window("blackman_window", window_length, periodic, dtype, device,
                   _cosine_sum(0.42, 0.5, 0.08))


@_creates
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None):
    return _window("bartlett_window", window_length, periodic, dtype, device,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


@_creates
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, device=None):
    """I0(beta * sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, dtype, device,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2,
                                                             0, None))) / np.i0(beta))
