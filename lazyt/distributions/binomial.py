"""The binomial distribution: successes in `total_count` trials of probability `probs`."""
from __future__ import annotations

from ..autodiff import no_grad
from ..creation import arange
from ..errors import MissingImplError
from ..sampling import binomial
from ..tensor import Tensor
from . import constraints
from .bernoulli import probs_or_logits
from .distribution import Distribution
from .params import BinaryProbs, broadcast_all


def _clamp_by_zero(x: Tensor) -> Tensor:
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryProbs, Distribution):
    """Binomial(total_count=1, probs=p) or (total_count, logits=l)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _param_event_dims = {"total_count": 0, "probs": 0, "logits": 0}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        probs_or_logits("Binomial", probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all("Binomial", total_count, probs)
        else:
            self.total_count, self.logits = broadcast_all("Binomial", total_count, logits)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        normalize = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p() - \
            log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def _total(self, op: str) -> int:
        total = int(self.total_count.max().item())
        if int(self.total_count.min().item()) != total:
            raise MissingImplError(f"Binomial.{op}: an inhomogeneous total_count is not "
                                   "supported (as in torch)")
        return total

    def entropy(self) -> Tensor:
        self._total("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total = self._total("enumerate_support")
        values = arange(1 + total, device=self._param.device).to(self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((1 + total,) + self._batch_shape) if expand else values
