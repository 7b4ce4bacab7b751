"""Student's t distribution with `df` degrees of freedom, location and scale."""
from __future__ import annotations

import math

from ..creation import randn
from ..functional import where
from ..tensor import Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .params import broadcast_all, is_number


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1); `rsample` is `loc + scale * z / sqrt(chi2 / df)`."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_event_dims = {"df": 0, "loc": 0, "scale": 0}

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all("StudentT", df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch = () if all(is_number(v) for v in (df, loc, scale)) else tuple(self.df.shape)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / where(df > 2, df - 2, 1.0)
        return where(df > 2, finite, where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + \
            (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma()
        return -0.5 * (self.df + 1.0) * (y ** 2.0 / self.df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return self.scale.log() + 0.5 * (df + 1) * \
            ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma()) + 0.5 * df.log() + lbeta
