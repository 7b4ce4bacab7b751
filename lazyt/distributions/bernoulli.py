"""The Bernoulli distribution, by `probs` or by `logits`."""
from __future__ import annotations

import math

from ..autodiff import no_grad
from ..creation import arange
from ..errors import InvalidArgumentError
from ..functional import where
from ..sampling import bernoulli
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import BinaryProbs, bce_with_logits, broadcast_all, is_number


def probs_or_logits(name: str, probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise InvalidArgumentError(f"{name}: either `probs` or `logits` must be specified, "
                                   f"but not both")


class Bernoulli(BinaryProbs, Distribution):
    """Bernoulli(probs=p) or Bernoulli(logits=l): 1 with probability p = sigmoid(l)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _param_event_dims = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        probs_or_logits("Bernoulli", probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all("Bernoulli", probs)
        else:
            (self.logits,) = broadcast_all("Bernoulli", logits)
        given = probs if probs is not None else logits
        batch = () if is_number(given) else tuple(self._param.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        p = self.probs
        return where(p == 0.5, math.nan, (p >= 0.5).to(p.dtype))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all("Bernoulli.log_prob", self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, device=self._param.device).to(self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + self._batch_shape) if expand else values
