"""torch.nn.functional.interpolate and the `Upsample` modules, as composites: each spatial
dim is resampled in turn by `index_select` at source positions computed on the host with
torch's formulas, and for the linear modes a weighted sum of the two neighbours (bicubic: of
four, with torch's cubic convolution weights, A = -0.75, the neighbours' indices clamped to the
input), so every backend runs it and autodiff differentiates it (nearest's gradient adds up at
each source).

Source positions (torch's `UpSample.h`): nearest takes floor(dst * scale), nearest-exact
floor((dst + 0.5) * scale), both clipped to the last input; linear takes dst * (in - 1) /
(out - 1) with `align_corners=True`, else max(0, (dst + 0.5) * scale - 0.5) (bicubic: without
the max). `scale` is 1 / scale_factor when a scale factor was given (and not recomputed), else
in / out. As in torch, the linear modes copy a dim whose size stays (bicubic only with
align_corners or without a scale factor other than 1), and 4-D nearest copies or halves the
positions when a size stays or doubles. "area" is adaptive average pooling.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .. import dtype as dt
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import as_tensor, index_select
from ..tensor import Tensor
from .module import Module
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate", "upsample", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}  # mode -> spatial dims
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75   # torch's cubic convolution constant


# ---------------------------------------------------------------------- source positions
def _nearest_source(n_in: int, n_out: int, scale, exact: bool, shortcut: bool) -> np.ndarray:
    """The input position each output position copies (torch computes it in float32; its
    2-D kernel copies or halves without the formula when the size stays or doubles)."""
    if shortcut and not exact and n_out == n_in:
        return np.arange(n_out)
    if shortcut and not exact and n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    i = np.arange(n_out, dtype=np.float32)
    src = np.floor(((i + np.float32(0.5)) if exact else i) * s).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _linear_source(n_in: int, n_out: int, scale, align_corners: bool, acc):
    """(i0, i1, w0, w1): each output position is w0 * x[i0] + w1 * x[i1], the positions and
    weights computed in `acc` (the input's float type) as torch does."""
    i = np.arange(n_out).astype(acc)
    if align_corners:
        s = acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0)
        src = s * i
    else:
        s = acc(1.0 / scale) if scale else acc(n_in) / acc(n_out)
        src = np.maximum(s * (i + acc(0.5)) - acc(0.5), acc(0))
    i0 = np.minimum(src.astype(np.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    w1 = np.clip(src - i0.astype(acc), acc(0), acc(1)).astype(acc)
    return i0, i1, (acc(1) - w1).astype(acc), w1


def _fma(a, b, c, acc):
    """a * b + c rounded once, as torch's CPU kernels compute it (compiled with fused
    multiply-adds); float32 through float64, float64 plainly."""
    if acc is np.float32:
        return (np.float64(a) * np.float64(b) + np.float64(c)).astype(acc)
    return (a * b + c).astype(acc)


def _cubic_source(n_in: int, n_out: int, scale, align_corners: bool, acc):
    """(indices, weights), four of each: output position j is sum_k weights[k][j] *
    x[indices[k][j]], the taps at floor(src) - 1 .. floor(src) + 2 clamped to the input, the
    weights torch's cubic convolution coefficients of the offset, computed in `acc`."""
    i = np.arange(n_out).astype(acc)
    if align_corners:
        s = acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0)
        src = s * i
    else:
        s = acc(1.0 / scale) if scale else acc(n_in) / acc(n_out)
        src = _fma(s, i + acc(0.5), acc(-0.5), acc)
    # torch floors in float32 (floorf) whatever the dtype
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n_in - 1)
    t = np.clip(src - i0.astype(acc), acc(0), acc(1)).astype(acc)
    a = acc(_CUBIC_A)

    def near(x):   # |x| <= 1: ((a + 2) * x - (a + 3)) * x * x + 1
        return _fma(_fma(a + acc(2), x, -(a + acc(3)), acc) * x, x, acc(1), acc)

    def far(x):    # 1 < |x| < 2: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        u = _fma(_fma(a, x, -(acc(5) * a), acc), x, acc(8) * a, acc)
        return _fma(u, x, -(acc(4) * a), acc)

    one = acc(1)
    weights = [far(t + one), near(t), near(one - t), far(acc(2) - t)]
    indices = [np.clip(i0 + k, 0, n_in - 1) for k in (-1, 0, 1, 2)]
    return indices, [np.asarray(w, dtype=acc) for w in weights]


def _along(x: Tensor, d: int, positions: np.ndarray) -> Tensor:
    if np.array_equal(positions, np.arange(x.shape[d])):
        return x
    return index_select(x, d, as_tensor(positions.astype(np.int64), x))


def _weights(x: Tensor, d: int, w: np.ndarray) -> Tensor:
    shape = [1] * x.ndim
    shape[d] = len(w)
    return as_tensor(w.reshape(shape).astype(x.dtype.np), x)


# ---------------------------------------------------------------------- arguments
def _sizes(x: Tensor, n: int, size, scale_factor, recompute: bool):
    """(output sizes, scales for the kernel or None per dim)."""
    if (size is None) == (scale_factor is None):
        raise InvalidArgumentError("interpolate: exactly one of size and scale_factor must be "
                                   "given")
    spatial = x.shape[2:]
    if size is not None:
        items = list(size) if isinstance(size, (tuple, list)) else [size] * n
        if len(items) != n:
            raise ShapeError(f"interpolate: size {size!r} must give {n} spatial sizes for "
                             f"input of shape {x.shape}")
        try:
            out = tuple(operator.index(s) for s in items)
        except TypeError:
            raise DTypeError(f"interpolate: size must be an int or a sequence of ints, got "
                             f"{size!r}") from None
        scales = (None,) * n
    else:
        items = list(scale_factor) if isinstance(scale_factor, (tuple, list)) \
            else [scale_factor] * n
        if len(items) != n:
            raise ShapeError(f"interpolate: scale_factor {scale_factor!r} must give {n} "
                             f"factors for input of shape {x.shape}")
        if not all(isinstance(s, numbers.Real) and not isinstance(s, bool) for s in items):
            raise DTypeError(f"interpolate: scale_factor must be a number or a sequence of "
                             f"numbers, got {scale_factor!r}")
        out = tuple(int(math.floor(float(i) * float(s))) for i, s in zip(spatial, items))
        scales = (None,) * n if recompute else tuple(float(s) for s in items)
    if any(s <= 0 for s in out) or any(s <= 0 for s in spatial):
        raise ShapeError(f"interpolate: input and output sizes should be greater than 0, got "
                         f"input {tuple(spatial)} and output {out}")
    return out, scales


def interpolate(input: Tensor, size=None, scale_factor=None,  # noqa: A002 - torch's name
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of `input` (N, C, L), (N, C, H, W) or (N, C, D, H, W) to
    `size`, or by `scale_factor` (output floor(in * factor)), with mode "nearest",
    "nearest-exact", "linear" (3-D), "bilinear" or "bicubic" (4-D), "trilinear" (5-D) or "area"
    (3-D and 4-D). `align_corners` (linear and bicubic modes only; default False) maps the
    corner pixels' centres onto each other."""
    if not isinstance(input, Tensor):
        raise DTypeError(f"interpolate: input must be a lazyt.Tensor, got "
                         f"{type(input).__name__}")
    x = input
    if mode not in _MODES:
        raise InvalidArgumentError(f"interpolate: mode must be one of {', '.join(_MODES)}, got "
                                   f"{mode!r}")
    if x.ndim not in (3, 4, 5):
        raise ShapeError(f"interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got "
                         f"shape {x.shape}")
    n = x.ndim - 2
    if mode in _LINEAR and _LINEAR[mode] != n:
        raise ShapeError(f"interpolate: got {x.ndim}-D input, but {mode} mode needs "
                         f"{_LINEAR[mode] + 2}-D input")
    if mode not in _LINEAR and align_corners is not None:
        raise InvalidArgumentError("interpolate: align_corners can only be set with the "
                                   "interpolating modes linear, bilinear, bicubic and trilinear")
    if antialias:
        raise InvalidArgumentError(f"interpolate: antialias is not supported (mode {mode!r}); "
                                   f"pass antialias=False")
    out, scales = _sizes(x, n, size, scale_factor, bool(recompute_scale_factor))
    if mode == "area":
        if n == 3:
            raise ShapeError("interpolate: area mode supports 3-D and 4-D input, got shape "
                             f"{x.shape}")
        return (adaptive_avg_pool1d if n == 1 else adaptive_avg_pool2d)(x, out)
    if mode in ("nearest", "nearest-exact"):
        for i in range(n):
            d = 2 + i
            x = _along(x, d, _nearest_source(x.shape[d], out[i], scales[i],
                                             mode == "nearest-exact", n == 2))
        return x
    if not x.dtype.is_float:
        raise DTypeError(f"interpolate: {mode} mode needs a floating-point input, got "
                         f"{x.dtype.name}")
    align = bool(align_corners)
    resize = _cubic_resize if mode == "bicubic" else _linear_resize
    if x.dtype is dt.float16:  # interpolated in float32 and rounded once, as torch's opmath
        return resize(x.to(dt.float32), out, scales, align).to(dt.float16)
    return resize(x, out, scales, align)


def _linear_resize(x: Tensor, out: tuple, scales: tuple, align: bool) -> Tensor:
    """Linear interpolation of each spatial dim in turn (bilinear and trilinear are
    separable)."""
    acc = np.float64 if x.dtype is dt.float64 else np.float32
    for i, (n_out, scale) in enumerate(zip(out, scales)):
        d = 2 + i
        if x.shape[d] == n_out:
            continue  # torch copies a dim whose size stays, whatever the scale factor
        i0, i1, w0, w1 = _linear_source(x.shape[d], n_out, scale, align, acc)
        x = _along(x, d, i0) * _weights(x, d, w0) + _along(x, d, i1) * _weights(x, d, w1)
    return x


def _cubic_resize(x: Tensor, out: tuple, scales: tuple, align: bool) -> Tensor:
    """Bicubic interpolation, one spatial dim after the other (it is separable). Unlike
    the linear modes, torch's forward resamples a dim whose size stays when a scale factor
    other than 1 was given (without align_corners)."""
    acc = np.float64 if x.dtype is dt.float64 else np.float32
    for i in reversed(range(len(out))):  # W first, then H: torch's order of summation
        d, n_out, scale = 2 + i, out[i], scales[i]
        if x.shape[d] == n_out and (align or scale is None or scale == 1):
            continue  # the source positions are the outputs': weights 0 and 1, a copy
        indices, weights = _cubic_source(x.shape[d], n_out, scale, align, acc)
        total = None
        for k, w in zip(indices, weights):
            term = _along(x, d, k) * _weights(x, d, w)
            total = term if total is None else total + term
        x = total
    return x


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Tensor:
    """torch.nn.functional.upsample (deprecated there): `interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---------------------------------------------------------------------- modules
class Upsample(Module):
    """`interpolate` as a module: `Upsample(scale_factor=2, mode="bilinear")`."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(s) for s in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-D nearest upsampling (torch's module of this name)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-D bilinear upsampling with `align_corners=True` (torch's module of this name)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
