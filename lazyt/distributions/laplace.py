"""The Laplace (double exponential) distribution."""
from __future__ import annotations


from .. import dtype as dt
from ..creation import empty
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import broadcast_all, is_number


class Laplace(Distribution):
    """Laplace(loc, scale); `rsample` inverts the CDF at u ~ U(eps - 1, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_event_dims = {"loc": 0, "scale": 0}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all("Laplace", loc, scale)
        batch = () if is_number(loc) and is_number(scale) else tuple(self.loc.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=()) -> Tensor:
        eps = dt.finfo(self.loc.dtype).eps
        u = empty(self._extended_shape(sample_shape), dtype=self.loc.dtype,
                  device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * \
            (-(value - self.loc).abs() / self.scale).expm1()

    def icdf(self, value) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


