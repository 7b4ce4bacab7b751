"""The Dirichlet distribution over the probability simplex."""
from __future__ import annotations

from .. import dtype as dt
from ..creation import arange
from ..errors import ShapeError
from ..functional import where
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import float_tensor
from .standard_gamma import standard_gamma


class Dirichlet(Distribution):
    """Dirichlet(concentration [..., K]); `rsample` normalizes K standard gamma samples,
    each with its implicit reparameterization gradient."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _param_event_dims = {"concentration": 1}

    def __init__(self, concentration, validate_args=None):
        c = float_tensor("Dirichlet", "concentration", concentration)
        if c.ndim < 1:
            raise ShapeError("Dirichlet: concentration must be at least one-dimensional, got "
                             "a 0-d tensor")
        self.concentration = c
        super().__init__(tuple(c.shape[:-1]), tuple(c.shape[-1:]),
                         validate_args=validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(shape), "Dirichlet.rsample")
        x = g / g.sum(-1, keepdim=True)
        info = dt.finfo(x.dtype)
        return x + (x.detach().clamp(min=info.tiny, max=1 - info.eps) - x.detach())

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (c - 1.0).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # all concentrations below 1: the mass piles at the corner of the largest
        k = self.concentration.shape[-1]
        corner = (mode.argmax(-1, keepdim=True) == arange(k, device=mode.device)).to(mode.dtype)
        below = (self.concentration < 1).all(-1, keepdim=True)
        return where(below, corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - \
            ((c - 1.0) * c.digamma()).sum(-1)

