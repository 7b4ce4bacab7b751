"""The Poisson distribution of rate `rate`."""
from __future__ import annotations

from ..autodiff import no_grad
from ..sampling import poisson
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import broadcast_all, is_number


class Poisson(Distribution):
    """Poisson(rate): counts 0, 1, 2, ... with mean and variance `rate`."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _param_event_dims = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all("Poisson", rate)
        batch = () if is_number(rate) else tuple(self.rate.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all("Poisson.log_prob", self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
