"""The geometric distribution: failures before the first success (0, 1, 2, ...)."""
from __future__ import annotations

from .. import dtype as dt
from ..autodiff import no_grad
from ..creation import empty, zeros_like
from ..errors import InvalidArgumentError
from ..functional import where
from ..tensor import Tensor
from . import constraints
from .bernoulli import probs_or_logits
from .distribution import Distribution
from .params import BinaryProbs, bce_with_logits, broadcast_all, is_number


class Geometric(BinaryProbs, Distribution):
    """Geometric(probs=p) or (logits=l): P(k) = (1 - p)^k p."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _param_event_dims = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        probs_or_logits("Geometric", probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all("Geometric", probs)
        else:
            (self.logits,) = broadcast_all("Geometric", logits)
        given = probs if probs is not None else logits
        batch = () if is_number(given) else tuple(self._param.shape)
        super().__init__(batch, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise InvalidArgumentError(f"Geometric: expected parameter probs (Tensor of shape "
                                       f"{tuple(self.probs.shape)}) to be positive but found "
                                       f"invalid values:\n{self.probs}")

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = self.probs
        with no_grad():
            u = empty(shape, dtype=p.dtype, device=p.device).uniform_(dt.finfo(p.dtype).tiny, 1)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all("Geometric.log_prob", value, self.probs)
        probs = where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs) / self.probs
