"""Fractional max pooling (torch's `F.fractional_max_pool2d/3d`, `nn.FractionalMaxPool2d/3d`):
the maximum over a `kernel_size` window at pseudo-random, increasing starts chosen so that
the input shrinks to `output_size` (or `output_ratio` times its size).

The window starts follow torch's interval formula, evaluated lazily in the input's dtype from
one sample u in [0, 1) per (batch, channel, spatial dim): with `alpha = (size - k) / (out - 1)`,
start i is `int((i + u) * alpha) - int(u * alpha)` and the last start is `size - k`. So with
`_random_samples` given the result equals torch's; without, the samples come from lazyt's
generator (`lazyt.rand`). The maximum is gathered at its argmax (the first in the window's
row-major order, as torch), so the gradient goes to that one input element.
"""
from __future__ import annotations

import math

from .. import creation
from .. import dtype as dt
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat
from ..tensor import Tensor
from .conv import as_tuple, batched, float_input
from .module import Module

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
# which sample of a (batch, channel) drives each spatial dim: torch's kernels read
# samples[..., 0] for the width and [..., 1] for the height in 2-D; T, H, W in order in 3-D
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def _ratio(fn: str, output_ratio, n: int) -> tuple:
    items = list(output_ratio) if isinstance(output_ratio, (tuple, list)) else [output_ratio]
    if len(items) == 1:
        items = items * n
    if len(items) != n or not all(isinstance(r, (int, float)) and not isinstance(r, bool)
                                  for r in items):
        raise InvalidArgumentError(f"{fn}: output_ratio must be a number or a tuple of {n} "
                                   f"numbers, got {output_ratio!r}")
    return tuple(float(r) for r in items)


def _samples(fn: str, samples, x: Tensor, n: int) -> Tensor:
    """The (N, C, n) samples of batch `x`: given ones checked as torch does, else drawn."""
    batch, channels = x.shape[0], x.shape[1]
    if samples is None:
        return creation.rand(batch, channels, n, dtype=x.dtype, device=x.device)
    if not isinstance(samples, Tensor):
        raise DTypeError(f"{fn}: _random_samples must be a lazyt.Tensor, got "
                         f"{type(samples).__name__}")
    if samples.dtype is not x.dtype:
        raise DTypeError(f"{fn}: _random_samples must have the input's dtype {x.dtype.name}, "
                         f"got {samples.dtype.name}")
    if samples.ndim != 3:
        raise ShapeError(f"{fn}: _random_samples must have 3 dims (N, C, {n}), got shape "
                         f"{samples.shape}")
    if samples.shape[2] != n:
        raise ShapeError(f"{fn}: _random_samples.size(2) must be {n}, got shape "
                         f"{samples.shape}")
    if samples.shape[1] != channels:
        raise ShapeError(f"{fn}: _random_samples.size(1) must equal the input's {channels} "
                         f"channels, got shape {samples.shape}")
    if samples.shape[0] < batch:
        raise ShapeError(f"{fn}: _random_samples.size(0) must be at least the batch size "
                         f"{batch}, got shape {samples.shape}")
    return samples if samples.shape[0] == batch else samples[:batch]


def _starts(u: Tensor, size: int, k: int, out: int) -> Tensor:
    """(N, C, out) int64 window starts along one dim from samples `u` (N, C), torch's
    `generate_intervals` in u's dtype."""
    last = creation.full((*u.shape, 1), size - k, dtype=dt.int64, device=u.device)
    if out <= 1:
        return last[..., :out]
    alpha = creation.full((), float(size - k), dtype=u.dtype, device=u.device) / (out - 1)
    i = creation.arange(out - 1, dtype=u.dtype, device=u.device)
    head = ((i + u.unsqueeze(-1)) * alpha).to(dt.int64) - (u * alpha).to(dt.int64).unsqueeze(-1)
    return cat([head, last], -1)


def _fractional_max_pool(fn: str, n: int, input, kernel_size, output_size,  # noqa: A002
                         output_ratio, return_indices: bool, _random_samples):
    x, unbatched = batched(fn, float_input(fn, "input", input), n)
    kernel = as_tuple(fn, "kernel_size", kernel_size, n, 1)
    size = x.shape[2:]
    if output_size is None and output_ratio is None:
        raise InvalidArgumentError(f"{fn}: requires specifying either an output_size or an "
                                   "output_ratio")
    if output_size is None:
        out = tuple(int(s * r) for s, r in zip(size, _ratio(fn, output_ratio, n)))
    else:
        out = as_tuple(fn, "output_size", output_size, n, 0)
    # torch's 3-D kernel also rejects windows that end exactly at the last element
    strict = 1 if n == 3 else 0
    for name, s, k, o in zip(_DIM_NAMES[n], size, kernel, out):
        if o + k - 1 > s - strict:
            raise ShapeError(f"{fn}: pool {name} {k} too large relative to input {name} {s} "
                             f"for output {name} {o} (input shape {input.shape})")
    samples = _samples(fn, _random_samples, x, n)
    nb, c = x.shape[0], x.shape[1]
    # flat input position of every (window, kernel offset): (N, C, *out, *kernel)
    flat = None
    for d, (s, k, o) in enumerate(zip(size, kernel, out)):
        pos = _starts(samples[:, :, _SAMPLE_OF_DIM[n][d]], s, k, o).unsqueeze(-1) \
            + creation.arange(k, dtype=dt.int64, device=x.device)              # (N, C, o, k)
        view = [nb, c] + [1] * (2 * n)
        view[2 + d], view[2 + n + d] = o, k
        pos = pos.reshape(view)
        flat = pos if flat is None else flat * s + pos
    windows, offsets = math.prod(out), math.prod(kernel)
    plane = x.reshape(nb, c, math.prod(size))
    flat = flat.expand(nb, c, *out, *kernel).reshape(nb, c, windows * offsets)
    values = plane.detach().gather(2, flat).reshape(nb, c, windows, offsets)
    which = values.argmax(3, keepdim=True)              # the first maximum, as torch
    indices = flat.reshape(nb, c, windows, offsets).gather(3, which).reshape(nb, c, windows)
    y = plane.gather(2, indices).reshape(nb, c, *out)
    indices = indices.reshape(nb, c, *out)
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices) if return_indices else y


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                          output_ratio=None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    """Fractional max pooling of `input` (N, C, H, W) or (C, H, W) to `output_size` (or
    `output_ratio` of H, W); `_random_samples` (N, C, 2) fixes the windows (else drawn from
    lazyt's generator). With `return_indices`, also the flat index in H * W of each maximum."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                          output_ratio=None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    """Fractional max pooling of `input` (N, C, T, H, W) or (C, T, H, W); `_random_samples`
    (N, C, 3). With `return_indices`, also the flat index in T * H * W of each maximum."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


class _FractionalMaxPoolNd(Module):
    """torch's `nn.FractionalMaxPool{n}d`: exactly one of `output_size` and `output_ratio`
    (each ratio in (0, 1)); `_random_samples` is kept as a buffer (None: drawn per call)."""

    _n: int = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples: Tensor | None = None):
        super().__init__()
        name, n = type(self).__name__, self._n
        self.kernel_size = as_tuple(name, "kernel_size", kernel_size, n, 1)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        if output_size is None and output_ratio is None:
            raise InvalidArgumentError(f"{name} requires specifying either an output size, or "
                                       "a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise InvalidArgumentError(f"{name}: only one of output_size and output_ratio may "
                                       "be specified")
        self.output_size = None if output_size is None \
            else as_tuple(name, "output_size", output_size, n, 0)
        self.output_ratio = None if output_ratio is None else _ratio(name, output_ratio, n)
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise InvalidArgumentError(f"{name}: output_ratio must be between 0 and 1 (got "
                                       f"{output_ratio!r})")

    def forward(self, input: Tensor):  # noqa: A002 - torch's name
        return _fractional_max_pool(f"fractional_max_pool{self._n}d", self._n, input,
                                    self.kernel_size, self.output_size, self.output_ratio,
                                    self.return_indices, self._random_samples)

    def extra_repr(self) -> str:
        target = (f"output_size={self.output_size}" if self.output_size is not None
                  else f"output_ratio={self.output_ratio}")
        return f"kernel_size={self.kernel_size}, {target}"


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Over (N, C, H, W) or (C, H, W)."""

    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Over (N, C, T, H, W) or (C, T, H, W)."""

    _n = 3
