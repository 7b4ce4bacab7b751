"""torch.nn.functional.grid_sample and affine_grid as composites of Tensor ops (floor, round,
where, gather, arithmetic), so every backend runs them and autodiff differentiates them with
respect to the input, the grid and theta.

Formulas follow torch's CPU kernels (`GridSamplerKernel.cpp` for 4-D, `GridSampler.h` for
5-D): a grid value g in [-1, 1] maps to the pixel coordinate (g + 1) * (size - 1) / 2 with
`align_corners=True`, else (g + 1) * size / 2 - 0.5; "border" clamps it to [0, size - 1] and
"reflection" folds it about the corner pixels' centres (or edges) before clamping, and the
clamp's gradient is 0 on the borders as torch's. Each output gathers its 1 (nearest), 2^n
(bilinear) or 4 x 4 (bicubic) taps in one `gather`, taps outside the input reading 0; bicubic
pads each integer tap position rather than the coordinate, as torch does.
"""
from __future__ import annotations

import operator
import warnings
from fractions import Fraction

import numpy as np

from .. import dtype as dt
from ..errors import DeviceError, DTypeError, InvalidArgumentError, ShapeError
from ..creation import zeros_like
from ..functional import as_tensor, stack, where
from ..tensor import Tensor
from .conv import float_input as _float_tensor

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75           # torch's cubic convolution constant (OpenCV's; PIL uses -0.5)
_INT_MAX = 2 ** 31 - 1     # 5-D coordinates beyond int32 (or NaN) become -100, as torch's
_DEFAULT_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                    "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                    "old behavior is desired. See the documentation of grid_sample for details.")


# ---------------------------------------------------------------------- arguments
def _align(fn: str, align_corners) -> bool:
    """align_corners as a bool; None is False with torch's warning."""
    if align_corners is None:
        warnings.warn(_DEFAULT_WARNING, UserWarning, stacklevel=3)
        return False
    if not isinstance(align_corners, (bool, np.bool_)):
        raise DTypeError(f"{fn}: align_corners must be a bool or None, got "
                         f"{type(align_corners).__name__}")
    return bool(align_corners)


def _check_sample_args(input: Tensor, grid: Tensor, mode, padding_mode) -> None:  # noqa: A002
    fn = "grid_sample"
    if mode not in _MODES:
        raise InvalidArgumentError(f"{fn}: mode must be one of "
                                   f"{', '.join(repr(m) for m in _MODES)}, got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise InvalidArgumentError(f"{fn}: padding_mode must be one of "
                                   f"{', '.join(repr(p) for p in _PADDINGS)}, got "
                                   f"{padding_mode!r}")
    _float_tensor(fn, "input", input)
    _float_tensor(fn, "grid", grid)
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise ShapeError(f"{fn}: expected a 4-D input (N, C, H, W) with a 4-D grid "
                         f"(N, H_out, W_out, 2), or a 5-D input (N, C, D, H, W) with a 5-D grid "
                         f"(N, D_out, H_out, W_out, 3), got input of shape {input.shape} and grid "
                         f"of shape {grid.shape}")
    n = input.ndim - 2
    if grid.shape[0] != input.shape[0]:
        raise ShapeError(f"{fn}: grid and input must have the same batch size, got input of "
                         f"shape {input.shape} and grid of shape {grid.shape}")
    if grid.shape[-1] != n:
        raise ShapeError(f"{fn}: for {input.ndim}-D input the grid's last dim must be {n} "
                         f"(x, y{', z' if n == 3 else ''}), got grid of shape {grid.shape}")
    if 0 in input.shape[2:]:
        raise ShapeError(f"{fn}: input of shape {input.shape} has an empty spatial dim")
    if mode == "bicubic" and n != 2:
        raise ShapeError(f"{fn}: bicubic mode supports only 4-D input, got shape "
                         f"{input.shape}")
    if input.dtype is not grid.dtype:
        raise DTypeError(f"{fn}: input and grid must have the same dtype, got input "
                         f"{input.dtype.name} and grid {grid.dtype.name}")
    if input.device != grid.device:
        raise DeviceError(f"{fn}: input and grid must be on the same device, got input on "
                          f"{input.device} and grid on {grid.device}")


# ---------------------------------------------------------------------- coordinates
class _Axis:
    """One spatial dim of the input: maps grid values to (padded) pixel coordinates."""

    def __init__(self, size: int, align: bool, padding: str, volumetric: bool):
        self.size, self.align, self.padding = size, align, padding
        self.volumetric = volumetric  # torch's 5-D kernel treats NaN and huge values apart

    def unnormalize(self, g: Tensor) -> Tensor:
        if self.volumetric:  # torch's scalar formulas
            if self.align:
                return (g + 1.0) / 2 * float(self.size - 1)
            return ((g + 1.0) * float(self.size) - 1.0) / 2
        if self.align:
            return (g + 1.0) * ((self.size - 1) / 2)
        return (g + 1.0) * (self.size / 2) - 0.5

    def clip(self, c: Tensor) -> Tensor:
        """c clamped to [0, size - 1], gradient 0 on both borders. NaN goes to 0 in torch's
        4-D kernel and to size - 1 in its 5-D one."""
        hi = float(self.size - 1)
        if self.volumetric:
            return where(c < hi, where(c > 0.0, c, 0.0), hi)
        return where(c > 0.0, where(c < hi, c, hi), 0.0)

    def reflect(self, c: Tensor) -> Tensor:
        """c folded into [low, low + span] about the corner pixels' centres (align_corners)
        or edges."""
        low, twice_span = (0.0, 2.0 * (self.size - 1)) if self.align else (-0.5, 2.0 * self.size)
        if twice_span == 0:   # a single pixel with align_corners: its centre
            return _constant_like(c, 0.0)
        m = (c - low).abs()
        extra = m - (m / twice_span).trunc() * twice_span
        back = twice_span - extra
        return where(extra > back, back, extra) + low

    def pad(self, c: Tensor) -> Tensor:
        if self.padding == "border":
            c = self.clip(c)
        elif self.padding == "reflection":
            c = self.clip(self.reflect(c))
        if self.volumetric and self.padding == "zeros":
            c = where((c > _INT_MAX - 1) | (c < -_INT_MAX - 1) | c.isnan(), -100.0, c)
        return c

    def taps(self, g: Tensor, mode: str) -> tuple[list, list]:
        """(tap coordinates, weights): integer-valued float tensors shaped like g (padded,
        not yet checked against the input's bounds) and the weights that mix them."""
        c = self.unnormalize(g)
        if mode == "nearest":  # round half to even, as torch's nearbyint; the weight 1 has
            # gradient 0 to the grid so that the grid's gradient is zeros as torch's, not absent
            c = self.pad(c)
            return [c.round()], [_constant_like(c, 1.0)]
        if mode == "bilinear":
            c = self.pad(c)
            f = c.floor()
            w1 = c - f
            return [f, f + 1.0], [1.0 - w1, w1]
        f = c.floor()  # bicubic: pad the four integer taps, not the coordinate
        return [self.pad(f + float(j)) for j in (-1, 0, 1, 2)], _cubic_weights(c - f)


def _constant_like(c: Tensor, value: float) -> Tensor:
    """`value` in c's shape, linked to c with gradient 0 (torch's grid gradient there is zeros,
    not absent)."""
    return where(zeros_like(c, dtype=dt.bool_), c, value)


def _cubic_weights(t: Tensor) -> list:
    """torch's cubic convolution coefficients for taps at -1, 0, 1, 2 from offset t in [0, 1)."""
    a = _CUBIC_A

    def near(x):   # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1.0

    def far(x):    # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


# ---------------------------------------------------------------------- grid_sample
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002 - torch's name
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample `input` (N, C, H, W) or (N, C, D, H, W) at the normalized locations of `grid`
    (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), its last dim ordered (x, y[, z]),
    -1 and 1 being the extreme pixels' centres (align_corners=True) or outer edges (False,
    the default). mode "bilinear" (trilinear for 5-D), "nearest" or "bicubic" (4-D only);
    padding_mode "zeros", "border" or "reflection" for locations outside."""
    _check_sample_args(input, grid, mode, padding_mode)
    align = _align("grid_sample", align_corners)
    if input.dtype is dt.float16:  # sampled in float32 and rounded once (torch's CPU kernel
        # rounds every step to half; this is nearer the exact value)
        return _sample(input.to(dt.float32), grid.to(dt.float32), mode, padding_mode,
                       align).to(dt.float16)
    return _sample(input, grid, mode, padding_mode, align)


def _sample(x: Tensor, grid: Tensor, mode: str, padding: str, align: bool) -> Tensor:
    n_batch, channels, *spatial = x.shape
    out_spatial = grid.shape[1:-1]
    n = len(spatial)
    points = int(np.prod(out_spatial, dtype=np.int64))
    g = grid.reshape(n_batch, points, n)
    index = mask = None
    weights = []  # per dim, innermost (x) first: (N, 1, *tap axes, P)
    stride = 1
    for k in range(n):  # k = 0 is x, the last spatial dim of the input
        size = spatial[n - 1 - k]
        axis = _Axis(size, align, padding, volumetric=n == 3)
        taps, w = axis.taps(g[:, :, k], mode)
        shape = [n_batch, 1] + [1] * n + [points]
        shape[1 + n - k] = len(taps)   # the tap axes are ordered (z, y, x) like the input
        pos = stack(taps, dim=1).reshape(shape)
        inside = (pos > -1.0) & (pos < float(size))
        flat = where(inside, pos, 0.0).long() * stride
        index = flat if index is None else index + flat
        mask = inside if mask is None else mask & inside
        weights.append(stack(w, dim=1).reshape(shape))
        stride *= size
    taps_shape = index.shape   # (N, 1, *tap axes, P); mask broadcast to the same
    count = int(np.prod(taps_shape[2:], dtype=np.int64))
    source = x.reshape(n_batch, channels, stride)
    picked = source.gather(2, index.reshape(n_batch, 1, count).expand(n_batch, channels, count))
    values = where(mask, picked.reshape(n_batch, channels, *taps_shape[2:]), 0.0)
    for k, w in enumerate(weights):  # mix x taps first, then y, then z (torch's order)
        axis = 1 + n - k
        values = (values * w).sum(axis, keepdim=True)
    return values.reshape(n_batch, channels, *out_spatial)


# ---------------------------------------------------------------------- affine_grid
def _linspace(n: int, align: bool, np_dtype) -> np.ndarray:
    """torch's base grid coordinates: linspace(-1, 1, n), scaled by (n - 1) / n unless
    align_corners; 0 for a single step. As torch's CPU kernels compute them: each
    start + step * i rounded once (a fused multiply-add), float16 through float32."""
    if n <= 1:
        return np.zeros(max(n, 0), dtype=np_dtype)
    acc = np.float32 if np_dtype is np.float16 else np_dtype
    step = Fraction(float(np_dtype(acc(2) / acc(n - 1))))
    half = n // 2
    r = np.array([float(-1 + step * i if i < half else 1 - step * (n - 1 - i))
                  for i in range(n)]).astype(acc).astype(np_dtype)
    if not align:
        r = (r.astype(acc) * acc(n - 1)).astype(np_dtype)
        r = (r.astype(acc) / acc(n)).astype(np_dtype)
    return r


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) for `grid_sample` that the affine
    maps `theta` (N, 2, 3) or (N, 3, 4) give on an output of `size` (N, C, H, W) or
    (N, C, D, H, W): each output location's normalized (x, y[, z], 1) times theta^T."""
    fn = "affine_grid"
    align = _align(fn, align_corners)
    _float_tensor(fn, "theta", theta)
    try:
        size = tuple(operator.index(s) for s in size)
    except TypeError:
        raise DTypeError(f"{fn}: size must be a sequence of ints (N, C, H, W) or "
                         f"(N, C, D, H, W), got {size!r}") from None
    if len(size) not in (4, 5):
        raise ShapeError(f"{fn}: size must have 4 entries (N, C, H, W) for 2-D or 5 entries "
                         f"(N, C, D, H, W) for 3-D affine maps, got {size}")
    n = len(size) - 2
    want = (size[0], n, n + 1)
    if theta.ndim != 3 or theta.shape[1:] != want[1:]:
        raise ShapeError(f"{fn}: for size {size} theta must be a batch of {n}-D affine "
                         f"matrices of shape (N, {n}, {n + 1}), got {theta.shape}")
    if theta.shape[0] != size[0]:
        raise ShapeError(f"{fn}: theta of shape {theta.shape} holds {theta.shape[0]} matrices "
                         f"but size {size} asks for a batch of {size[0]}")
    if align and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ShapeError(f"{fn}: size must be positive, got {size}")
    spatial = size[2:]                      # (H, W) or (D, H, W)
    np_dtype = np.dtype(theta.dtype.np).type
    axes = [_linspace(s, align, np_dtype) for s in reversed(spatial)]  # x, y[, z]
    mesh = np.meshgrid(*reversed(axes), indexing="ij")                 # (z,) y, x
    base = np.stack([*reversed(mesh), np.ones(spatial, dtype=np_dtype)], axis=-1)
    base = as_tensor(base.reshape(1, -1, n + 1).astype(np_dtype), theta)
    return (base @ theta.transpose(1, 2)).reshape(size[0], *spatial, n)
