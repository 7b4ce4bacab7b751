"""`LayerNorm` and `RMSNorm` over the trailing `normalized_shape` dims, and their functional
forms `layer_norm` and `rms_norm` (torch's `F.layer_norm` / `F.rms_norm`).

Both compute in float32 when the input is float16 (the variance of half values overflows and
loses precision) and return the input dtype.
"""
from __future__ import annotations

import math

import numpy as np

from .. import creation
from .. import dtype as dt
from ..autodiff import no_grad
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..dispatch import Dispatch
from ..layout import pad as _layout_pad
from ..tensor import Tensor
from .conv import float_input
from .module import Module
from .parameter import Parameter
from ..amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast


def _shape(normalized_shape) -> tuple:
    return (int(normalized_shape),) if isinstance(normalized_shape, int) \
        else tuple(int(s) for s in normalized_shape)


def _check(name: str, x: Tensor, shape: tuple) -> tuple:
    if x.shape[len(x.shape) - len(shape):] != shape or x.ndim < len(shape):
        raise ShapeError(f"{name}: input of shape {x.shape} does not end with the normalized "
                         f"shape {shape}")
    return tuple(range(x.ndim - len(shape), x.ndim))


def _compute_dtype(x: Tensor):
    return dt.float32 if x.dtype is dt.float16 else x.dtype


def _normalized(fn: str, x, normalized_shape) -> tuple:
    """Checks `x` for a norm over `normalized_shape`: (the shape, the compute dtype)."""
    if not isinstance(x, Tensor):
        raise DTypeError(f"{fn}: expected a Tensor input, got {type(x).__name__}")
    shape = _shape(normalized_shape)
    if not shape:
        raise ShapeError(f"{fn}: normalized_shape must have at least one dim (as in torch), "
                         "got ()")
    _check(fn, x, shape)
    if not x.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point input, got {x.dtype.name} of shape "
                         f"{x.shape}")
    return shape, _compute_dtype(x)


def _affine(fn: str, name: str, t, x: Tensor, compute, shape: tuple):
    """A weight or bias in the compute dtype: it must have the normalized shape and x's dtype
    (or, for a float16 x, the float32 the norm computes in, as torch's mixed CPU kernels)."""
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise DTypeError(f"{fn}: {name} must be a Tensor or None, got {type(t).__name__}")
    if t.dtype is not x.dtype and t.dtype is not compute:
        raise DTypeError(f"{fn}: {name} of dtype {t.dtype.name} does not match the input's "
                         f"{x.dtype.name}")
    if t.shape != shape:
        raise ShapeError(f"{fn}: {name} of shape {t.shape} should be the normalized shape "
                         f"{shape}")
    return t.to(compute)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """`(x - mean) / sqrt(var + eps) * weight + bias` over the trailing `normalized_shape`
    dims (biased variance), as torch's `F.layer_norm`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, layer_norm, input, normalized_shape, weight, bias, eps)
    shape, compute = _normalized("layer_norm", input, normalized_shape)
    w = _affine("layer_norm", "weight", weight, input, compute, shape)
    b = _affine("layer_norm", "bias", bias, input, compute, shape)
    y = Dispatch.helper("layer_norm", input.to(compute), len(shape), float(eps), w, b)
    return y.to(input.dtype)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """`x / sqrt(mean(x^2) + eps) * weight` over the trailing `normalized_shape` dims, as
    torch's `F.rms_norm`: `eps=None` is the machine epsilon of the dtype it computes in
    (float32's for float16 input)."""
    shape, compute = _normalized("rms_norm", input, normalized_shape)
    w = _affine("rms_norm", "weight", weight, input, compute, shape)
    if eps is None:
        eps = float(np.finfo(compute.np).eps)
    y = Dispatch.helper("rms_norm", input.to(compute), len(shape), float(eps), w)
    return y.to(input.dtype)


def _channel_input(fn: str, input) -> tuple:  # noqa: A002
    """Checks a float input [N, C, *] of a per-channel norm: (C, the compute dtype)."""
    if not isinstance(input, Tensor):
        raise DTypeError(f"{fn}: expected a Tensor input, got {type(input).__name__}")
    if input.ndim < 2:
        raise ShapeError(f"{fn}: expected an input [N, C, *] of at least 2 dims, got shape "
                         f"{input.shape}")
    if not input.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point input, got {input.dtype.name} of "
                         f"shape {input.shape}")
    return input.shape[1], _compute_dtype(input)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """torch's `F.group_norm`: the channels of `input` [N, C, *] split into `num_groups`
    groups, each sample's group normalized over its channels and positions (biased
    variance), then `* weight + bias` per channel ([C] each)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, group_norm, input, num_groups, weight, bias, eps)
    fn = "group_norm"
    c, compute = _channel_input(fn, input)
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1 \
            or c % num_groups:
        raise ShapeError(f"{fn}: num_groups={num_groups!r} must be a positive divisor of the "
                         f"{c} channels (input shape {input.shape})")
    w = _affine(fn, "weight", weight, input, compute, (c,))
    b = _affine(fn, "bias", bias, input, compute, (c,))
    group = (c // num_groups) * math.prod(input.shape[2:])
    x = input.to(compute).reshape(input.shape[0], num_groups, group)
    y = Dispatch.helper("layer_norm", x, 1, float(eps), None, None).reshape(input.shape)
    along = (1, c) + (1,) * (input.ndim - 2)
    if w is not None:
        y = y * w.reshape(along)
    if b is not None:
        y = y + b.reshape(along)
    return y.to(input.dtype)


class LayerNorm(Module):
    """`(x - mean) / sqrt(var + eps) * weight + bias` (biased variance, as torch)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        if not self.normalized_shape:
            raise ShapeError("LayerNorm: normalized_shape must have at least one dim (as in "
                             "torch), got ()")
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
            if bias:
                self.bias = Parameter(creation.zeros(self.normalized_shape, dtype=dtype,
                                                     device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        dims = _check("LayerNorm", x, self.normalized_shape)
        if not x.dtype.is_float:
            raise DTypeError(f"LayerNorm: expected a floating-point input, got {x.dtype.name} "
                             f"of shape {x.shape}")
        h = x.to(_compute_dtype(x))
        w = None if self.weight is None else self.weight.to(h.dtype)
        b = None if self.bias is None else self.bias.to(h.dtype)
        y = Dispatch.helper("layer_norm", h, len(dims), float(self.eps), w, b)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(Module):
    """`x / sqrt(mean(x^2) + eps) * weight` (the Llama norm; no centering, no bias).
    `eps=None` (torch's default) is the machine epsilon of the dtype it computes in."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        dims = _check("RMSNorm", x, self.normalized_shape)
        if not x.dtype.is_float:
            raise DTypeError(f"RMSNorm: expected a floating-point input, got {x.dtype.name} "
                             f"of shape {x.shape}")
        h = x.to(_compute_dtype(x))
        w = None if self.weight is None else self.weight.to(h.dtype)
        eps = float(np.finfo(h.dtype.np).eps) if self.eps is None else float(self.eps)
        y = Dispatch.helper("rms_norm", h, len(dims), eps, w)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


def _affine_parameters(m: Module, shape: tuple, affine: bool, bias: bool, dtype,
                       device) -> None:
    """`m.weight` (ones) and, unless `bias=False`, `m.bias` (zeros) when `affine`; else
    None (torch's `affine=..., bias=...` of the batch, group and instance norms)."""
    m.register_parameter("weight", Parameter(creation.ones(shape, dtype=dtype, device=device))
                         if affine else None)
    m.register_parameter("bias", Parameter(creation.zeros(shape, dtype=dtype, device=device))
                         if affine and bias else None)


class GroupNorm(Module):
    """torch's `nn.GroupNorm(num_groups, num_channels)`: see `group_norm`; `weight` (ones)
    and `bias` (zeros, unless `bias=False`) of [num_channels] when `affine`."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1 \
                or num_channels % num_groups:
            raise ShapeError(f"GroupNorm: num_groups={num_groups!r} must be a positive divisor "
                             f"of num_channels={num_channels}")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        if isinstance(x, Tensor) and x.ndim >= 2 and x.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm: expected {self.num_channels} channels in dim 1, got "
                             f"input of shape {x.shape}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


# ---------------------------------------------------------------------- batch norm
def _channels(fn: str, t, name: str, input: Tensor, compute, c: int):  # noqa: A002
    """A per-channel [C] tensor (running statistic, weight or bias) as a [1, C, 1...] view in
    the compute dtype."""
    if t is None:
        return None
    t = _affine(fn, name, t, input, compute, (c,))
    return t.reshape((1, c) + (1,) * (input.ndim - 2))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """torch's `F.batch_norm` over input [N, C, *]: each channel normalized by its statistics
    over the batch and positions (`training`: the batch's own, biased variance, and the
    running statistics updated in place, `(1 - momentum) * running + momentum * batch` with
    the unbiased variance; else the running statistics), then `* weight + bias` per channel."""
    fn = "batch_norm"
    c, compute = _channel_input(fn, input)
    w = _channels(fn, weight, "weight", input, compute, c)
    b = _channels(fn, bias, "bias", input, compute, c)
    rm = _channels(fn, running_mean, "running_mean", input, compute, c)
    rv = _channels(fn, running_var, "running_var", input, compute, c)
    x = input.to(compute)
    if training and input.numel() == 0:  # an empty batch: empty output, statistics kept
        return input * 1
    if training:
        n = input.numel() // max(c, 1)
        if n <= 1:
            raise InvalidArgumentError(f"{fn}: expected more than 1 value per channel when "
                                       f"training, got input of shape {input.shape}")
        dims = (0,) + tuple(range(2, input.ndim))
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dims, keepdim=True)
        y = centered * (var + eps).rsqrt()
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1.0 - momentum).add_(
                    (mean.detach() * momentum).reshape(c).to(running_mean.dtype))
            if running_var is not None:
                unbiased = var.detach() * (momentum * n / (n - 1))
                running_var.mul_(1.0 - momentum).add_(unbiased.reshape(c).to(running_var.dtype))
    else:
        if rm is None or rv is None:
            raise InvalidArgumentError(f"{fn}: running_mean and running_var must be given "
                                       "when not training (evaluation mode)")
        y = (x - rm) * (rv + eps).rsqrt()
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y.to(input.dtype)


class _BatchNorm(Module):
    """torch's `nn.BatchNorm*d(num_features)`: `weight`/`bias` (ones/zeros) when `affine`;
    buffers `running_mean` (zeros), `running_var` (ones) and `num_batches_tracked` when
    `track_running_stats`; `bias=False` leaves the bias out. In training mode the batch's
    statistics normalize and update the running ones; in eval mode the running ones
    normalize. `momentum=None` averages the running statistics over all batches seen (it
    reads the batch count, so it cannot be captured by `lazyt.compile`)."""

    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        shape = (num_features,)
        _affine_parameters(self, shape, affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(shape, dtype=dtype, device=device))
            self.register_buffer("running_var", creation.ones(shape, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked",
                                 creation.zeros((), dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in self._dims:
            got = f"{x.ndim}D" if isinstance(x, Tensor) else type(x).__name__
            raise ShapeError(f"{name}: expected {' or '.join(f'{d}D' for d in self._dims)} "
                             f"input, got {got} input")
        momentum, use_batch, running_mean, running_var = self._step_statistics(name, x)
        return batch_norm(x, running_mean, running_var, self.weight, self.bias, use_batch,
                          momentum, self.eps)

    def _step_statistics(self, name: str, x: Tensor) -> tuple:
        """Check the channels, count the batch and give (momentum, whether to normalize by the
        batch's statistics, the running mean and variance to use or update), as torch's
        `_BatchNorm.forward` decides them."""
        if x.shape[1] != self.num_features:
            raise ShapeError(f"{name}: expected {self.num_features} channels in dim 1, got "
                             f"input of shape {x.shape}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the cumulative average over the batches seen
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return (momentum, use_batch, self.running_mean if track else None,
                self.running_var if track else None)

    def _upgrade_state(self, state: dict, prefix: str, version: int | None) -> None:
        """A checkpoint from before torch added `num_batches_tracked` (no `_metadata`
        version, or < 2) loads without it: the current count is kept, as torch does."""
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state:
            state[key] = self.num_batches_tracked

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Over [N, C] or [N, C, L]."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over [N, C, H, W]."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over [N, C, D, H, W]."""

    _dims = (5,)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4,  # noqa: A002
                        beta: float = 0.75, k: float = 1.0) -> Tensor:
    """torch's local response normalization across channels: `x / (k + alpha * avg) ** beta`
    with `avg` the mean of x**2 over `size` neighbouring channels (zero-padded: size // 2
    before, (size - 1) // 2 after, always divided by `size`). Input (N, C, ...)."""
    fn = "local_response_norm"
    x = float_input(fn, "input", input)
    if x.ndim < 3:
        raise ShapeError(f"{fn}: expected an input of 3 or more dims (N, C, ...), got shape "
                         f"{x.shape}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidArgumentError(f"{fn}: size must be a positive int, got {size!r}")
    sq = x * x
    c = x.shape[1]
    before, after = size // 2, (size - 1) // 2
    padded = _layout_pad(sq, [0, 0] * (x.ndim - 2) + [before, after])
    total = None
    for j in range(size):
        part = padded.narrow(1, j, c)
        total = part if total is None else total + part
    div = (total * (alpha / size) + k) ** beta
    return x / div


from .embedding import embedding_bag  # noqa: E402


class LocalResponseNorm(Module):
    """`F.local_response_norm`: each value divided by `(k + alpha * mean of x**2 over size
    neighbouring channels) ** beta`."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
