"""The categorical distribution over {0, ..., K-1}, by `probs` or by `logits` [..., K]."""
from __future__ import annotations

import math

from .. import dtype as dt
from ..autodiff import no_grad
from ..creation import arange, full
from ..errors import ShapeError
from ..moreops import broadcast_tensors
from ..reductions import logsumexp
from ..sampling import multinomial
from ..tensor import Tensor
from . import constraints
from .bernoulli import probs_or_logits
from .distribution import Distribution
from .params import float_tensor, lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """Categorical(probs=p) or Categorical(logits=l): probs are normalized to sum to 1 and
    logits to log-probabilities, over the last dim."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _param_event_dims = {"probs": 1, "logits": 1}

    def __init__(self, probs=None, logits=None, validate_args=None):
        name = type(self).__name__
        probs_or_logits(name, probs, logits)
        if probs is not None:
            p = float_tensor(name, "probs", probs)
            if p.ndim < 1:
                raise ShapeError(f"{name}: probs must be at least one-dimensional")
            self.probs = p / p.sum(-1, keepdim=True)
        else:
            lg = float_tensor(name, "logits", logits)
            if lg.ndim < 1:
                raise ShapeError(f"{name}: logits must be at least one-dimensional")
            self.logits = lg - logsumexp(lg, -1, keepdim=True)
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self._param.dtype,
                    device=self._param.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = math.prod(shape[:len(shape) - len(self._batch_shape)])
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = multinomial(probs_2d, n, True).transpose(0, 1)
        return samples_2d.reshape(shape)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(dt.int64).unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=dt.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((self._num_events,) + self._batch_shape) if expand else values
