"""`lazyt.nn.functional`: torch's loss functions and activations as composites of Tensor ops
(autodiff differentiates them), in torch's layout (`import lazyt.nn.functional as F`).

Class-index losses read the targets once to reject out-of-range classes (torch raises too);
everything else stays lazy.
"""
from __future__ import annotations

import math
import warnings

from .. import capture_state as _capture
from .. import creation
from .. import dtype as dt
from .. import promotion as _promote
from .. import shape as _shape
from ..errors import (DTypeError, IndexOutOfRangeError, InvalidArgumentError, LazytError,
                      ShapeError)
from ..functional import gelu, where
from ..inplace import stored as _stored
from ..functional import log_softmax as _log_softmax
from ..functional import relu as _relu
from ..functional import silu as _silu
from ..functional import softmax as _softmax
from ..tensor import Tensor
from .conv import float_input as _float_tensor
from ..amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

__all__ = [
    "relu", "gelu", "silu", "softmax", "log_softmax",
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "mse_loss", "l1_loss", "smooth_l1_loss", "kl_div",
    "elu", "celu", "selu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid", "hardswish",
    "softplus", "softsign", "mish", "logsigmoid", "softmin", "quick_gelu",
]

_REDUCTIONS = ("none", "mean", "sum")


# ---------------------------------------------------------------------- validation
def _check_reduction(fn: str, reduction, allowed: tuple = _REDUCTIONS) -> None:
    if reduction not in allowed:
        raise InvalidArgumentError(f"{fn}: reduction must be one of "
                                   f"{', '.join(repr(a) for a in allowed)}, got {reduction!r}")


def _same_shape(fn: str, input: Tensor, target: Tensor) -> None:  # noqa: A002 - torch's name
    if input.shape != target.shape:
        raise ShapeError(f"{fn}: target shape {target.shape} must equal input shape "
                         f"{input.shape}")


def _class_weight(fn: str, weight, n_classes: int) -> Tensor | None:
    if weight is None:
        return None
    _float_tensor(fn, "weight", weight)
    if weight.shape != (n_classes,):
        raise ShapeError(f"{fn}: weight must have shape ({n_classes},) (one per class), got "
                         f"{weight.shape}")
    return weight


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


def _class_view(weight: Tensor, ndim: int) -> Tensor:
    """A (C,) per-class tensor shaped to broadcast along dim 1 of an ndim-rank input."""
    return weight.reshape(1, weight.shape[0], *([1] * (ndim - 2)))


# ---------------------------------------------------------------------- class-index losses
def _nll_parts(fn: str, logp: Tensor, target, weight, ignore_index: int):
    """Per-element `-w[t] * logp[t]` (0 where ignored) and the per-element weights `w[t]`
    (0 where ignored), for `logp` (N, C, d...) and target (N, d...)."""
    if not isinstance(target, Tensor):
        raise DTypeError(f"{fn}: target must be a lazyt.Tensor of class indices, got "
                         f"{type(target).__name__}")
    if not target.dtype.is_int:
        raise DTypeError(f"{fn}: class-index target must be an integer tensor (int64 or "
                         f"int32), got {target.dtype.name} of shape {target.shape}")
    n_classes = logp.shape[1]
    expected = (logp.shape[0], *logp.shape[2:])
    if target.shape != expected:
        raise ShapeError(f"{fn}: for input of shape {logp.shape} (N, C, d...) the target must "
                         f"have shape {expected} (N, d...), got {target.shape}")
    weight = _class_weight(fn, weight, n_classes)
    ignored = target == ignore_index
    # (under lazyt.compile no value is read: gather's own range check raises when it runs)
    bad = None if _capture.active() else ~ignored & ((target < 0) | (target >= n_classes))
    if bad is not None and bad.any().item():
        raise IndexOutOfRangeError(f"{fn}: target holds class index {target[bad][0].item()}, "
                                   f"outside [0, {n_classes}) (ignore_index={ignore_index})")
    safe = where(ignored, 0, target)
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    if weight is None:
        w = where(ignored, 0.0, creation.ones_like(picked))
    else:
        w = where(ignored, 0.0, weight.to(dtype=picked.dtype)[safe])
    return where(ignored, 0.0, -picked * w), w, ignored


def _batched(fn: str, input: Tensor, target):  # noqa: A002 - torch's name
    """(input, target, unbatched): a (C,) input with a () target becomes a batch of one."""
    if input.dim() == 0:
        raise ShapeError(f"{fn}: input must have shape (C,), (N, C) or (N, C, d...), got ()")
    if input.dim() == 1:
        if isinstance(target, Tensor) and target.dtype.is_int:
            if target.dim() != 0:
                raise ShapeError(f"{fn}: for unbatched input of shape {input.shape} the target "
                                 f"must be a scalar class index, got shape {target.shape}")
            target = target.reshape(1)
        return input.unsqueeze(0), target, True
    return input, target, False


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities `input` (N, C, d...) at class indices
    `target` (N, d...); "mean" is `sum(w[t] * loss) / sum(w[t])` over non-ignored elements."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, nll_loss, input, target, weight, ignore_index, reduction)
    fn = "nll_loss"
    _check_reduction(fn, reduction)
    input, target, unbatched = _batched(fn, _float_tensor(fn, "input", input), target)
    loss, w, _ = _nll_parts(fn, input, target, weight, ignore_index)
    if reduction == "mean":
        return loss.sum() / w.sum()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits `input` (N, C, d...) with class indices (an integer tensor of
    shape (N, d...)) or class probabilities (a float tensor of input's shape), as torch."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, cross_entropy, input, target, weight, ignore_index,
                         reduction, label_smoothing)
    fn = "cross_entropy"
    _check_reduction(fn, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(f"{fn}: label_smoothing must be in [0, 1], got "
                                   f"{label_smoothing!r}")
    input, target, unbatched = _batched(fn, _float_tensor(fn, "input", input), target)
    n_classes = input.shape[1]
    logp = _log_softmax(input, dim=1)
    if isinstance(target, Tensor) and target.dtype.is_float:
        return _cross_entropy_probs(fn, logp, target, weight, reduction, label_smoothing,
                                    unbatched)
    loss, w, ignored = _nll_parts(fn, logp, target, weight, ignore_index)
    if label_smoothing > 0.0:
        weight = _class_weight(fn, weight, n_classes)
        wlogp = logp if weight is None else logp * _class_view(weight.to(dtype=logp.dtype),
                                                                logp.dim())
        smooth = where(ignored, 0.0, -wlogp.sum(1))
        eps = label_smoothing
        if reduction == "mean":
            total = w.sum()
            return (1 - eps) * (loss.sum() / total) + (eps / n_classes) * (smooth.sum() / total)
        loss = (1 - eps) * loss + (eps / n_classes) * smooth
    elif reduction == "mean":
        return loss.sum() / w.sum()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def _cross_entropy_probs(fn: str, logp: Tensor, target: Tensor, weight, reduction: str,
                         label_smoothing: float, unbatched: bool) -> Tensor:
    n_classes = logp.shape[1]
    if unbatched:
        target = target.unsqueeze(0)
    if target.shape != logp.shape:
        raise ShapeError(f"{fn}: probability target must have the input's shape "
                         f"{tuple(logp.shape[1:]) if unbatched else logp.shape}, got "
                         f"{tuple(target.shape[1:]) if unbatched else target.shape}")
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    weight = _class_weight(fn, weight, n_classes)
    terms = logp * target
    if weight is not None:
        terms = terms * _class_view(weight.to(dtype=logp.dtype), logp.dim())
    if reduction == "mean":
        return -terms.sum() / (logp.numel() // n_classes)
    if reduction == "sum":
        return -terms.sum()
    loss = -terms.sum(1)
    return loss.squeeze(0) if unbatched else loss


# ---------------------------------------------------------------------- binary losses
def _elementwise_weight(fn: str, name: str, weight, shape: tuple) -> Tensor | None:
    if weight is None:
        return None
    _float_tensor(fn, name, weight)
    try:
        _broadcasts(weight.shape, shape)
    except ValueError:
        raise ShapeError(f"{fn}: {name} of shape {weight.shape} does not broadcast to the "
                         f"input shape {shape}") from None
    return weight


def _broadcasts(small: tuple, big: tuple) -> None:
    if len(small) > len(big):
        raise ValueError
    for s, b in zip(reversed(small), reversed(big)):
        if s not in (1, b):
            raise ValueError


def _softplus(z: Tensor) -> Tensor:
    """log(1 + exp(z)) without overflow and with the exact gradient sigmoid(z) at z = 0 (the
    `relu(z) + log(1 + exp(-|z|))` form has a zero subgradient there); each branch sees only
    inputs where it is finite, so `where`'s masked gradient stays finite."""
    pos = z > 0
    zp = where(pos, z, 0.0)
    zn = where(pos, 0.0, z)
    return where(pos, zp + (1 + (-zp).exp()).log(), (1 + zn.exp()).log())


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         reduction: str = "mean") -> Tensor:
    """`-w * (t * log(x) + (1 - t) * log(1 - x))` with each log clamped to >= -100 (torch)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.BANNED, binary_cross_entropy, input, target, weight, reduction)
    fn = "binary_cross_entropy"
    _check_reduction(fn, reduction)
    _float_tensor(fn, "input", input)
    _float_tensor(fn, "target", target)
    _same_shape(fn, input, target)
    weight = _elementwise_weight(fn, "weight", weight, input.shape)
    log_x = input.log().clamp(min=-100.0)
    log_1mx = (1 - input).log().clamp(min=-100.0)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in the stable form
    `(1 - t) * x + (1 + (p - 1) * t) * softplus(-x)` (p = pos_weight, broadcast over classes)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, binary_cross_entropy_with_logits, input, target, weight,
                         reduction, pos_weight)
    fn = "binary_cross_entropy_with_logits"
    _check_reduction(fn, reduction)
    _float_tensor(fn, "input", input)
    _float_tensor(fn, "target", target)
    _same_shape(fn, input, target)
    weight = _elementwise_weight(fn, "weight", weight, input.shape)
    pos_weight = _elementwise_weight(fn, "pos_weight", pos_weight, input.shape)
    nls = _softplus(-input)  # -log(sigmoid(x))
    if pos_weight is None:
        loss = (1 - target) * input + nls
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * nls
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------- regression losses
def _as_target(fn: str, target, like: Tensor) -> Tensor:
    """A regression or ranking target in the input's dtype: integer and bool targets are
    converted (torch promotes them); anything but a tensor raises."""
    if not isinstance(target, Tensor):
        raise DTypeError(f"{fn}: target must be a lazyt.Tensor, got {type(target).__name__}")
    return target if target.dtype.is_float else target.to(like.dtype)


def _difference(fn: str, input, target, reduction: str) -> Tensor:
    """input - target; shapes that differ broadcast, with torch's warning (stacklevel: the
    loss function's caller)."""
    _check_reduction(fn, reduction)
    _float_tensor(fn, "input", input)
    target = _as_target(fn, target, input)
    if input.shape != target.shape:
        warnings.warn(f"Using a target size {tuple(target.shape)} that is different to the "
                      f"input size {tuple(input.shape)}. This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)
        try:
            _shape.broadcast(fn, tuple(input.shape), tuple(target.shape))
        except ShapeError:
            raise ShapeError(f"{fn}: target shape {target.shape} does not broadcast with "
                             f"input shape {input.shape}") from None
    return input - target


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Squared error `(x - y)^2`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, mse_loss, input, target, reduction)
    d = _difference("mse_loss", input, target, reduction)
    return _reduce(d * d, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Absolute error `|x - y|`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, l1_loss, input, target, reduction)
    return _reduce(_difference("l1_loss", input, target, reduction).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
                   beta: float = 1.0) -> Tensor:
    """`0.5 d^2 / beta` where `|d| < beta`, else `|d| - 0.5 beta` (plain L1 for beta = 0)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, smooth_l1_loss, input, target, reduction, beta)
    fn = "smooth_l1_loss"
    d = _difference(fn, input, target, reduction)
    if beta < 0:
        raise InvalidArgumentError(f"{fn}: beta must be >= 0, got {beta!r}")
    a = d.abs()
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(where(a < beta, (0.5 / beta) * d * d, a - 0.5 * beta), reduction)


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
           log_target: bool = False) -> Tensor:
    """KL divergence with log-probabilities `input`: `t * (log t - x)` (0 where t = 0), or
    `exp(t) * (t - x)` with `log_target`; "batchmean" divides the sum by the batch size."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, kl_div, input, target, reduction, log_target)
    fn = "kl_div"
    _check_reduction(fn, reduction, _REDUCTIONS + ("batchmean",))
    _float_tensor(fn, "input", input)
    _float_tensor(fn, "target", target)
    _same_shape(fn, input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        zero = target == 0
        tlogt = where(zero, 0.0, target * where(zero, 1.0, target).log())
        loss = tlogt - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() > 0 else total
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------- activations
# torch's formulas; every branch a `where` masks sees only inputs where it is finite, so no
# exp overflows and the masked gradients stay finite. Without log1p/expm1 primitives the tails
# (softplus far below 0, logsigmoid far above 0, elu near 0) are exact to an absolute ulp of 1.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _activation_input(fn: str, input) -> Tensor:  # noqa: A002 - torch's name
    return _float_tensor(fn, "input", input)


def _expm1_neg(x: Tensor) -> Tensor:
    """exp(min(x, 0)) - 1: the negative branch of elu/celu/selu, finite for any x."""
    return where(x > 0, 0.0, x).exp() - 1


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """`x` where x > 0, else `alpha * (exp(x) - 1)`."""
    x = _activation_input("elu", input)
    return _stored("elu", input, where(x > 0, x, alpha * _expm1_neg(x)), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`."""
    x = _activation_input("celu", input)
    if alpha == 0:
        raise InvalidArgumentError("celu: alpha must not be 0 (it divides x), got 0")
    out = where(x > 0, x, alpha * ((where(x > 0, 0.0, x) / alpha).exp() - 1))
    return _stored("celu", input, out, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`scale * elu(x, alpha)` with torch's constants (alpha ~ 1.6733, scale ~ 1.0507)."""
    x = _activation_input("selu", input)
    out = _SELU_SCALE * where(x > 0, x, _SELU_ALPHA * _expm1_neg(x))
    return _stored("selu", input, out, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01,  # noqa: A002
               inplace: bool = False) -> Tensor:
    """`x` where x > 0, else `negative_slope * x`."""
    x = _activation_input("leaky_relu", input)
    return _stored("leaky_relu", input, where(x > 0, x, x * negative_slope), inplace)


def _hardtanh(fn: str, input, min_val: float, max_val: float, inplace) -> Tensor:  # noqa: A002
    x = _activation_input(fn, input)
    if min_val > max_val:
        raise InvalidArgumentError(f"{fn}: min_val ({min_val!r}) must not be greater than "
                                   f"max_val ({max_val!r})")
    # torch's gradient is 0 at and beyond either bound (clamp would pass it at the bound)
    return _stored(fn, input, where(x <= min_val, min_val, where(x >= max_val, max_val, x)),
                   inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """`x` limited to [min_val, max_val]."""
    return _hardtanh("hardtanh", input, min_val, max_val, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`min(max(0, x), 6)`."""
    return _hardtanh("relu6", input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """0 for x <= -3, 1 for x >= 3, else `x / 6 + 1 / 2` (gradient 1/6 strictly inside)."""
    x = _activation_input("hardsigmoid", input)
    out = where(x <= -3, 0.0, where(x >= 3, 1.0, x / 6 + 0.5))
    return _stored("hardsigmoid", input, out, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`x * min(max(x + 3, 0), 6) / 6`; the gradient is 0 at -3 and 1 at 3, as torch's."""
    x = _activation_input("hardswish", input)
    out = where(x <= -3, 0.0, where(x >= 3, x, x * (x + 3) / 6))
    return _stored("hardswish", input, out, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """`log(1 + exp(beta * x)) / beta`, and `x` itself where `beta * x > threshold`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, softplus, input, beta, threshold)
    x = _activation_input("softplus", input)
    if beta == 0:
        raise InvalidArgumentError("softplus: beta must not be 0 (it divides the result)")
    z = x * beta
    return where(z > threshold, x, _softplus(z) / beta)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """`x / (1 + |x|)`."""
    x = _activation_input("softsign", input)
    return x / (1 + x.abs())


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`x * tanh(softplus(x))`."""
    x = _activation_input("mish", input)
    return _stored("mish", input, x * _softplus(x).tanh(), inplace)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """`log(sigmoid(x)) = -softplus(-x)`, finite for any finite x."""
    x = _activation_input("logsigmoid", input)
    return -_softplus(-x)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`max(x, 0)`."""
    return _stored("relu", input, _relu(input), inplace)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """`x * sigmoid(x)`."""
    return _stored("silu", input, _silu(input), inplace)



# torch's in-place function forms: the input tensor updated to the activation and returned
def relu_(input: Tensor) -> Tensor:  # noqa: A002
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return globals()["threshold"](input, threshold, value, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


__all__ += ["relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_",
            "rrelu_"]

def _softmax_dim(fn: str, x: Tensor, dim, stacklevel: int) -> int:
    """`dim`, or for None torch's legacy choice (0 for 0-, 1- and 3-D inputs, else 1) with its
    deprecation warning, at torch's `_stacklevel` (3: the softmax function's caller)."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {fn} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if x.ndim in (0, 1, 3) else 1


def _softmax_input(fn: str, input, dtype) -> Tensor:  # noqa: A002 - torch's name
    if not isinstance(input, Tensor):
        raise DTypeError(f"{fn}: input must be a lazyt.Tensor, got {type(input).__name__}")
    return input if dtype is None else input.to(dtype=dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """`exp(x) / sum(exp(x))` along `dim`; `dtype` casts the input first. dim None: torch's
    deprecated implicit choice, with its warning."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, softmax, input, dim, _stacklevel + 2, dtype)
    x = _softmax_input("softmax", input, dtype)
    return _softmax(x, _softmax_dim("softmax", x, dim, _stacklevel))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
                dtype=None) -> Tensor:
    """`log(softmax(x, dim))`, computed stably; `dtype` and dim None as `softmax`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, log_softmax, input, dim, _stacklevel + 2, dtype)
    x = _softmax_input("log_softmax", input, dtype)
    return _log_softmax(x, _softmax_dim("log_softmax", x, dim, _stacklevel))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """`softmax(-x, dim)`; `dtype` casts the input first; dim None as `softmax`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, softmin, input, dim, _stacklevel + 2, dtype)
    x = _activation_input("softmin", input)
    dim = _softmax_dim("softmin", x, dim, _stacklevel)
    if dtype is not None:
        x = x.to(dtype=dtype)
    return _softmax(-x, dim=dim)


def quick_gelu(input: Tensor) -> Tensor:  # noqa: A002
    """`x * sigmoid(1.702 * x)` (the GELU approximation of CLIP)."""
    x = _activation_input("quick_gelu", input)
    return x * (1.702 * x).sigmoid()


# ---------------------------------------------------------------------- convolution and pooling
from .conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: E402
                   conv_transpose3d)
from .pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d,  # noqa: E402
                      avg_pool2d, max_pool1d, max_pool2d, max_unpool1d, max_unpool2d)

__all__ += ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
            "adaptive_avg_pool1d", "adaptive_avg_pool2d", "max_unpool1d", "max_unpool2d"]

# ---------------------------------------------------------------------- torch.nn.functional.pad
from ..layout import pad  # noqa: E402  (torch has it in nn.functional too)

__all__ += ["pad"]

# ---------------------------------------------------------------------- one_hot, normalize, interpolate
from ..selection import one_hot  # noqa: E402
from ..reductions import normalize  # noqa: E402
from .interpolate import interpolate, upsample  # noqa: E402

__all__ += ["one_hot", "normalize", "interpolate", "upsample"]

# ---------------------------------------------------------------------- layers' functional forms
from .. import shape as sh  # noqa: E402
from ..functional import scaled_dot_product_attention, sigmoid, tanh  # noqa: E402
from ..reductions import _norm as _pnorm  # noqa: E402
from .dropout import _probability, drop  # noqa: E402
from .embedding import lookup as _lookup, padding_index as _padding_index  # noqa: E402
from .linear import affine as _affine  # noqa: E402
from .normalization import batch_norm, group_norm, layer_norm, rms_norm  # noqa: E402


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """`input @ weight^T + bias`: weight [out, in], bias [out]; the input must end with `in`
    and have the weight's dtype (as `nn.Linear`)."""
    return _affine("linear", input, weight, bias)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
            inplace: bool = False) -> Tensor:
    """Zeroes each element with probability `p` and scales the rest by 1 / (1 - p) when
    `training` (torch's default is True here, unlike the module's mode); else the input."""
    p = _probability("dropout", p)
    x = _float_tensor("dropout", "input", input)
    return _stored("dropout", input, drop(x, p), inplace) if training else x


def embedding(input, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """`weight[input]`: rows of the [num_embeddings, embedding_dim] table for integer ids;
    the `padding_idx` row gets no gradient. `max_norm` (which renormalizes the table in
    place), `scale_grad_by_freq` and `sparse` are not supported."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise InvalidArgumentError("embedding: max_norm, scale_grad_by_freq and sparse are "
                                   "not supported")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be a 2-D tensor [num_embeddings, "
                         f"embedding_dim], got {getattr(weight, 'shape', type(weight).__name__)}")
    return _lookup("embedding", input, weight,
                   _padding_index("embedding", padding_idx, weight.shape[0]))


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """`a * sigmoid(b)` for the two halves a, b of `input` along `dim`."""
    x = _activation_input("glu", input)
    if x.ndim == 0:
        raise ShapeError("glu: a 0-d input has no dim to halve")
    d = dim + x.ndim if dim < 0 else dim
    if not 0 <= d < x.ndim:
        raise IndexOutOfRangeError(f"glu: dim {dim} is out of bounds for shape {x.shape}")
    if x.shape[d] % 2:
        raise ShapeError(f"glu: halving dim {dim} needs an even size, got {x.shape[d]} "
                         f"(shape {x.shape})")
    a, b = x.chunk(2, d)
    return a * b.sigmoid()


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """`x` where |x| > lambd, else 0."""
    x = _activation_input("hardshrink", input)
    return where(x.abs() > lambd, x, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """`x - lambd` above lambd, `x + lambd` below -lambd, else 0 (lambd >= 0)."""
    x = _activation_input("softshrink", input)
    if not lambd >= 0:
        raise InvalidArgumentError(f"softshrink: lambd must be at least 0, got {lambd!r}")
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0.0))


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """`x - tanh(x)`."""
    x = _activation_input("tanhshrink", input)
    return x - x.tanh()


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """`x` where x > threshold, else `value`."""
    x = _activation_input("threshold", input)
    return _stored("threshold", input, where(x > threshold, x, float(value)), inplace)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0) -> Tensor:
    """`0.5 d^2` where |d| < delta, else `delta (|d| - 0.5 delta)`, for d = input - target."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, huber_loss, input, target, reduction, delta)
    _check_reduction("huber_loss", reduction)
    if not delta > 0:
        raise InvalidArgumentError(f"huber_loss: delta must be positive, got {delta!r}")
    d = _difference("huber_loss", input, target, reduction).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss, reduction)


def _pair(fn: str, x1, x2) -> tuple:
    """Two float tensors in their common dtype (torch's promotion), float16 widened to
    float32 (a sum of squares of half values overflows), and the dtype to return."""
    a = _float_tensor(fn, "x1", x1)
    b = _float_tensor(fn, "x2", x2)
    out = a.dtype if a.dtype is b.dtype else _promote.result_type(a, b)
    work = dt.float32 if out is dt.float16 else out
    return a.to(work), b.to(work), out


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """`sum(x1 / |x1| * x2 / |x2|)` along `dim` after broadcasting, each norm at least `eps`
    (torch's order: normalize first, so the result stays in [-1, 1])."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, cosine_similarity, x1, x2, dim, eps)
    a, b, out = _pair("cosine_similarity", x1, x2)
    a, b = a + b * 0, b + a * 0  # broadcast both to one shape (gradients reduce back)
    if a.ndim == 0:
        raise ShapeError("cosine_similarity: inputs need at least one dim")
    d = sh.normalize_dim("cosine_similarity", dim, a.ndim)
    na = _pnorm(a, 2.0, d).clamp_min(eps)
    nb = _pnorm(b, 2.0, d).clamp_min(eps)
    return ((a / na) * (b / nb)).sum(d).to(out)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of `x1 - x2 + eps` along the last dim (torch's formula)."""
    a, b, dtype = _pair("pairwise_distance", x1, x2)
    d = a - b + eps
    if d.ndim == 0:
        d = d.reshape(1)
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not p >= 0:
        raise InvalidArgumentError(f"pairwise_distance: p must be >= 0 (or inf), got {p!r}")
    if p == 0:  # the count of differing elements
        out = (d != 0).to(d.dtype).sum(-1, keepdim=True)
    else:
        out = _pnorm(d, float(p), d.ndim - 1)
    out = out.to(dtype)
    return out if keepdim else out.squeeze(-1)


__all__ += ["linear", "dropout", "embedding", "layer_norm", "rms_norm", "group_norm", "batch_norm",
            "scaled_dot_product_attention", "sigmoid", "tanh", "glu", "hardshrink",
            "softshrink", "tanhshrink", "threshold", "huber_loss", "cosine_similarity",
            "pairwise_distance"]


# ---------------------------------------------------------------------- more of torch's losses
def _pairwise_inputs(fn: str, reduction: str, *tensors) -> list:
    """Float tensors of one dtype that broadcast together (ranking and embedding losses)."""
    _check_reduction(fn, reduction)
    names = ("input1", "input2", "target") if len(tensors) == 3 else ("input", "target")
    first = _float_tensor(fn, names[0], tensors[0])
    rest = []
    for n, t in zip(names[1:], tensors[1:]):
        t = _float_tensor(fn, n, t) if n != "target" else _as_target(fn, t, first)
        rest.append(_elementwise_weight(fn, n, t, first.shape))
    return [first] + rest


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """`max(0, -y * (x1 - x2) + margin)`: y = 1 ranks x1 above x2, y = -1 below."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, margin_ranking_loss, input1, input2, target, margin,
                         reduction)
    x1, x2, y = _pairwise_inputs("margin_ranking_loss", reduction, input1, input2, target)
    return _reduce((margin - y * (x1 - x2)).relu(), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: str = "mean") -> Tensor:
    """`x` where y = 1, `max(0, margin - x)` where y = -1 (torch's sum of both terms for
    other targets)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, hinge_embedding_loss, input, target, margin, reduction)
    x, y = _pairwise_inputs("hinge_embedding_loss", reduction, input, target)
    loss = where(y != 1, (margin - x).relu(), 0.0) + where(y != -1, x, 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """`log(1 + exp(-y * x))` (two-class logistic loss, y = +-1)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, soft_margin_loss, input, target, reduction)
    x, y = _pairwise_inputs("soft_margin_loss", reduction, input, target)
    return _reduce(_softplus(-y * x), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                                weight: Tensor | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of `-(y log sigmoid(x) + (1 - y) log sigmoid(-x))`
    (times `weight` per class); input and target [N, C]."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, multilabel_soft_margin_loss, input, target, weight,
                         reduction)
    fn = "multilabel_soft_margin_loss"
    x, y = _pairwise_inputs(fn, reduction, input, target)
    if x.ndim < 1:
        raise ShapeError(f"{fn}: input must have a class dim, got shape {x.shape}")
    loss = y * _softplus(-x) + (1 - y) * _softplus(x)
    weight = _elementwise_weight(fn, "weight", weight, x.shape)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, reduction: str = "mean") -> Tensor:
    """`1 - cos(x1, x2)` where y = 1, `max(0, cos(x1, x2) - margin)` where y = -1, with the
    cosine along the last dim (torch's: each squared norm plus 1e-12)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, cosine_embedding_loss, input1, input2, target, margin,
                         reduction)
    fn = "cosine_embedding_loss"
    _check_reduction(fn, reduction)
    x1, x2, _ = _pair(fn, input1, input2)
    y = target
    if not isinstance(y, Tensor):
        raise DTypeError(f"{fn}: target must be a Tensor of 1 and -1, got {type(y).__name__}")
    if x1.shape != x2.shape or x1.ndim not in (1, 2):
        raise ShapeError(f"{fn}: input1 and input2 must be [N, D] or [D] of one shape, got "
                         f"{x1.shape} and {x2.shape}")
    if y.shape != x1.shape[:-1]:
        raise ShapeError(f"{fn}: target must have shape {x1.shape[:-1]}, got {y.shape}")
    eps = 1e-12
    cos = (x1 * x2).sum(-1) / ((x1 * x1).sum(-1) + eps).sqrt() / ((x2 * x2).sum(-1) + eps).sqrt()
    loss = where(y == 1, 1 - cos, 0.0) + where(y == -1, (cos - margin).relu(), 0.0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: str = "mean") -> Tensor:
    """`max(0, margin + d(a, p) - d(a, n))` with d the `pairwise_distance` (p-norm of the
    difference plus eps); `swap` uses `min(d(a, n), d(p, n))` as the negative distance."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, triplet_margin_loss, anchor, positive, negative, margin, p,
                         eps, swap, reduction)
    fn = "triplet_margin_loss"
    _check_reduction(fn, reduction)
    if not margin > 0:
        raise InvalidArgumentError(f"{fn}: margin must be greater than 0, got {margin!r}")
    a = _float_tensor(fn, "anchor", anchor)
    pos = _float_tensor(fn, "positive", positive)
    neg = _float_tensor(fn, "negative", negative)
    try:
        shape = sh.broadcast(fn, a.shape, pos.shape, neg.shape)
    except LazytError:
        shape = None
    if shape is None or len(shape) == 0:
        raise ShapeError(f"{fn}: anchor, positive and negative must broadcast to one shape "
                         f"of at least one dim, got {a.shape}, {pos.shape}, {neg.shape}")
    d_ap = pairwise_distance(a, pos, p, eps)
    d_an = pairwise_distance(a, neg, p, eps)
    if swap:
        d_pn = pairwise_distance(pos, neg, p, eps)
        d_an = where(d_pn < d_an, d_pn, d_an)
    return _reduce((margin + d_ap - d_an).relu(), reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,  # noqa: A002
                     full: bool = False, eps: float = 1e-8,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood: `exp(x) - y * x` (`log_input`), else
    `x - y * log(x + eps)`; `full` adds Stirling's term `y log y - y + log(2 pi y) / 2` where
    y > 1."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, poisson_nll_loss, input, target, log_input, full, eps,
                         reduction)
    fn = "poisson_nll_loss"
    x, y = _pairwise_inputs(fn, reduction, input, target)
    loss = x.exp() - y * x if log_input else x - y * (x + eps).log()
    if full:
        big = y > 1
        ys = where(big, y, 2.0)
        loss = loss + where(big, ys * ys.log() - ys + 0.5 * (2 * math.pi * ys).log(), 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,  # noqa: A002
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood `(log(var) + (x - y)^2 / var) / 2` (+ log(2 pi) / 2
    with `full`), `var` clamped below at `eps` (as torch, the clamp passes the gradient
    through); `var` has the input's shape, or one fewer trailing dim or a last dim of 1 (one
    variance per sample), or is a number. It reads `var` once to refuse negative entries
    (as torch), so it cannot run inside `lazyt.compile`."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, gaussian_nll_loss, input, target, var, full, eps, reduction)
    fn = "gaussian_nll_loss"
    x, y = _pairwise_inputs(fn, reduction, input, target)
    if not isinstance(var, Tensor):
        var = creation.full(x.shape, float(var), dtype=x.dtype, device=x.device)
    v = _float_tensor(fn, "var", var)
    if v.shape != x.shape:
        if v.shape == x.shape[:-1]:
            v = v.unsqueeze(-1)  # one variance per sample
        try:
            _broadcasts(v.shape, x.shape)
        except ValueError:
            raise ShapeError(f"{fn}: var of shape {v.shape} should be {x.shape}, "
                             f"{x.shape[:-1]} or broadcast to {x.shape}") from None
    if (v.detach() < 0).any().item():
        raise InvalidArgumentError(f"{fn}: var has negative entries")
    v = v + (v.clamp(min=eps) - v).detach()  # the clamp's value, the identity's gradient
    loss = 0.5 * (v.log() + (x - y) * (x - y) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


__all__ += ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
            "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
            "poisson_nll_loss", "gaussian_nll_loss"]

# ---------------------------------------------------------------------- class margin losses
def _margin_input(fn: str, input, reduction: str):  # noqa: A002 - torch's name
    _check_reduction(fn, reduction)
    x = _float_tensor(fn, "input", input)
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise ShapeError(f"{fn}: input must be (C,) or (N, C) with C > 0, got {x.shape}")
    return x


def _checked_classes(fn: str, target: Tensor, lo: int, n_classes: int) -> None:
    """Read the targets once (not while `lazyt.compile` records) so an id outside [lo, C)
    raises here, as torch's does, instead of giving a wrong loss."""
    if _capture.active() or target.numel() == 0:
        return
    bad = (target < lo) | (target >= n_classes)
    if bad.any().item():
        raise IndexOutOfRangeError(f"{fn}: target holds class index {target[bad][0].item()}, "
                                   f"outside [{lo}, {n_classes})")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1,  # noqa: A002
                      margin: float = 1.0, weight: Tensor | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: per sample, `sum over i != y of w[y] * max(0, margin -
    x[y] + x[i]) ** p / C`, for input (N, C) or (C,) and class ids target (N,) or ()."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, multi_margin_loss, input, target, p, margin, weight,
                         reduction)
    fn = "multi_margin_loss"
    x = _margin_input(fn, input, reduction)
    if p not in (1, 2):
        raise InvalidArgumentError(f"{fn}: p must be 1 or 2, got {p!r}")
    if not isinstance(target, Tensor) or not target.dtype.is_int:
        raise DTypeError(f"{fn}: target must be an integer tensor of class ids, got "
                         f"{getattr(target, 'dtype', type(target).__name__)}")
    unbatched = x.ndim == 1
    xb = x.unsqueeze(0) if unbatched else x
    y = target.reshape(1) if unbatched and target.ndim == 0 else target
    if y.shape != (xb.shape[0],):
        raise ShapeError(f"{fn}: target must have shape {(xb.shape[0],) if not unbatched else ()}"
                         f" for input {x.shape}, got {target.shape}")
    c = xb.shape[1]
    _checked_classes(fn, y, 0, c)
    weight = _class_weight(fn, weight, c)
    own = xb.gather(1, y.unsqueeze(1))                       # (N, 1)
    hinge = (margin - own + xb).relu()
    if p == 2:
        hinge = hinge * hinge
    not_own = y.unsqueeze(1) != creation.arange(c, device=x.device).unsqueeze(0)
    terms = where(not_own, hinge, 0.0)
    if weight is not None:
        terms = terms * weight.to(dtype=x.dtype)[y].unsqueeze(1)
    loss = terms.sum(1) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                           reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: per sample, `sum over target classes j and non-target
    classes i of max(0, 1 - (x[j] - x[i])) / C`. target has input's shape and holds class
    ids; only those before its first -1 count (torch's layout), a repeated id once per
    listing (as torch)."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.FP32, multilabel_margin_loss, input, target, reduction)
    fn = "multilabel_margin_loss"
    x = _margin_input(fn, input, reduction)
    if not isinstance(target, Tensor) or not target.dtype.is_int:
        raise DTypeError(f"{fn}: target must be an integer tensor of class ids, got "
                         f"{getattr(target, 'dtype', type(target).__name__)}")
    if target.shape != x.shape:
        raise ShapeError(f"{fn}: target must have the input's shape {x.shape}, got "
                         f"{target.shape}")
    unbatched = x.ndim == 1
    xb, y = (x.unsqueeze(0), target.unsqueeze(0)) if unbatched else (x, target)
    c = xb.shape[1]
    _checked_classes(fn, y, -1, c)
    # the ids before the first -1: a running product of "not -1" along the row
    live = (y != -1).to(dtype=dt.int32).cumprod(1) > 0                      # (N, C)
    hits = (y.unsqueeze(2) == creation.arange(c, device=x.device)) & live.unsqueeze(2)
    is_target = hits.any(1)                                                 # (N, C)
    listed = hits.sum(1).to(dtype=xb.dtype)                  # (N, C): times j is listed
    pair = (1.0 - xb.unsqueeze(2) + xb.unsqueeze(1)).relu()                 # [n, j, i]
    loss = (where(~is_target.unsqueeze(1), pair, 0.0) * listed.unsqueeze(2)).sum((1, 2)) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------- random activations
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative inputs scaled by a slope drawn from U(lower, upper)
    per element in training (lazyt's generator), by `(lower + upper) / 2` otherwise."""
    x = _activation_input("rrelu", input)
    if not lower <= upper:
        raise InvalidArgumentError(f"rrelu: lower ({lower!r}) must not be greater than upper "
                                   f"({upper!r})")
    if not training:
        return _stored("rrelu", input, where(x >= 0, x, x * ((lower + upper) / 2)), inplace)
    slope = creation.rand(*x.shape, dtype=x.dtype, device=x.device) * (upper - lower) + lower
    return _stored("rrelu", input, where(x >= 0, x, x * slope), inplace)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False,
                   eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution: `softmax((logits + g) / tau)` with
    Gumbel(0, 1) noise g from lazyt's generator; `hard` returns the one-hot of its argmax
    with the soft sample's gradient (straight-through)."""
    x = _float_tensor("gumbel_softmax", "logits", logits)
    if not tau > 0:
        raise InvalidArgumentError(f"gumbel_softmax: tau must be positive, got {tau!r}")
    u = creation.rand(*x.shape, dtype=x.dtype, device=x.device)
    # -log(Exp(1)) with Exp(1) = -log(1 - u): 1 - u lies in (0, 1], so no log(0)
    g = -(-(1.0 - u).log()).clamp(min=float(dt.finfo(x.dtype).tiny)).log()
    y = _softmax((x + g) / tau, dim)
    if not hard:
        return y
    d = dim % x.ndim if x.ndim else 0
    index = y.argmax(d, keepdim=True)
    y_hard = creation.zeros_like(y).scatter(d, index, 1.0)
    return y_hard - y.detach() + y


from .embedding import embedding_bag  # noqa: E402
from .normalization import local_response_norm  # noqa: E402

__all__ += ["multi_margin_loss", "multilabel_margin_loss", "rrelu", "gumbel_softmax",
            "local_response_norm", "embedding_bag"]

# ---------------------------------------------------------------------- small layers' forms
from .layers import (alpha_dropout, bilinear, channel_shuffle, dropout1d,  # noqa: E402
                     dropout2d, dropout3d, feature_alpha_dropout, fold, instance_norm, pdist,
                     pixel_shuffle, pixel_unshuffle, prelu, unfold)
from .pooling import adaptive_max_pool1d, adaptive_max_pool2d  # noqa: E402
from .pooling import (adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d,  # noqa: E402
                      lp_pool1d, lp_pool2d, lp_pool3d, max_pool3d, max_unpool3d)

__all__ += ["bilinear", "instance_norm", "pixel_shuffle", "pixel_unshuffle", "prelu",
            "alpha_dropout", "channel_shuffle", "dropout1d", "dropout2d", "dropout3d",
            "feature_alpha_dropout", "pdist", "adaptive_max_pool1d", "adaptive_max_pool2d",
            "fold", "unfold", "adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d",
            "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool3d", "max_unpool3d"]

# ---------------------------------------------------------------------- sequence losses
from .ctc import ctc_loss  # noqa: E402

__all__ += ["ctc_loss"]

# ---------------------------------------------------------------------- sampling grids
from .grid import affine_grid, grid_sample  # noqa: E402

__all__ += ["affine_grid", "grid_sample"]

# ---------------------------------------------------------------------- fractional pooling, distance triplets
from .extras import triplet_margin_with_distance_loss  # noqa: E402
from .fractional_pool import fractional_max_pool2d, fractional_max_pool3d  # noqa: E402

__all__ += ["fractional_max_pool2d", "fractional_max_pool3d", "triplet_margin_with_distance_loss"]
