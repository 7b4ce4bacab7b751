"""`Distribution`, the base class of every distribution (torch.distributions.Distribution):
shapes, sampling, scoring, moments and the argument validation torch does by default.

Validation (on unless `validate_args=False` or `Distribution.set_default_validate_args(False)`)
reads values, as torch does: each parameter against its `arg_constraints` when the
distribution is built, and each value given to `log_prob`/`cdf` against `support`. A failure
raises `InvalidArgumentError` (a ValueError, as torch's) naming the distribution."""
from __future__ import annotations

from ..autodiff import no_grad
from ..errors import InvalidArgumentError, MissingImplError, ShapeError
from ..tensor import Tensor
from . import constraints
from .params import lazy_property


def _shape(op: str, size) -> tuple:
    if isinstance(size, int):
        return (size,)
    try:
        shape = tuple(int(s) for s in size)
    except TypeError:
        raise InvalidArgumentError(f"{op}: expected a shape (a tuple of ints), got "
                                   f"{type(size).__name__}") from None
    return shape


class Distribution:
    """A batch of probability distributions: `batch_shape` independent ones, each over values
    of `event_shape`."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints: dict = {}
    support = None
    # the number of rightmost dims of each tensor attribute that are not batch dims;
    # `expand` expands these attributes and drops other tensors (cached lazy properties)
    _param_event_dims: dict = {}

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions built afterwards."""
        if value not in (True, False):
            raise InvalidArgumentError(f"set_default_validate_args: expected a bool, got "
                                       f"{value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _shape(type(self).__name__, batch_shape)
        self._event_shape = _shape(type(self).__name__, event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and \
                        isinstance(getattr(type(self), param, None), lazy_property):
                    continue
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise InvalidArgumentError(
                        f"{type(self).__name__}: expected parameter {param} (Tensor of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        return _shape(f"{type(self).__name__}.sample", sample_shape) + \
            self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """A view with a larger `batch_shape` (parameters broadcast, not copied)."""
        name = type(self).__name__
        batch_shape = _shape(f"{name}.expand", batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        for key, value in self.__dict__.items():
            if isinstance(value, Tensor):
                if key not in self._param_event_dims:
                    continue
                k = self._param_event_dims[key]
                try:
                    value = value.expand(batch_shape + tuple(value.shape[value.ndim - k:]))
                except (ShapeError, ValueError, RuntimeError):
                    raise ShapeError(f"{name}.expand: batch_shape {self._batch_shape} cannot "
                                     f"be expanded to {batch_shape}") from None
            elif isinstance(value, Distribution):
                value = value.expand(batch_shape)
            new.__dict__[key] = value
        new._batch_shape = batch_shape
        return new

    # ------------------------------------------------------------------ moments
    @property
    def mean(self) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: mean is not implemented")

    @property
    def mode(self) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: mode is not implemented")

    @property
    def variance(self) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: variance is not implemented")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    # ------------------------------------------------------------------ sampling
    def sample(self, sample_shape=()) -> Tensor:
        """Samples of shape `sample_shape + batch_shape + event_shape`, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Reparameterized samples: gradients flow to the parameters."""
        raise MissingImplError(f"{type(self).__name__}: rsample is not implemented (has_rsample"
                               f" is False); use sample()")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    # ------------------------------------------------------------------ scoring
    def log_prob(self, value: Tensor) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: log_prob is not implemented")

    def cdf(self, value: Tensor) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: cdf is not implemented")

    def icdf(self, value: Tensor) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: icdf is not implemented")

    def entropy(self) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: entropy is not implemented")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise MissingImplError(f"{type(self).__name__}: enumerate_support is not implemented")

    # ------------------------------------------------------------------ validation
    def _validate_sample(self, value) -> None:
        """Check `value` against the shapes and `support` (see the module's docstring)."""
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise InvalidArgumentError(f"{name}: the value argument must be a lazyt.Tensor, "
                                       f"got {type(value).__name__}")
        shape, ev = tuple(value.shape), self._event_shape
        if shape[len(shape) - len(ev):] != ev or len(shape) < len(ev):
            raise ShapeError(f"{name}: the right-most size of value must match event_shape: "
                             f"{shape} vs {ev}")
        expected = self._batch_shape + ev
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ShapeError(f"{name}: value of shape {shape} does not broadcast with "
                                 f"batch_shape + event_shape {expected}")
        support = self.support
        if support is None:
            return
        if not bool(support.check(value).all()):
            raise InvalidArgumentError(
                f"{name}: expected value argument (Tensor of shape {shape}) to be within the "
                f"support ({support!r}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{k}: {self.__dict__[k].item() if self.__dict__[k].numel() == 1 else tuple(self.__dict__[k].shape)}"
            for k in names)
        return f"{type(self).__name__}({args})"
