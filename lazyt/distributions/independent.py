"""`Independent`: some of a distribution's batch dims reinterpreted as event dims."""
from __future__ import annotations

from ..errors import InvalidArgumentError, MissingImplError
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import sum_rightmost


class Independent(Distribution):
    """Independent(base, n): the `n` rightmost batch dims of `base` become event dims, so
    `log_prob` and `entropy` sum over them (a diagonal Normal as one multivariate event)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims: int, validate_args=None):
        if not isinstance(base_distribution, Distribution):
            raise InvalidArgumentError(f"Independent: base_distribution must be a "
                                       f"Distribution, got {type(base_distribution).__name__}")
        n = reinterpreted_batch_ndims
        if isinstance(n, bool) or not isinstance(n, int) or n < 0 or \
                n > len(base_distribution.batch_shape):
            raise InvalidArgumentError(
                f"Independent: expected 0 <= reinterpreted_batch_ndims <= "
                f"len(base_distribution.batch_shape) = {len(base_distribution.batch_shape)}, "
                f"got {n!r}")
        shape = base_distribution.batch_shape + base_distribution.event_shape
        event_dim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Independent":
        batch_shape = tuple(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        extra = self.event_shape[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(batch_shape + extra)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        result = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(result, n) if n else result

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise MissingImplError("Independent.enumerate_support: not implemented when "
                                   "reinterpreted_batch_ndims > 0 (as in torch)")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
