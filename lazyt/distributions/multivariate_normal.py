"""The multivariate normal distribution, by covariance, precision or Cholesky factor."""
from __future__ import annotations

import math

from .. import dtype as dt
from ..creation import eye, randn
from ..errors import InvalidArgumentError, ShapeError
from ..linalg import cholesky, solve_triangular
from ..shape import broadcast
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .params import float_tensor, lazy_property


def batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products, batch dims broadcast."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:  # noqa: N803 - the factor's name
    """x^T (L L^T)^-1 x for lower-triangular L [..., n, n] and x [..., n], batches broadcast."""
    n = bx.shape[-1]
    batch = broadcast("MultivariateNormal", tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    sol = solve_triangular(bL.expand(batch + (n, n)), bx.expand(batch + (n,)).unsqueeze(-1),
                           upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


def precision_to_scale_tril(P: Tensor) -> Tensor:  # noqa: N803 - the matrix's name
    """The lower Cholesky factor of P^-1, without inverting P (by flipping its factor)."""
    lf = cholesky(P.flip(-2, -1))
    l_inv = lf.flip(-2, -1).transpose(-2, -1)
    identity = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return solve_triangular(l_inv, identity, upper=False)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc [..., n], exactly one of covariance_matrix, precision_matrix,
    scale_tril [..., n, n]); `rsample` is `loc + L eps` with L the scale_tril."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _param_event_dims = {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2,
                         "scale_tril": 2}

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        name = "MultivariateNormal"
        loc = float_tensor(name, "loc", loc)
        if loc.ndim < 1:
            raise ShapeError(f"{name}: loc must be at least one-dimensional, got a 0-d tensor")
        given = [(k, v) for k, v in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise InvalidArgumentError(f"{name}: exactly one of covariance_matrix, "
                                       f"precision_matrix or scale_tril may be specified, got "
                                       f"{[k for k, _ in given] or 'none'}")
        key, m = given[0]
        m = float_tensor(name, key, m)
        if m.ndim < 2:
            raise ShapeError(f"{name}: {key} must be at least two-dimensional, with optional "
                             f"leading batch dimensions, got shape {tuple(m.shape)}")
        n = loc.shape[-1]
        if tuple(m.shape[-2:]) != (n, n):
            raise ShapeError(f"{name}: {key} of shape {tuple(m.shape)} does not match loc of "
                             f"shape {tuple(loc.shape)} (expected [..., {n}, {n}])")
        d = dt.promote(loc.dtype, m.dtype)
        loc, m = loc.to(d), m.to(d)
        batch = broadcast(name, tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, key, m.expand(batch + (n, n)))
        self.loc = loc.expand(batch + (n,))
        super().__init__(batch, (n,), validate_args=validate_args)
        if key == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif key == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(m)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(m)

    def expand(self, batch_shape, _instance=None) -> "MultivariateNormal":
        new = super().expand(batch_shape, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape +
                                                     self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        lt = self._unbroadcasted_scale_tril
        return (lt @ lt.transpose(-2, -1)).expand(self._batch_shape + self._event_shape +
                                                  self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        lt = self._unbroadcasted_scale_tril
        identity = eye(lt.shape[-1], dtype=lt.dtype, device=lt.device)
        l_inv = solve_triangular(lt, identity, upper=False)
        return (l_inv.transpose(-2, -1) @ l_inv).expand(
            self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape +
                                                                    self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype,
                    device=self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if not self._batch_shape else h.expand(self._batch_shape)
