"""Three of torch's less common layers: the triplet loss with a custom distance
(`triplet_margin_with_distance_loss`, `TripletMarginWithDistanceLoss`), `SyncBatchNorm` and
the legacy `CrossMapLRN2d`.

This module does not import `lazyt.nn.functional` (which imports it back at its bottom): the
default distance is computed here with the norm `F.pairwise_distance` uses.
"""
from __future__ import annotations

from typing import Callable

from .. import creation
from .. import dtype as dt
from .. import promotion as _promote
from ..autodiff import no_grad
from ..distributed import group as _group
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat, where
from ..layout import pad as _layout_pad
from ..reductions import _norm as _pnorm
from ..tensor import Tensor
from .conv import float_input
from .module import Module
from .normalization import _BatchNorm, batch_norm

__all__ = ["triplet_margin_with_distance_loss", "TripletMarginWithDistanceLoss",
           "SyncBatchNorm", "CrossMapLRN2d"]

_REDUCTIONS = ("none", "mean", "sum")


# ---------------------------------------------------------------------- triplet loss
def _pairwise_distance(x1: Tensor, x2: Tensor, eps: float = 1e-6) -> Tensor:
    """`F.pairwise_distance(x1, x2)`: the 2-norm of `x1 - x2 + eps` along the last dim (float16
    summed in float32, as there)."""
    fn = "pairwise_distance"
    a, b = float_input(fn, "x1", x1), float_input(fn, "x2", x2)
    out = a.dtype if a.dtype is b.dtype else _promote.result_type(a, b)
    work = dt.float32 if out is dt.float16 else out
    d = a.to(work) - b.to(work) + eps
    if d.ndim == 0:
        d = d.reshape(1)
    return _pnorm(d, 2.0, d.ndim - 1).to(out).squeeze(-1)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """`max(0, margin + d(a, p) - d(a, n))` with `d = distance_function` (default
    `pairwise_distance`); `swap` uses `min(d(a, n), d(p, n))` as the negative distance."""
    fn = "triplet_margin_with_distance_loss"
    if reduction not in _REDUCTIONS:
        raise InvalidArgumentError(f"{fn}: {reduction!r} is not a valid value for reduction "
                                   f"(one of {', '.join(map(repr, _REDUCTIONS))})")
    if not margin > 0:
        raise InvalidArgumentError(f"{fn}: margin must be greater than 0, got {margin!r}")
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        if not isinstance(t, Tensor):
            raise DTypeError(f"{fn}: {name} must be a lazyt.Tensor, got {type(t).__name__}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(f"{fn}: the anchor, positive, and negative tensors are expected to "
                         f"have the same number of dimensions, but got: anchor "
                         f"{anchor.ndim}D, positive {positive.ndim}D, and negative "
                         f"{negative.ndim}D inputs")
    distance = _pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_swap = distance(positive, negative)
        dist_neg = dist_neg.minimum(dist_swap)
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


class TripletMarginWithDistanceLoss(Module):
    """`triplet_margin_with_distance_loss` with fixed options (torch's keyword-only
    constructor)."""

    def __init__(self, *, distance_function: Callable | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean"):
        super().__init__()
        name = type(self).__name__
        if reduction not in _REDUCTIONS:
            raise InvalidArgumentError(f"{name}: {reduction!r} is not a valid value for "
                                       f"reduction (one of {', '.join(map(repr, _REDUCTIONS))})")
        if not margin > 0:
            raise InvalidArgumentError(f"{name}: expected margin to be greater than 0, got "
                                       f"{margin!r} instead")
        self.distance_function = distance_function
        self.margin, self.swap, self.reduction = margin, swap, reduction

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, swap={self.swap}, reduction={self.reduction!r}"


# ---------------------------------------------------------------------- synchronized batch norm
def _world_size() -> int:
    g = _group.get()
    return 1 if g is None else g.size


def _all_reduce_sum(t: Tensor) -> Tensor:
    """`t` summed over the ranks, differentiably: every rank's `t` feeds every rank's sum, so
    the backward pass all-reduces the gradient too (a hook on the pass-through)."""
    from ..distributed import deferred
    total = deferred.all_reduce(t.detach(), _group.ReduceOp.SUM)
    if not t.requires_grad:
        return total
    through = t * 1.0
    through.register_hook(lambda g: deferred.all_reduce(g, _group.ReduceOp.SUM))
    return total + (through - through.detach())


def _sync_batch_norm(x: Tensor, running_mean, running_var, weight, bias, momentum: float,
                     eps: float) -> Tensor:
    """Training-mode batch norm whose statistics cover the batches of every rank: the
    channel sums (with the element count) and then the centered sums of squares are
    all-reduced (two passes: no `E[x^2] - E[x]^2` cancellation)."""
    c = x.shape[1]
    h = x.to(dt.float32 if x.dtype is dt.float16 else x.dtype)
    dims = (0,) + tuple(range(2, x.ndim))
    view = (1, c) + (1,) * (x.ndim - 2)
    count = creation.full((1,), float(x.numel() // max(c, 1)), dtype=h.dtype, device=x.device)
    summed = _all_reduce_sum(cat([h.sum(dims), count]))
    n = summed[c:].detach()
    mean = summed[:c] / n
    centered = h - mean.reshape(view)
    var = _all_reduce_sum((centered * centered).sum(dims)) / n
    y = centered * (var + eps).rsqrt().reshape(view)
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1.0 - momentum).add_((mean.detach() * momentum)
                                                   .to(running_mean.dtype))
        if running_var is not None:
            unbiased = var.detach() * (n * momentum / (n - 1))
            running_var.mul_(1.0 - momentum).add_(unbiased.to(running_var.dtype))
    if weight is not None:
        y = y * weight.to(h.dtype).reshape(view)
    if bias is not None:
        y = y + bias.to(h.dtype).reshape(view)
    return y.to(x.dtype)


class SyncBatchNorm(_BatchNorm):
    """torch's `nn.SyncBatchNorm`: batch norm over input [N, C, *] of any rank >= 2 whose
    training statistics span the batches of all processes. Without a process group, or with
    one of a single rank, it is `BatchNorm*d`; with several ranks (lazyt.distributed) the
    channel statistics are all-reduced in the forward pass and their gradients in the
    backward pass, so every rank must run both. `process_group` is kept for torch's
    signature: lazyt has one group, the initialized one."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim < 2:
            got = f"{x.ndim}D" if isinstance(x, Tensor) else type(x).__name__
            raise ShapeError(f"{name}: expected at least 2D input, got {got} input")
        if x.shape[1] == 0:
            raise ShapeError(f"{name}: number of input channels should be non-zero, got input "
                             f"of shape {x.shape}")
        momentum, use_batch, running_mean, running_var = self._step_statistics(name, x)
        if self.training and _world_size() > 1:
            if not x.dtype.is_float:
                raise DTypeError(f"{name}: expected a floating-point input, got "
                                 f"{x.dtype.name} of shape {x.shape}")
            return _sync_batch_norm(x, running_mean, running_var, self.weight, self.bias,
                                    momentum, self.eps)
        return batch_norm(x, running_mean, running_var, self.weight, self.bias, use_batch,
                          momentum, self.eps)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every `BatchNorm*d` in it (itself included) replaced by a
        `SyncBatchNorm` holding the same parameters, buffers and training mode."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group,
                      bias=module.bias is not None or not module.affine)
            if module.affine:
                out.weight = module.weight
                if module.bias is not None:
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.train(module.training)
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in list(module.named_children()):
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


# ---------------------------------------------------------------------- legacy LRN
def _channel_window(t: Tensor, lo: int, hi: int) -> Tensor:
    """`sum(t[:, c + o] for o in lo..hi)` per channel c of a 4-D `t`, zero outside [0, C)."""
    c = t.shape[1]
    before, after = max(0, -lo), max(0, hi)
    padded = _layout_pad(t, [0, 0, 0, 0, before, after]) if before or after else t
    total = None
    for o in range(lo, hi + 1):
        part = padded.narrow(1, before + o, c)
        total = part if total is None else total + part
    return total


class CrossMapLRN2d(Module):
    """torch's legacy `nn.CrossMapLRN2d` over 4-D input: `x * (k + alpha / size * s) **
    -beta`, s at channel c the sum of x**2 over channels c - h .. c + h (h = (size - 1) // 2),
    plus channel 0's where c > h (torch's running-sum recurrence never drops channel 0). The
    gradient is torch's hand-written backward, which differs from the derivative of that
    forward; for `size=1`, where torch's backward raises, it is the derivative."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        name = type(self).__name__
        x = float_input(name, "input", input)
        if x.ndim != 4:
            raise ShapeError(f"{name}: expected input to be 4D, got {x.ndim}D instead (shape "
                             f"{x.shape})")
        size = self.size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidArgumentError(f"{name}: size must be a positive int, got {size!r}")
        c = x.shape[1]
        sq = x * x
        pre = int((size - 1) / 2 + 1)
        total = _channel_window(sq, 1 - pre, pre - 1)
        past = creation.arange(c, device=x.device).reshape(1, c, 1, 1) >= pre
        total = total + where(past, sq.narrow(1, 0, 1), 0.0)
        scale = total * (self.alpha / size) + self.k
        y = scale ** -self.beta * x
        if size == 1 or not y.requires_grad:
            return y
        # torch's backward: grad_in[c] = scale[c]^-beta * g[c]
        #   - 2 alpha beta / size * x[c] * sum(g * y / scale over c' in [c - ipp, c + size-1-ipp])
        # is the VJP of `surrogate`, whose value is discarded
        ipp = int(size - (size - 1) / 2)
        ratio = (y / scale).detach()
        inv = (scale ** -self.beta).detach()
        cache = 2 * self.alpha * self.beta / size
        reach = _channel_window(sq, ipp - size + 1, ipp)
        surrogate = inv * x - (cache / 2) * ratio * reach
        return y.detach() + (surrogate - surrogate.detach())

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
