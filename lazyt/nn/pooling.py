"""Pooling in torch's layout (`max_pool1d/2d/3d`, `avg_pool1d/2d/3d`,
`adaptive_avg_pool1d/2d/3d`, `adaptive_max_pool1d/2d/3d`, `max_unpool1d/2d/3d`,
`lp_pool1d/2d/3d`) and their modules, as composites of Tensor ops (autodiff differentiates
them; every backend runs them).

Max and average pooling read their windows as the kernel-offset views of `conv.windows`
(padding is -inf for max, 0 for average); max stacks the views and reduces, so its gradient
goes to the maximum, and its indices come from a table of flat input positions built once per
call. Adaptive average pooling is a matmul with a (out, in) averaging matrix per dim;
adaptive max pooling gathers each window (padded to the widest by repeating a position);
unpooling is a scatter_add of the values at their indices.
"""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from .. import creation
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import stack, where
from ..tensor import Tensor
from .conv import as_tuple, batched, float_input, windows
from .module import Module

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "max_unpool1d", "max_unpool2d", "MaxPool1d", "MaxPool2d",
           "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d",
           "LPPool1d", "LPPool2d", "LPPool3d"]


# ---------------------------------------------------------------------- window geometry
def _stride(fn: str, stride, kernel: tuple) -> tuple:
    """torch: a missing (None or empty) stride is the kernel size."""
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return kernel
    return as_tuple(fn, "stride", stride, len(kernel), 1)


def _pool_out(size: int, k: int, pad: int, s: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: with ceil_mode the last window must start inside the
    input or its left padding."""
    span = d * (k - 1) + 1
    n = size + 2 * pad - span + ((s - 1) if ceil_mode else 0)
    out = (n // s) + 1 if n >= 0 else 0
    if ceil_mode and out > 0 and (out - 1) * s >= size + pad:
        out -= 1
    return out


def _geometry(fn: str, x: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
              n: int, half_of: str) -> tuple:
    """(kernel, stride, padding, dilation, out) of a pooling window, validated as torch does."""
    kernel = as_tuple(fn, "kernel_size", kernel_size, n, 1)
    stride = _stride(fn, stride, kernel)
    padding = as_tuple(fn, "padding", padding, n, 0)
    dilation = as_tuple(fn, "dilation", dilation, n, 1)
    for p, k, d in zip(padding, kernel, dilation):
        effective = d * (k - 1) + 1 if half_of == "effective kernel size" else k
        if p > effective // 2:
            raise InvalidArgumentError(f"{fn}: padding should be at most half of {half_of}, "
                                       f"but got padding={padding}, kernel_size={kernel} and "
                                       f"dilation={dilation}")
    size = x.shape[2:]
    out = tuple(_pool_out(*a, ceil_mode)
                for a in zip(size, kernel, padding, stride, dilation))
    if any(o < 1 for o in out):
        raise ShapeError(f"{fn}: input of shape {x.shape} is too small for kernel_size "
                         f"{kernel} (stride {stride}, padding {padding}, dilation {dilation}): "
                         f"the output size would be {out}")
    return kernel, stride, padding, dilation, out


def _pool_input(fn: str, input, n: int) -> tuple:  # noqa: A002 - torch's name
    x = float_input(fn, "input", input)
    return batched(fn, x, n)


# ---------------------------------------------------------------------- max pooling
def _flat_positions(size: tuple, kernel: tuple, stride: tuple, padding: tuple,
                    dilation: tuple, out: tuple) -> np.ndarray:
    """(K, *out) int64: the flat position in the (unpadded) input plane each kernel offset of
    each window reads (positions in the padding are clipped: they never hold a maximum)."""
    table = np.zeros((math.prod(kernel),) + out, np.int64)
    for k, offset in enumerate(itertools.product(*(range(v) for v in kernel))):
        flat = np.zeros(out, np.int64)
        for d, (o, s, p, dl, j, n) in enumerate(zip(out, stride, padding, dilation, offset,
                                                     size)):
            pos = np.clip(np.arange(o) * s - p + j * dl, 0, n - 1)
            shape = [1] * len(out)
            shape[d] = o
            flat = flat * n + pos.reshape(shape)
        table[k] = flat
    return table


def _max_pool(fn: str, n: int, input, kernel_size, stride, padding, dilation,  # noqa: A002
              ceil_mode: bool, return_indices: bool):
    x, unbatched = _pool_input(fn, input, n)
    kernel, stride, padding, dilation, out = _geometry(
        fn, x, kernel_size, stride, padding, dilation, ceil_mode, n, "effective kernel size")
    views = windows(x, kernel, stride, dilation, padding, out, float("-inf"))
    stacked = stack(views, 2)  # (N, C, K, *out)
    y = stacked.amax(2)
    if not return_indices:
        return y.squeeze(0) if unbatched else y
    table = _flat_positions(x.shape[2:], kernel, stride, padding, dilation, out)
    table = creation.tensor(table, device=x.device).unsqueeze(0).unsqueeze(0)
    which = stacked.argmax(2, keepdim=True)  # (N, C, 1, *out): the first maximum, as torch
    indices = table.expand(*stacked.shape).gather(2, which).squeeze(2)
    if unbatched:
        return y.squeeze(0), indices.squeeze(0)
    return y, indices


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over sliding windows of `input` (N, C, L) or (C, L); `padding` pads with -inf.
    With `return_indices`, also the flat index in L of each maximum (for max_unpool1d)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over sliding windows of `input` (N, C, H, W) or (C, H, W); `padding` pads with
    -inf. With `return_indices`, also the flat index in H * W of each maximum."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


# ---------------------------------------------------------------------- average pooling
def _divisors(size: tuple, kernel: tuple, stride: tuple, padding: tuple, out: tuple,
              count_include_pad: bool) -> np.ndarray:
    """torch's per-window divisor: the window clipped to the padded input (count_include_pad)
    or to the input itself."""
    div = np.ones(out, np.float64)
    for d, (n, k, s, p, o) in enumerate(zip(size, kernel, stride, padding, out)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        count = end - start if count_include_pad else (
            np.minimum(end, n) - np.maximum(start, 0))
        shape = [1] * len(out)
        shape[d] = o
        div = div * count.reshape(shape)
    return div


def _avg_pool(fn: str, n: int, input, kernel_size, stride, padding, ceil_mode: bool,  # noqa: A002
              count_include_pad: bool, divisor_override):
    x, unbatched = _pool_input(fn, input, n)
    kernel, stride, padding, dilation, out = _geometry(
        fn, x, kernel_size, stride, padding, 1, ceil_mode, n, "kernel size")
    total = None
    for view in windows(x, kernel, stride, dilation, padding, out, 0.0):
        total = view if total is None else total + view
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int):
            raise InvalidArgumentError(f"{fn}: divisor_override must be an int, got "
                                       f"{divisor_override!r}")
        if divisor_override == 0:
            raise InvalidArgumentError(f"{fn}: divisor_override must not be zero")
        y = total / float(divisor_override)
    else:
        div = _divisors(x.shape[2:], kernel, stride, padding, out, count_include_pad)
        if np.all(div == div.flat[0]):
            y = total / float(div.flat[0])
        else:
            y = total * creation.tensor(1.0 / div, dtype=x.dtype, device=x.device)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of `input` (N, C, L) or (C, L); zero padding counts in the
    divisor when `count_include_pad`."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of `input` (N, C, H, W) or (C, H, W); zero padding counts in
    the divisor when `count_include_pad`; `divisor_override` replaces the divisor."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---------------------------------------------------------------------- adaptive average pooling
def _adaptive_sizes(fn: str, output_size, size: tuple) -> tuple:
    n = len(size)
    items = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size]
    if len(items) == 1:
        items = items * n
    if len(items) != n:
        raise InvalidArgumentError(f"{fn}: output_size must be an int, None or a tuple of {n} "
                                   f"(ints or None), got {output_size!r}")
    out = []
    for v, s in zip(items, size):
        if v is None:
            out.append(s)
            continue
        try:
            if isinstance(v, bool):
                raise TypeError
            v = operator.index(v)
        except TypeError:
            raise InvalidArgumentError(f"{fn}: output_size must hold ints or None, got "
                                       f"{output_size!r}") from None
        if v < 1:
            raise InvalidArgumentError(f"{fn}: output_size must be positive, got "
                                       f"{output_size!r}")
        out.append(v)
    return tuple(out)


def _averaging_matrix(size: int, out: int) -> np.ndarray:
    """(out, size): row i averages input [floor(i * size / out), ceil((i + 1) * size / out))."""
    m = np.zeros((out, size), np.float64)
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _adaptive_avg_pool(fn: str, n: int, input, output_size) -> Tensor:  # noqa: A002
    x, unbatched = _pool_input(fn, input, n)
    size = x.shape[2:]
    out = _adaptive_sizes(fn, output_size, size)
    y = x
    for d in reversed(range(n)):  # contract the last dim, then move the result in front
        if out[d] != size[d]:
            m = _averaging_matrix(size[d], out[d]).T
            y = y @ creation.tensor(m, dtype=x.dtype, device=x.device)  # (.., size) -> (.., out)
        if n > 1:
            y = y.permute(0, 1, y.ndim - 1, *range(2, y.ndim - 1))
    return y.squeeze(0) if unbatched else y


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average pooling of `input` (N, C, L) or (C, L) to `output_size` windows of torch's
    start = floor(i * L / out), end = ceil((i + 1) * L / out)."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average pooling of `input` (N, C, H, W) or (C, H, W) to `output_size` (an int, or a
    pair whose None entries keep the input size) with torch's window bounds per dim."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def _adaptive_positions(size: tuple, out: tuple) -> np.ndarray:
    """(K, *out) int64: the flat input positions of each adaptive window (torch's bounds
    [floor(i * size / out), ceil((i + 1) * size / out)) per dim), padded to the widest window
    by repeating its last position (a repeat never changes the maximum or its first index)."""
    per_dim = []
    for n_in, n_out in zip(size, out):
        starts = (np.arange(n_out) * n_in) // n_out
        ends = -(-((np.arange(n_out) + 1) * n_in) // n_out)
        k = int((ends - starts).max())
        per_dim.append(np.minimum(starts[None, :] + np.arange(k)[:, None], ends[None, :] - 1))
    table = np.zeros((math.prod(t.shape[0] for t in per_dim),) + out, np.int64)
    for k, offset in enumerate(itertools.product(*(range(t.shape[0]) for t in per_dim))):
        flat = np.zeros(out, np.int64)
        for d, (j, t, n_in) in enumerate(zip(offset, per_dim, size)):
            shape = [1] * len(out)
            shape[d] = out[d]
            flat = flat * n_in + t[j].reshape(shape)
        table[k] = flat
    return table


def _adaptive_max_pool(fn: str, n: int, input, output_size,  # noqa: A002
                       return_indices: bool):
    x, unbatched = _pool_input(fn, input, n)
    size = x.shape[2:]
    out = _adaptive_sizes(fn, output_size, size)
    table = _adaptive_positions(size, out)
    idx = creation.tensor(table.reshape(-1), device=x.device)
    nb, c = x.shape[:2]
    stacked = x.reshape(nb, c, -1).index_select(2, idx).reshape(nb, c, *table.shape)
    y = stacked.amax(2)
    if not return_indices:
        return y.squeeze(0) if unbatched else y
    which = stacked.argmax(2, keepdim=True)  # the first maximum, as torch
    flat = creation.tensor(table, device=x.device).unsqueeze(0).unsqueeze(0)
    indices = flat.expand(*stacked.shape).gather(2, which).squeeze(2)
    if unbatched:
        return y.squeeze(0), indices.squeeze(0)
    return y, indices


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Maximum pooling of `input` (N, C, L) or (C, L) to `output_size` with torch's window
    bounds; with `return_indices`, also the flat index in L of each maximum."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Maximum pooling of `input` (N, C, H, W) or (C, H, W) to `output_size` (an int, or a
    pair whose None entries keep the input size); with `return_indices`, also the flat index
    in H * W of each maximum."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


# ---------------------------------------------------------------------- unpooling
def _max_unpool(fn: str, n: int, input, indices, kernel_size, stride, padding,  # noqa: A002
                output_size) -> Tensor:
    x, unbatched = _pool_input(fn, input, n)
    if not isinstance(indices, Tensor):
        raise DTypeError(f"{fn}: indices must be a lazyt.Tensor, got {type(indices).__name__}")
    if indices.dtype.name != "int64":
        raise DTypeError(f"{fn}: indices must be int64 (as max_pool{n}d returns them), got "
                         f"{indices.dtype.name}")
    if indices.shape != input.shape:
        raise ShapeError(f"{fn}: indices of shape {indices.shape} must have the input's shape "
                         f"{input.shape}")
    kernel = as_tuple(fn, "kernel_size", kernel_size, n, 1)
    stride = _stride(fn, stride, kernel)
    padding = as_tuple(fn, "padding", padding, n, 0)
    size = x.shape[2:]
    default = tuple((i - 1) * s - 2 * p + k for i, s, p, k in zip(size, stride, padding, kernel))
    if output_size is None:
        out = default
    else:
        sizes = list(output_size.shape if isinstance(output_size, Tensor) else output_size)
        if len(sizes) == n + 2:
            sizes = sizes[2:]
        elif len(sizes) == n + 1 and unbatched:
            sizes = sizes[1:]
        if len(sizes) != n:
            raise ShapeError(f"{fn}: output_size must have {n} or {n + 2} elements, got "
                             f"{output_size!r}")
        out = tuple(int(v) for v in sizes)
        for d, (o, df, s) in enumerate(zip(out, default, stride)):
            if not df - s < o < df + s:
                raise ShapeError(f"{fn}: invalid output_size {tuple(out)}: dim {d} must lie "
                                 f"strictly between {df - s} and {df + s}")
    if any(o < 1 for o in out):
        raise ShapeError(f"{fn}: the output size {out} is not positive (input {x.shape}, "
                         f"kernel_size {kernel}, stride {stride}, padding {padding})")
    idx = indices.unsqueeze(0) if unbatched else indices
    batch, channels = x.shape[:2]
    flat_in = (batch, channels, math.prod(size))
    zeros = creation.zeros(batch, channels, math.prod(out), dtype=x.dtype, device=x.device)
    idx = idx.reshape(*flat_in)
    summed = zeros.scatter_add(2, idx, x.reshape(*flat_in))
    # an index that overlapping windows share holds its value once, as torch writes it; the
    # gradient stays scatter_add's (a gather: each input gets the full gradient, as torch)
    count = zeros.scatter_add(2, idx, creation.ones(*flat_in, dtype=x.dtype, device=x.device))
    y = summed + where(count > 1, summed / count - summed, 0.0).detach()
    y = y.reshape(batch, channels, *out)
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None,  # noqa: A002
                 padding=0, output_size=None) -> Tensor:
    """The inverse of max_pool1d: `input`'s values placed at their `indices` in zeros of the
    pooled input's length (or `output_size`)."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None,  # noqa: A002
                 padding=0, output_size=None) -> Tensor:
    """The inverse of max_pool2d: `input`'s values placed at their flat `indices` (in H * W)
    in zeros of the pooled input's size (or `output_size`)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


# ---------------------------------------------------------------------- modules
class _MaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):  # noqa: A002 - torch's name
        return _max_pool(type(self).__name__, self._n, input, self.kernel_size, self.stride,
                         self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """`max_pool1d` as a module."""
    _n = 1


class MaxPool2d(_MaxPoolNd):
    """`max_pool2d` as a module."""
    _n = 2


class AvgPool1d(Module):
    """`avg_pool1d` as a module."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = as_tuple("AvgPool1d", "kernel_size", kernel_size, 1, 1)
        self.stride = as_tuple("AvgPool1d", "stride", stride if stride is not None
                               else kernel_size, 1, 1)
        self.padding = as_tuple("AvgPool1d", "padding", padding, 1, 0)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _avg_pool("AvgPool1d", 1, input, self.kernel_size, self.stride, self.padding,
                         self.ceil_mode, self.count_include_pad, None)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """`avg_pool2d` as a module."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _avg_pool("AvgPool2d", 2, input, self.kernel_size, self.stride, self.padding,
                         self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    _n = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _adaptive_avg_pool(type(self).__name__, self._n, input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """`adaptive_avg_pool1d` as a module."""
    _n = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """`adaptive_avg_pool2d` as a module."""
    _n = 2


class _AdaptiveMaxPoolNd(Module):
    _n = 2

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor):  # noqa: A002
        return _adaptive_max_pool(type(self).__name__, self._n, input, self.output_size,
                                  self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """`adaptive_max_pool1d` as a module."""
    _n = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """`adaptive_max_pool2d` as a module."""
    _n = 2


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        name, n = type(self).__name__, self._n
        self.kernel_size = as_tuple(name, "kernel_size", kernel_size, n, 1)
        self.stride = as_tuple(name, "stride", stride if stride is not None else kernel_size,
                               n, 1)
        self.padding = as_tuple(name, "padding", padding, n, 0)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return _max_unpool(type(self).__name__, self._n, input, indices, self.kernel_size,
                           self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """`max_unpool1d` as a module."""
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """`max_unpool2d` as a module."""
    _n = 2


# ---------------------------------------------------------------------- 3-D
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over sliding windows of `input` (N, C, D, H, W) or (C, D, H, W); `padding` pads
    with -inf. With `return_indices`, also the flat index in D * H * W of each maximum."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of `input` (N, C, D, H, W) or (C, D, H, W), as avg_pool2d."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average pooling of `input` (N, C, D, H, W) or (C, D, H, W) to `output_size`."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Maximum pooling of `input` (N, C, D, H, W) or (C, D, H, W) to `output_size`; with
    `return_indices`, also the flat index in D * H * W of each maximum."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None,  # noqa: A002
                 padding=0, output_size=None) -> Tensor:
    """The inverse of max_pool3d (flat indices in D * H * W)."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


# ---------------------------------------------------------------------- power-average pooling
def _lp_pool(fn: str, n: int, input, norm_type, kernel_size, stride,  # noqa: A002
             ceil_mode: bool) -> Tensor:
    """torch's formula: `(sum over the window of x ** p) ** (1 / p)`, from the window's
    average times its size (a negative sum, possible for odd p, gives NaN as in torch; a
    zero window gives 0 with gradient 0; p = inf is the window's maximum, the limit)."""
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or \
            norm_type <= 0:
        raise InvalidArgumentError(f"{fn}: norm_type must be a positive number, got "
                                   f"{norm_type!r}")
    kernel = as_tuple(fn, "kernel_size", kernel_size, n, 1)
    if math.isinf(norm_type):
        return _max_pool(fn, n, input, kernel, stride, 0, 1, ceil_mode, False)
    x = float_input(fn, "input", input)
    p = float(norm_type)
    powered = x * x if p == 2.0 else x ** p
    avg = _avg_pool(fn, n, powered, kernel, stride, 0, ceil_mode, True, None)
    total = avg.sign() * avg.abs().relu() * float(math.prod(kernel))
    positive = total > 0
    root = where(positive, total, 1.0) ** (1.0 / p)
    return where(positive, root, where(total < 0, float("nan"), 0.0))


def lp_pool1d(input: Tensor, norm_type, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, L) or (C, L): the p-norm of each window."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, H, W) or (C, H, W): the p-norm of each window."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


class MaxPool3d(_MaxPoolNd):
    """`max_pool3d` as a module."""
    _n = 3


class AvgPool3d(Module):
    """`avg_pool3d` as a module."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _avg_pool("AvgPool3d", 3, input, self.kernel_size, self.stride, self.padding,
                         self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """`adaptive_avg_pool3d` as a module."""
    _n = 3


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """`adaptive_max_pool3d` as a module."""
    _n = 3


class MaxUnpool3d(_MaxUnpoolNd):
    """`max_unpool3d` as a module."""
    _n = 3


class _LPPoolNd(Module):
    _n = 2

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _lp_pool(type(self).__name__, self._n, input, self.norm_type, self.kernel_size,
                        self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """`lp_pool1d` as a module."""
    _n = 1


class LPPool2d(_LPPoolNd):
    """`lp_pool2d` as a module."""
    _n = 2


class LPPool3d(_LPPoolNd):
    """`lp_pool3d` as a module."""
    _n = 3
