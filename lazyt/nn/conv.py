"""Convolutions in torch's layout (`conv1d/2d/3d`, `conv_transpose1d/2d/3d` and their modules)
as composites of Tensor ops, so autodiff differentiates them and every backend runs them.

im2col: the padded input is split into its stride phases by a reshape, so each of the
prod(kernel_size) kernel offsets is one unit-step slice (a view); the slices are stacked into
columns (one copy) and contracted with the weight in one matmul. A transposed convolution is
the convolution of the zero-upsampled input with the flipped, transposed weight. The window
helpers here (`windows`, `pad`, `as_tuple`) are shared with `pooling.py`.
"""
from __future__ import annotations

import itertools
import math
import operator

from .. import creation
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat, stack
from ..layout import pad as _layout_pad
from ..tensor import Tensor
from .init import fan_in_uniform
from .module import Module
from .parameter import Parameter
from ..amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
           "ConvTranspose2d", "ConvTranspose3d"]

_LAYOUT = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}
_KERNEL = {1: "kL", 2: "kH, kW", 3: "kD, kH, kW"}


# ---------------------------------------------------------------------- arguments
def as_tuple(fn: str, name: str, value, n: int, minimum: int | None = None) -> tuple:
    """`value` (an int, or a sequence of 1 or n ints) as a tuple of n ints >= `minimum`."""
    if isinstance(value, (tuple, list)):
        items = list(value)
    else:
        items = [value]
    try:
        if any(isinstance(v, bool) for v in items):
            raise TypeError
        ints = tuple(operator.index(v) for v in items)
    except TypeError:
        raise InvalidArgumentError(f"{fn}: {name} must be an int or a tuple of {n} ints, "
                                   f"got {value!r}") from None
    if len(ints) == 1:
        ints = ints * n
    if len(ints) != n:
        raise InvalidArgumentError(f"{fn}: {name} must be an int or a tuple of {n} ints, "
                                   f"got {value!r}")
    if minimum is not None and any(v < minimum for v in ints):
        raise InvalidArgumentError(f"{fn}: {name} must be >= {minimum} in every dim, got "
                                   f"{value!r}")
    return ints


def float_input(fn: str, name: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"{fn}: {name} must be a lazyt.Tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise DTypeError(f"{fn}: {name} must be a floating-point tensor, got {x.dtype.name} "
                         f"of shape {x.shape}")
    return x


def batched(fn: str, x: Tensor, n: int) -> tuple:
    """(x with a batch dim, whether one was added): torch takes (C, *spatial) as a batch of one."""
    if x.ndim == n + 1:
        return x.unsqueeze(0), True
    if x.ndim != n + 2:
        raise ShapeError(f"{fn}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) input "
                         f"{_LAYOUT[n]}, got shape {x.shape}")
    if 0 in x.shape[1:]:
        raise ShapeError(f"{fn}: input of shape {x.shape} has an empty channel or spatial dim")
    return x, False


def out_size(fn: str, size: tuple, kernel: tuple, stride: tuple, dilation: tuple,
             before: tuple, after: tuple) -> tuple:
    """The number of windows per spatial dim; raises when the kernel outgrows the padded input."""
    padded = tuple(s + b + a for s, b, a in zip(size, before, after))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(p < e for p, e in zip(padded, span)):
        raise ShapeError(f"{fn}: the padded input size per channel {padded} is smaller than the "
                         f"(dilated) kernel size {span} (input {size}, kernel {kernel}, "
                         f"dilation {dilation}, padding {tuple(zip(before, after))})")
    return tuple((p - e) // s + 1 for p, e, s in zip(padded, span, stride))


# ---------------------------------------------------------------------- windows (im2col)
def pad(x: Tensor, pads, value: float = 0.0) -> Tensor:
    """`x` with `pads[i] = (before, after)` elements of `value` around its i-th of the last
    len(pads) dims; a negative amount crops instead."""
    n = len(pads)
    for i, (before, after) in enumerate(pads):
        dim = x.ndim - n + i
        size = x.shape[dim]
        start, stop = max(-before, 0), size - max(-after, 0)
        parts = []
        if before > 0:
            parts.append(_filled(x, dim, before, value))
        if stop > start:
            parts.append(x.narrow(dim, start, stop - start) if (start, stop) != (0, size)
                         else x)
        if after > 0:
            parts.append(_filled(x, dim, after, value))
        if not parts:  # cropped to nothing
            parts.append(_filled(x, dim, 0, value))
        x = parts[0] if len(parts) == 1 else cat(parts, dim)
    return x


def _filled(x: Tensor, dim: int, length: int, value: float) -> Tensor:
    shape = x.shape[:dim] + (length,) + x.shape[dim + 1:]
    return creation.full(shape, value, dtype=x.dtype, device=x.device)


def windows(x: Tensor, kernel: tuple, stride: tuple, dilation: tuple, before: tuple,
            out: tuple, value: float = 0.0) -> list:
    """The prod(kernel) views of `x` (lead..., *spatial) a sliding window reads, kernel offsets
    in row-major order: view k has shape (lead..., *out) and holds
    `x_padded[..., o * stride + k * dilation]` (`before` elements of padding in front;
    positions outside `x` read `value`)."""
    n = len(kernel)
    lead = x.shape[:x.ndim - n]
    # every spatial dim padded (or cropped) to the multiple of its stride covering all reads;
    # a strided dim is then split (T,) -> (T / s, s): position q * s + r is block q, phase r,
    # so every view is a unit-step slice (whose gradient is a zero pad, not a scatter)
    spans = [s * -(-((o - 1) * s + (k - 1) * d + 1) // s)
             for o, s, k, d in zip(out, stride, kernel, dilation)]
    sizes = x.shape[x.ndim - n:]
    x = pad(x, [(b, t - b - size) for b, t, size in zip(before, spans, sizes)], value)
    if any(s > 1 for s in stride):
        x = x.reshape(*lead, *(v for t, s in zip(spans, stride)
                               for v in ((t // s, s) if s > 1 else (t,))))
    keep = (slice(None),) * len(lead)
    views = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        key = keep
        for k, o, s, d in zip(offset, out, stride, dilation):
            q, r = divmod(k * d, s)
            key += (slice(q, q + o), slice(r, r + 1)) if s > 1 else (slice(q, q + o),)
        view = x[key]
        views.append(view if view.shape == lead + out else view.reshape(*lead, *out))
    return views


# ---------------------------------------------------------------------- convolution
def _check_weight(fn: str, n: int, x: Tensor, weight, bias, groups, transposed: bool) -> None:
    """Weight, bias and groups must fit the batched input (N, C, ...)."""
    float_input(fn, "weight", weight)
    layout = ("(in_channels, out_channels/groups, " if transposed
              else "(out_channels, in_channels/groups, ") + _KERNEL[n] + ")"
    if weight.ndim != n + 2:
        raise ShapeError(f"{fn}: weight must be {n + 2}-D {layout}, got shape {weight.shape}")
    if weight.dtype != x.dtype:
        raise DTypeError(f"{fn}: input dtype {x.dtype.name} and weight dtype "
                         f"{weight.dtype.name} must be the same")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise InvalidArgumentError(f"{fn}: groups must be a positive int, got {groups!r}")
    if 0 in weight.shape:
        raise ShapeError(f"{fn}: weight of shape {weight.shape} has an empty dim")
    channels = x.shape[1]
    if transposed:
        if weight.shape[0] != channels:
            raise ShapeError(f"{fn}: weight {layout} of shape {weight.shape} expects "
                             f"{weight.shape[0]} input channels, got input of shape {x.shape}")
        if channels % groups:
            raise ShapeError(f"{fn}: input channels ({channels}) must be divisible by groups "
                             f"({groups})")
        out_channels = weight.shape[1] * groups
    else:
        if channels != weight.shape[1] * groups:
            raise ShapeError(f"{fn}: weight {layout} of shape {weight.shape} with groups="
                             f"{groups} expects {weight.shape[1] * groups} input channels, got "
                             f"input of shape {x.shape} ({channels} channels)")
        out_channels = weight.shape[0]
        if out_channels % groups:
            raise ShapeError(f"{fn}: out_channels ({out_channels}, weight shape {weight.shape}) "
                             f"must be divisible by groups ({groups})")
    if bias is not None:
        float_input(fn, "bias", bias)
        if bias.shape != (out_channels,):
            raise ShapeError(f"{fn}: bias must have shape ({out_channels},) (out_channels), "
                             f"got {bias.shape}")
        if bias.dtype != x.dtype:
            raise DTypeError(f"{fn}: input dtype {x.dtype.name} and bias dtype "
                             f"{bias.dtype.name} must be the same")


def _conv_padding(fn: str, padding, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """(before, after) per spatial dim for an int/tuple padding or "valid"/"same"."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * n, (0,) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise InvalidArgumentError(f"{fn}: padding='same' is not supported for "
                                           f"strided convolutions (stride {stride})")
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            before = tuple(t // 2 for t in total)
            return before, tuple(t - b for t, b in zip(total, before))
        raise InvalidArgumentError(f"{fn}: padding must be an int, a tuple of {n} ints, "
                                   f"'valid' or 'same', got {padding!r}")
    p = as_tuple(fn, "padding", padding, n, 0)
    return p, p


def conv_columns(x: Tensor, weight: Tensor, stride: tuple, dilation: tuple, before: tuple,
                 out: tuple, groups: int) -> Tensor:
    """The convolution of a batched `x` (N, C, *S) by `weight` (O, C/groups, *k), without
    bias: im2col columns (C * K, N * L) contracted with the weight (O, C * K) in one matmul."""
    n = len(out)
    batch, channels = x.shape[:2]
    out_channels, kernel = weight.shape[0], weight.shape[2:]
    k, length = math.prod(kernel), math.prod(out)
    spatial = tuple(range(2, 2 + n))
    xt = x.permute(1, 0, *spatial)  # (C, N, *S): the stacked views are the columns' layout
    views = windows(xt, kernel, stride, dilation, before, out)
    cols = views[0].unsqueeze(1) if len(views) == 1 else stack(views, 1)  # (C, K, N, *O)
    if groups == 1:
        y = weight.reshape(out_channels, channels * k) @ cols.reshape(channels * k,
                                                                      batch * length)
    else:
        per = channels // groups * k
        y = (weight.reshape(groups, out_channels // groups, per)
             @ cols.reshape(groups, per, batch * length))
    return y.reshape(out_channels, batch, *out).permute(1, 0, *spatial)


def _add_bias(y: Tensor, bias) -> Tensor:
    if bias is None:
        return y
    return y + bias.reshape(bias.shape[0], *([1] * (y.ndim - 2)))


def _conv(fn: str, n: int, input, weight, bias, stride, padding, dilation,  # noqa: A002
          groups) -> Tensor:
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, _conv, fn, n, input, weight, bias, stride, padding,
                         dilation, groups)
    x, unbatched = batched(fn, float_input(fn, "input", input), n)
    _check_weight(fn, n, x, weight, bias, groups, transposed=False)
    kernel = weight.shape[2:]
    stride = as_tuple(fn, "stride", stride, n, 1)
    dilation = as_tuple(fn, "dilation", dilation, n, 1)
    before, after = _conv_padding(fn, padding, kernel, stride, dilation)
    out = out_size(fn, x.shape[2:], kernel, stride, dilation, before, after)
    y = _add_bias(conv_columns(x, weight, stride, dilation, before, out, groups), bias)
    return y.squeeze(0) if unbatched else y


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of `input` (N, C_in, L) or (C_in, L) by `weight`
    (C_out, C_in/groups, kL); `padding` is an int, a tuple, "valid" or "same"."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of `input` (N, C_in, H, W) or (C_in, H, W) by
    `weight` (C_out, C_in/groups, kH, kW); `padding` is an int, a tuple, "valid" or "same"."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """3-D convolution (cross-correlation) of `input` (N, C_in, D, H, W) or (C_in, D, H, W)
    by `weight` (C_out, C_in/groups, kD, kH, kW)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


# ---------------------------------------------------------------------- transposed convolution
def transpose_output_padding(fn: str, output_padding, stride: tuple, dilation: tuple) -> tuple:
    n = len(stride)
    op = as_tuple(fn, "output_padding", output_padding, n, 0)
    for p, s, d in zip(op, stride, dilation):
        if p >= s and p >= d:
            raise InvalidArgumentError(f"{fn}: output_padding {op} must be smaller than either "
                                       f"stride {stride} or dilation {dilation} in every dim")
    return op


def upsample_zeros(x: Tensor, stride: tuple) -> Tensor:
    """`x` (lead..., *S) with stride - 1 zeros after each element of its last len(stride) dims
    (so (L - 1) * s + 1 + (s - 1) long): the input of a strided transposed convolution."""
    n = len(stride)
    for i, s in enumerate(stride):
        if s == 1:
            continue
        dim = x.ndim - n + i
        shape = x.shape
        zeros = creation.zeros(*shape[:dim + 1], s - 1, *shape[dim + 1:], dtype=x.dtype,
                               device=x.device)
        x = cat([x.unsqueeze(dim + 1), zeros], dim + 1).reshape(
            *shape[:dim], shape[dim] * s, *shape[dim + 1:])
    return x


def _conv_transpose(fn: str, n: int, input, weight, bias, stride, padding,  # noqa: A002
                    output_padding, groups, dilation) -> Tensor:
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, _conv_transpose, fn, n, input, weight, bias, stride,
                         padding, output_padding, groups, dilation)
    x, unbatched = batched(fn, float_input(fn, "input", input), n)
    _check_weight(fn, n, x, weight, bias, groups, transposed=True)
    kernel = weight.shape[2:]
    stride = as_tuple(fn, "stride", stride, n, 1)
    dilation = as_tuple(fn, "dilation", dilation, n, 1)
    if isinstance(padding, str):
        raise InvalidArgumentError(f"{fn}: padding must be an int or a tuple of {n} ints "
                                   f"(torch has no string padding for transposed "
                                   f"convolutions), got {padding!r}")
    p = as_tuple(fn, "padding", padding, n, 0)
    op = transpose_output_padding(fn, output_padding, stride, dilation)
    size = x.shape[2:]
    out = tuple((i - 1) * s - 2 * q + d * (k - 1) + o + 1
                for i, s, q, d, k, o in zip(size, stride, p, dilation, kernel, op))
    if any(o < 1 for o in out):
        raise ShapeError(f"{fn}: the output size {out} is not positive (input {size}, kernel "
                         f"{kernel}, stride {stride}, padding {p}, dilation {dilation}, "
                         f"output_padding {op})")
    # weight (C_in, C_out/g, *k) -> (C_out, C_in/g, *k), flipped in every spatial dim
    c_in, c_out_g = weight.shape[:2]
    spatial = tuple(range(3, 3 + n))
    w = weight.reshape(groups, c_in // groups, c_out_g, *kernel).permute(0, 2, 1, *spatial)
    w = w.reshape(groups * c_out_g, c_in // groups, *kernel)
    w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * n]
    before = tuple(d * (k - 1) - q for d, k, q in zip(dilation, kernel, p))
    y = conv_columns(upsample_zeros(x, stride), w, (1,) * n, dilation, before, out, groups)
    y = _add_bias(y, bias)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """1-D transposed convolution of `input` (N, C_in, L) or (C_in, L) by `weight`
    (C_in, C_out/groups, kL): the gradient of conv1d with respect to its input."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """2-D transposed convolution of `input` (N, C_in, H, W) or (C_in, H, W) by `weight`
    (C_in, C_out/groups, kH, kW): the gradient of conv2d with respect to its input."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """3-D transposed convolution of `input` (N, C_in, D, H, W) or (C_in, D, H, W) by `weight`
    (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ---------------------------------------------------------------------- modules
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """torch's `_ConvNd`: the weight (out, in/groups, *k), or (in, out/groups, *k) when
    transposed, and bias drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch's
    kaiming_uniform with a=sqrt(5)), fan_in = weight.shape[1] * prod(kernel_size)."""

    _n: int = 2
    _transposed: bool = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None, output_padding=0):
        super().__init__()
        name, n = type(self).__name__, self._n
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels),
                       ("groups", groups)):
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if arg == "groups" else 0):
                raise InvalidArgumentError(f"{name}: {arg} must be a "
                                           f"{'positive' if arg == 'groups' else 'non-negative'}"
                                           f" int, got {v!r}")
        if in_channels % groups:
            raise InvalidArgumentError(f"{name}: in_channels ({in_channels}) must be divisible "
                                       f"by groups ({groups})")
        if out_channels % groups:
            raise InvalidArgumentError(f"{name}: out_channels ({out_channels}) must be "
                                       f"divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise InvalidArgumentError(f"{name}: padding_mode must be one of "
                                       f"{', '.join(map(repr, _PADDING_MODES))}, got "
                                       f"{padding_mode!r}")
        if padding_mode != "zeros" and self._transposed:
            raise InvalidArgumentError(f"{name}: only padding_mode='zeros' is supported for "
                                       f"transposed convolutions, got {padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = as_tuple(name, "kernel_size", kernel_size, n, 1)
        self.stride = as_tuple(name, "stride", stride, n, 1)
        self.dilation = as_tuple(name, "dilation", dilation, n, 1)
        if isinstance(padding, str):
            if self._transposed:
                raise InvalidArgumentError(f"{name}: padding must be an int or a tuple of {n} "
                                           f"ints, got {padding!r}")
            _conv_padding(name, padding, self.kernel_size, self.stride, self.dilation)
            self.padding = padding
        else:
            self.padding = as_tuple(name, "padding", padding, n, 0)
        self.output_padding = (
            transpose_output_padding(name, output_padding, self.stride, self.dilation)
            if self._transposed else (0,) * n)
        self.transposed = self._transposed
        self.groups = groups
        self.padding_mode = padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        self.weight = Parameter(fan_in_uniform(shape, fan_in, dtype, device))
        if bias:
            self.bias = Parameter(fan_in_uniform((out_channels,), fan_in, dtype, device))
        else:
            self.register_parameter("bias", None)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if isinstance(self.padding, str) or self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        padding = self.padding
        if self.padding_mode != "zeros":
            # reflect / replicate / circular: pad by that rule first, then convolve unpadded
            before, after = _conv_padding(type(self).__name__, padding, self.kernel_size,
                                          self.stride, self.dilation)
            pads = [p for b, a in zip(reversed(before), reversed(after)) for p in (b, a)]
            input = _layout_pad(input, pads, self.padding_mode)
            padding = (0,) * self._n
        return _conv(type(self).__name__, self._n, input, self.weight, self.bias, self.stride,
                     padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """Applies `conv1d` with a learned weight (out_channels, in_channels/groups, kL)."""
    _n = 1


class Conv2d(_Conv):
    """Applies `conv2d` with a learned weight (out_channels, in_channels/groups, kH, kW)."""
    _n = 2


class Conv3d(_Conv):
    """Applies `conv3d` with a learned weight (out_channels, in_channels/groups, kD, kH, kW)."""
    _n = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input: Tensor, output_size=None) -> Tensor:  # noqa: A002
        """`output_size` (the spatial sizes, optionally with N and C in front) picks the
        output_padding that gives that size, as torch."""
        name, n = type(self).__name__, self._n
        op = self.output_padding
        if output_size is not None:
            op = self._output_padding(name, input, output_size)
        return _conv_transpose(name, n, input, self.weight, self.bias, self.stride,
                               self.padding, op, self.groups, self.dilation)

    def _output_padding(self, name: str, input, output_size) -> tuple:  # noqa: A002
        n = self._n
        sizes = list(output_size.shape if isinstance(output_size, Tensor) else output_size)
        if len(sizes) in (n + 1, n + 2):
            sizes = sizes[len(sizes) - n:]
        if len(sizes) != n or not isinstance(input, Tensor) or input.ndim < n:
            raise ShapeError(f"{name}: output_size must have {n} or {n + 2} elements, got "
                             f"{output_size!r}")
        spatial = input.shape[input.ndim - n:]
        op = []
        for d in range(n):
            least = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not least <= sizes[d] < least + self.stride[d]:
                raise ShapeError(f"{name}: requested an output size of {tuple(sizes)}, but valid "
                                 f"sizes in dim {d} range from {least} to "
                                 f"{least + self.stride[d] - 1} (for an input of {spatial})")
            op.append(sizes[d] - least)
        return tuple(op)


class ConvTranspose1d(_ConvTranspose):
    """Applies `conv_transpose1d` with a learned weight (in_channels, out_channels/groups, kL)."""
    _n = 1


class ConvTranspose2d(_ConvTranspose):
    """Applies `conv_transpose2d` with a learned weight (in_channels, out_channels/groups, kH,
    kW)."""
    _n = 2


class ConvTranspose3d(_ConvTranspose):
    """Applies `conv_transpose3d` with a learned weight (in_channels, out_channels/groups, kD,
    kH, kW)."""
    _n = 3
