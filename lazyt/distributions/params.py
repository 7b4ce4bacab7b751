"""Parameters of distributions: numbers and tensors broadcast to one float tensor shape, the
probs <-> logits conversions, and `lazy_property` for parameters derived on first use."""
from __future__ import annotations

import numbers

from .. import dtype as dt
from ..autodiff import enable_grad
from ..creation import full
from ..errors import DTypeError, ShapeError
from ..shape import broadcast
from ..tensor import Tensor


def is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def broadcast_all(op: str, *values) -> tuple:
    """`values` (tensors and numbers) as float tensors of one dtype, device and shape: numbers
    take the tensors' dtype (the default float when all are numbers), integer tensors the
    default float."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, Tensor) and not is_number(v):
            raise DTypeError(f"{op}: parameters must be lazyt.Tensors or numbers, got "
                             f"{type(v).__name__}")
    d, device = dt.DEFAULT_FLOAT, None
    for t in tensors:
        td = t.dtype if t.dtype.is_float else dt.DEFAULT_FLOAT
        d = td if device is None else dt.promote(d, td)
        device = t.device if device is None else device
    out = [_as(v, d, device) for v in values]
    try:
        shape = broadcast(op, *(t.shape for t in out))
    except ShapeError:
        raise ShapeError(f"{op}: the parameters' shapes "
                         f"{', '.join(str(tuple(t.shape)) for t in out)} do not "
                         "broadcast") from None
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in out)


def _as(v, d: dt.DType, device) -> Tensor:
    if not isinstance(v, Tensor):
        return full((), float(v), dtype=d, device=device)
    return v if v.dtype is d else v.to(d)


def float_tensor(op: str, name: str, x) -> Tensor:
    """`x` (a tensor, or a number as a default-float 0-d tensor) in a float dtype."""
    if is_number(x):
        return full((), float(x), dtype=dt.DEFAULT_FLOAT)
    if not isinstance(x, Tensor):
        raise DTypeError(f"{op}: {name} must be a lazyt.Tensor or a number, got "
                         f"{type(x).__name__}")
    return x if x.dtype.is_float else x.to(dt.DEFAULT_FLOAT)


def clamp_probs(probs: Tensor) -> Tensor:
    eps = dt.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log-odds (`is_binary`) or log-probabilities, of probabilities clamped into (0, 1)."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def softplus(x: Tensor) -> Tensor:
    """log(1 + e^x), without overflow."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()


def bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """torch's binary_cross_entropy_with_logits, reduction="none"."""
    return logits.clamp(min=0) - logits * target + (-logits.abs()).exp().log1p()


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """`value` summed over its `dim` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


class lazy_property:  # noqa: N801 - torch's name
    """A parameter computed from another on first use (Bernoulli's logits from its probs),
    then stored on the instance."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.fn(instance)
        instance.__dict__[self.fn.__name__] = value
        return value


class BinaryProbs:
    """The `probs` / `logits` pair of a distribution given either one (Bernoulli, Geometric,
    Binomial): the one given is stored, the other derived (binary) on first use."""

    @property
    def _param(self) -> Tensor:
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)
