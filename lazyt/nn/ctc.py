"""Connectionist temporal classification loss (torch's `F.ctc_loss`; `nn.CTCLoss` holds its
options in lazyt/nn/loss.py).

The forward (alpha) recursion runs in log space as ordinary Tensor ops, one vectorised step
over batch x extended labels per time step, so autodiff gives the gradient. The lengths and
targets are small integer data and are read to the host once: they fix the extended label
sequences, the skip transitions and which frames each sample uses.

Where torch's gradient differs: torch's hand-written backward returns
`exp(log_probs) - posterior` on a sample's frames, the gradient with respect to the logits
under a log_softmax. Here the gradient is the derivative of the loss itself, `-posterior`.
The two agree for log_softmax outputs, which is what callers pass (log_softmax's backward
removes the difference); for other inputs only this one is the true derivative.
"""
from __future__ import annotations

import numpy as np

from .. import creation
from ..errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from ..functional import cat, stack, where
from ..tensor import Tensor
from .conv import float_input

__all__ = ["ctc_loss"]

_FN = "ctc_loss"
_NEG_INF = float("-inf")


# ---------------------------------------------------------------------- validation
def _lengths(name: str, value, n: int) -> np.ndarray:
    """input_lengths or target_lengths as an (N,) int64 array: an integer tensor (read to the
    host; any shape with N elements, as torch), or a list/tuple of ints or 0-d integer
    tensors, or one int."""
    if isinstance(value, Tensor):
        if not value.dtype.is_int:
            raise DTypeError(f"{_FN}: {name} must be an integer tensor, got {value.dtype.name} "
                             f"of shape {value.shape}")
        out = np.asarray(value.numpy(), dtype=np.int64).reshape(-1)
    else:
        items = [value] if isinstance(value, (int, np.integer)) else value
        if not isinstance(items, (list, tuple, np.ndarray)):
            raise DTypeError(f"{_FN}: {name} must be an integer tensor or a list/tuple of ints, "
                             f"got {type(value).__name__}")
        out = np.array([_length_item(name, v) for v in items], dtype=np.int64)
    if out.shape != (n,):
        raise ShapeError(f"{_FN}: {name} must hold one length per batch element ({n}), got "
                         f"{out.size}")
    if (out < 0).any():
        raise InvalidArgumentError(f"{_FN}: {name} must be >= 0, got {int(out[out < 0][0])}")
    return out


def _length_item(name: str, v) -> int:
    if isinstance(v, Tensor) and v.dtype.is_int and v.numel() == 1:
        return int(v.item())
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise DTypeError(f"{_FN}: {name} must hold ints, got an item of type {type(v).__name__}"
                     + (f" ({v.dtype.name}, shape {v.shape})" if isinstance(v, Tensor) else ""))


def _labels(targets, target_lengths: np.ndarray, n: int, unbatched: bool,
            blank: int, n_classes: int) -> np.ndarray:
    """The targets as an (N, max target length) int64 array, padded with `blank`.

    A 1-D target is the concatenation of every sample's labels (its length is the sum of the
    target lengths); a 2-D one is padded, one row per sample, with at least max(target_lengths)
    columns (those past a sample's length are ignored, as torch). Unbatched input takes a 1-D
    target as its labels or a (1, S) one as padded, as torch."""
    if not isinstance(targets, Tensor):
        raise DTypeError(f"{_FN}: targets must be a lazyt.Tensor of class indices, got "
                         f"{type(targets).__name__}")
    if not targets.dtype.is_int:
        raise DTypeError(f"{_FN}: targets must be an integer tensor (int64 or int32) of class "
                         f"indices, got {targets.dtype.name} of shape {targets.shape}")
    rows_expected = "(S,) or (1, S)" if unbatched else "(sum(target_lengths),) or (N, S)"
    if targets.ndim == 1:
        total = int(target_lengths.sum())
        if targets.shape[0] != total:
            raise ShapeError(f"{_FN}: concatenated targets must have shape ({total},) (the sum "
                             f"of target_lengths), got {targets.shape}")
        flat = np.asarray(targets.numpy(), dtype=np.int64)
        ends = np.cumsum(target_lengths)
        rows = [flat[e - k:e] for e, k in zip(ends, target_lengths)]
    elif targets.ndim == 2:
        longest = int(target_lengths.max(initial=0))
        if targets.shape[0] != n or targets.shape[1] < longest:
            raise ShapeError(f"{_FN}: padded targets must have shape ({n}, S) with S >= "
                             f"max(target_lengths) = {longest}, got {targets.shape}")
        padded = np.asarray(targets.numpy(), dtype=np.int64)
        rows = [padded[i, :k] for i, k in enumerate(target_lengths)]
    else:
        raise ShapeError(f"{_FN}: targets must be {rows_expected}, got shape {targets.shape}")
    out = np.full((n, int(target_lengths.max(initial=0))), blank, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    used = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    bad = (used < 0) | (used >= n_classes)
    if bad.any():
        raise IndexOutOfRangeError(f"{_FN}: targets hold class index {int(used[bad][0])}, "
                                   f"outside [0, {n_classes}) for log_probs with C={n_classes}")
    if (used == blank).any():
        raise InvalidArgumentError(f"{_FN}: targets hold the blank index {blank}; a target "
                                   f"label cannot be blank")
    return out


# ---------------------------------------------------------------------- the recursion
def _logsumexp_last(x: Tensor) -> Tensor:
    """log(sum(exp(x))) over the last dim, -inf where every entry is -inf, with zero (not NaN)
    gradient there: the shift is detached and log never sees a 0 it must differentiate."""
    m = x.detach().amax(-1, keepdim=True)
    dead = m == _NEG_INF
    m = where(dead, 0.0, m)
    s = (x - m).exp().sum(-1, keepdim=True)
    out = where(dead, _NEG_INF, m + where(dead, 1.0, s).log())
    return out.squeeze(-1)


def _extended(labels: np.ndarray, blank: int) -> tuple:
    """(extended labels `blank l1 blank l2 ... blank`, additive bias: 0 where the skip from
    s-2 to s is allowed, i.e. s is a label differing from the label before, else -inf)."""
    n, s = labels.shape
    ext = np.full((n, 2 * s + 1), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    skip = np.full(ext.shape, _NEG_INF)
    skip[:, 3::2] = np.where(labels[:, 1:] != labels[:, :-1], 0.0, _NEG_INF)
    return ext, skip


def _log_likelihood(lp: Tensor, labels: np.ndarray, in_len: np.ndarray, tg_len: np.ndarray,
                    blank: int) -> Tensor:
    """(N,) log p(target | input) of log_probs `lp` (T, N, C) in its own dtype."""
    n = lp.shape[1]
    dev, dtype = lp.device, lp.dtype
    ext, skip = _extended(labels, blank)
    k = ext.shape[1]
    steps = int(in_len.max(initial=0))
    emit = lp[:steps].gather(2, creation.tensor(np.broadcast_to(ext, (steps, n, k)).copy(),
                                                device=dev))           # (steps, N, K)
    skip_bias = creation.tensor(skip, dtype=dtype, device=dev)
    live = creation.tensor(np.arange(steps)[:, None, None] < in_len[None, :, None], device=dev)
    wall = creation.full((n, 2), _NEG_INF, dtype=dtype, device=dev)
    start = np.full((n, k), _NEG_INF)
    start[:, 0] = 0.0                       # a virtual frame -1 that sits on the first blank
    alpha = creation.tensor(start, dtype=dtype, device=dev)
    if steps == 0:   # no sample has a frame: still a function of lp (zero gradient), as torch
        alpha = alpha + emit.sum(0)
    all_live = int(in_len.min(initial=0))
    for t in range(steps):
        shifted = cat([wall, alpha], 1)
        paths = stack([alpha, shifted[:, 1:k + 1], shifted[:, :k] + skip_bias], 2)
        step = _logsumexp_last(paths) + emit[t]
        alpha = step if t < all_live else where(live[t], step, alpha)  # finished: keep
    # the path ends on the last label or the blank after it
    last = np.stack([2 * tg_len, 2 * tg_len - 1], 1)
    ends = alpha.gather(1, creation.tensor(np.maximum(last, 0), device=dev))
    ends = ends + creation.tensor(np.where(last >= 0, 0.0, _NEG_INF), dtype=dtype, device=dev)
    return _logsumexp_last(ends)


def _nan_gradient_where_infinite(loss: Tensor, lp: Tensor, in_len: np.ndarray) -> Tensor:
    """`loss` unchanged in value, but an infinite sample's gradient is NaN on its frames, as
    torch's (zero_infinity=True is how a caller asks for zeros instead)."""
    steps = lp.shape[0]
    live = creation.tensor(np.arange(steps)[:, None, None] < in_len[None, :, None],
                           device=lp.device)
    poison = where(live & (loss == float("inf")).reshape(1, -1, 1), float("nan"), 0.0)
    term = (lp * poison).sum((0, 2))        # NaN in value too: only its gradient is kept
    keep = creation.ones(loss.shape, dtype=loss.dtype, device=loss.device) > 0
    return loss + where(keep, 0.0, term)


# ---------------------------------------------------------------------- public
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss `-log p(target | input)` of log-probabilities `log_probs` (T, N, C) or
    (T, C), summed over every alignment of each target, as torch's `F.ctc_loss`.

    `targets` is (N, S) padded or the (sum(target_lengths),) concatenation; the lengths are
    integer tensors or lists/tuples of ints (read to the host, so not under lazyt.compile). `reduction="mean"` divides each loss by its target length
    (at least 1) before the batch mean. An input too short for its target gives inf (its
    gradient is NaN, as torch), or 0 with zero gradient when `zero_infinity`."""
    if reduction not in ("none", "mean", "sum"):
        raise InvalidArgumentError(f"{_FN}: reduction must be one of 'none', 'mean', 'sum', "
                                   f"got {reduction!r}")
    lp = float_input(_FN, "log_probs", log_probs)
    if lp.ndim not in (2, 3):
        raise ShapeError(f"{_FN}: log_probs must be (T, N, C) or unbatched (T, C), got shape "
                         f"{lp.shape}")
    unbatched = lp.ndim == 2
    if unbatched:
        lp = lp.unsqueeze(1)
    steps, n, n_classes = lp.shape
    if lp.numel() == 0:
        raise ShapeError(f"{_FN}: log_probs must not be empty, got shape {log_probs.shape}")
    if isinstance(blank, bool) or not isinstance(blank, (int, np.integer)):
        raise InvalidArgumentError(f"{_FN}: blank must be an int, got {type(blank).__name__}")
    if not 0 <= blank < n_classes:
        raise InvalidArgumentError(f"{_FN}: blank must be in [0, {n_classes}) (the label "
                                   f"range of log_probs {log_probs.shape}), got {blank}")
    in_len = _lengths("input_lengths", input_lengths, n)
    tg_len = _lengths("target_lengths", target_lengths, n)
    if (in_len > steps).any():
        raise InvalidArgumentError(f"{_FN}: input_lengths must be <= T = {steps} (log_probs "
                                   f"{log_probs.shape}), got {int(in_len.max())}")
    labels = _labels(targets, tg_len, n, unbatched, int(blank), n_classes)

    work = lp if lp.dtype.itemsize >= 4 else lp.float()   # float16 runs in float32
    loss = -_log_likelihood(work, labels, in_len, tg_len, int(blank))
    if zero_infinity:
        loss = where(loss == float("inf"), 0.0, loss)
    else:
        loss = _nan_gradient_where_infinite(loss, work[:int(in_len.max(initial=0))], in_len)
    loss = loss.to(dtype=lp.dtype)
    if reduction == "mean":
        lengths = creation.tensor(np.maximum(tg_len, 1), dtype=loss.dtype, device=loss.device)
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape(()) if unbatched else loss
