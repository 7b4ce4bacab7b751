"""The exponential distribution of rate `rate`."""
from __future__ import annotations

from ..creation import empty, zeros_like
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import broadcast_all, is_number


class Exponential(Distribution):
    """Exponential(rate); `rsample` is `e / rate` with e ~ Exp(1)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _param_event_dims = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all("Exponential", rate)
        batch = () if is_number(rate) else tuple(self.rate.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()) -> Tensor:
        e = empty(self._extended_shape(sample_shape), dtype=self.rate.dtype,
                  device=self.rate.device).exponential_()
        return e / self.rate

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()
