"""torch's gradient clipping (`clip_grad_norm_`, `clip_grad_value_`, `get_total_norm`).

Clipping updates each `.grad` in place with ordinary lazy ops (nothing is read), so it runs
inside `lazyt.compile` and fuses with the optimizer step that follows; only
`error_if_nonfinite=True` reads the norm."""
from __future__ import annotations

import math

from ... import dtype as dt
from ...autodiff import no_grad
from ...creation import zeros
from ...errors import InvalidArgumentError
from ...functional import stack
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm"]


def _tensors(fn: str, tensors) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    out = list(tensors)
    bad = [type(t).__name__ for t in out if not isinstance(t, Tensor)]
    if bad:
        raise InvalidArgumentError(f"{fn}: expected tensors (parameters), got {', '.join(bad)}")
    return out


def _norm(t: Tensor, p: float) -> Tensor:
    if t.dtype is dt.float16:  # squares of half values overflow: the norm in float32
        t = t.to(dt.float32)
    a = t.abs()
    if p == math.inf:
        return a.max()
    if p == 1:
        return a.sum()
    if p == 2:
        return (t * t).sum().sqrt()
    return (a ** p).sum() ** (1.0 / p)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together (the norm of their norms)."""
    ts = _tensors("get_total_norm", tensors)
    p = float(norm_type)
    if not (p > 0):
        raise InvalidArgumentError(f"get_total_norm: norm_type must be positive (or inf), got "
                                   f"{norm_type!r}")
    if not ts:
        return zeros(())
    with no_grad():
        norms = [_norm(t.detach(), p) for t in ts]
        wide = dt.float64 if any(n.dtype is dt.float64 for n in norms) else norms[0].dtype
        total = _norm(stack([n.to(wide) for n in norms]), p)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise InvalidArgumentError(f"get_total_norm: the total norm of order {norm_type} is "
                                   "non-finite, so it cannot be clipped; pass "
                                   "error_if_nonfinite=False to clip anyway")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the parameters' `.grad` in place so their total `norm_type`-norm is at most
    `max_norm` (by `max_norm / (norm + 1e-6)`, capped at 1, as torch); returns the total norm
    before clipping. Parameters without a gradient are skipped."""
    grads = [p.grad for p in _tensors("clip_grad_norm_", parameters) if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    with no_grad():
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every `.grad` element to [-clip_value, clip_value] in place."""
    c = float(clip_value)
    with no_grad():
        for p in _tensors("clip_grad_value_", parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-c, max=c)
