"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math

from ..creation import empty, full
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import broadcast_all, is_number


class Cauchy(Distribution):
    """Cauchy(loc, scale): no mean or variance (NaN and inf, as torch)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_event_dims = {"loc": 0, "scale": 0}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all("Cauchy", loc, scale)
        batch = () if is_number(loc) and is_number(scale) else tuple(self.loc.shape)
        super().__init__(batch, validate_args=validate_args)

    def _filled(self, v: float) -> Tensor:
        return full(self._extended_shape(), v, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mean(self) -> Tensor:
        return self._filled(math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._filled(math.inf)

    def rsample(self, sample_shape=()) -> Tensor:
        eps = empty(self._extended_shape(sample_shape), dtype=self.loc.dtype,
                    device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - \
            (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
