"""The gamma distribution (shape `concentration`, inverse scale `rate`)."""
from __future__ import annotations

from .. import dtype as dt
from ..special_more import igamma
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import broadcast_all, is_number
from .standard_gamma import standard_gamma


class Gamma(Distribution):
    """Gamma(concentration, rate); `rsample` has torch's implicit reparameterization gradient
    (see `standard_gamma`)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _param_event_dims = {"concentration": 0, "rate": 0}

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(type(self).__name__, concentration, rate)
        batch = () if is_number(concentration) and is_number(rate) else \
            tuple(self.concentration.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration.expand(shape), f"{type(self).__name__}.rsample")
        value = x / self.rate.expand(shape)
        tiny = dt.finfo(value.dtype).tiny
        return value + (value.detach().clamp(min=tiny) - value.detach())

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return c.xlogy(r) + (c - 1).xlogy(value) - r * value - c.lgamma()

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)
