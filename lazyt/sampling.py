"""Random generators and sampling, in torch's names: `lazyt.Generator` (its own stream, passed as
`generator=`), the process generator's `seed`, `initial_seed`, `get_rng_state` and
`set_rng_state`, and the samplers `randperm`, `bernoulli`, `multinomial`, `normal`, `poisson`,
`binomial` and `randint_like`, with the in-place fills `bernoulli_`, `random_`, `exponential_`,
`geometric_`, `cauchy_` and `log_normal_`.

Samples are drawn on the host by numpy's PCG64 (the streams differ from torch's; the
distributions, dtypes, shapes and errors are torch's) and uploaded to the input's device.
Parameters that are tensors are read to the host, as torch's checks of them (a probability
outside [0, 1], a negative rate) need their values. As in torch, a sample is not
differentiable: its gradient to a parameter that requires grad is zero.
"""
from __future__ import annotations

import json
import math
import numbers

import numpy as np

from . import data as _data
from . import dtype as dt
from .creation import _creates, _dtype_or, randint, tensor
from .device import resolve
from .dispatch import Dispatch
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import method, where
from .inplace import rebind
from .mathops import install_methods
from .tensor import Tensor

__all__ = ["Generator", "default_generator", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "manual_seed"]


# ---------------------------------------------------------------------- generators
class Generator:
    """A random stream of its own (torch's `torch.Generator`): `manual_seed`, `seed`,
    `initial_seed`, `get_state`/`set_state`; pass it as `generator=` to `rand`, `randn`,
    `randint`, `randperm`, `normal`, `multinomial`, the in-place fills, `nn.init` and the data
    samplers. `device` is kept for torch's signature; the draws happen on the host."""

    def __init__(self, device=None):
        self.device = resolve(device)
        self._seed = _data.fresh_seed()
        self._rng = np.random.default_rng(self._seed)

    def numpy_generator(self) -> np.random.Generator:
        """The numpy generator draws advance."""
        return self._rng

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = _data._seed_value(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Reseed from the OS's entropy; returns the new seed."""
        self.manual_seed(_data.fresh_seed())
        return self.initial_seed()

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The stream's state as a uint8 tensor (give it back to `set_state`)."""
        return _state_tensor(self.numpy_generator())

    def set_state(self, new_state: Tensor) -> "Generator":
        self.numpy_generator().bit_generator.state = _state_of("Generator.set_state",
                                                               new_state)
        return self

    def __repr__(self) -> str:
        return f"lazyt.Generator(device={self.device}, initial_seed={self.initial_seed()})"


class _ProcessGenerator(Generator):
    """The process's generator (`lazyt.default_generator`): a view of the one `rand`, `randn`,
    dropout and the initializers draw from."""

    def __init__(self):                                     # noqa: D107 - state lives in data
        self.device = resolve("cpu")

    def numpy_generator(self) -> np.random.Generator:
        return _data._generator[0]

    def manual_seed(self, seed: int) -> "Generator":
        _data.manual_seed(seed)
        return self

    def initial_seed(self) -> int:
        return _data._initial[0]


default_generator = _ProcessGenerator()


def manual_seed(seed: int) -> Generator:
    """Seed the process's generator (see `lazyt.data.manual_seed`); returns
    `lazyt.default_generator`, as torch returns its default generator."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Reseed the process's generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the process's generator started from (the last `manual_seed`)."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The process generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


def _state_tensor(rng: np.random.Generator) -> Tensor:
    raw = json.dumps(rng.bit_generator.state).encode()
    return tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype=dt.uint8, device="cpu")


def _state_of(op: str, state) -> dict:
    if not isinstance(state, Tensor) or state.dtype is not dt.uint8 or state.ndim != 1:
        raise InvalidArgumentError(f"{op}: expected the 1-D uint8 tensor get_state() / "
                                   f"get_rng_state() returned, got {_describe(state)}")
    try:
        value = json.loads(state.numpy().tobytes().decode())
        np.random.default_rng().bit_generator.state = value   # validates without harm
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise InvalidArgumentError(f"{op}: the tensor is not a generator state from "
                                   "get_state() / get_rng_state()") from None
    return value


def _describe(x) -> str:
    if isinstance(x, Tensor):
        return f"a {x.dtype.name} tensor of shape {x.shape}"
    return type(x).__name__


# ---------------------------------------------------------------------- helpers
def _host_values(op: str, name: str, x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy()
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return np.asarray(x)
    raise DTypeError(f"{op}: {name} must be a lazyt.Tensor or a number, got "
                     f"{type(x).__name__}")


def _float_tensor(op: str, name: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"{op}: {name} must be a lazyt.Tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise DTypeError(f"{op}: {name} must be a floating-point tensor, got {x.dtype.name}")
    return x


def _upload(values: np.ndarray, d: dt.DType, device, params=()) -> Tensor:
    """`values` as a `d` tensor on `device`; joined to `params` that require grad by a `where`
    that selects the sample everywhere, so their gradient is zero (torch's rule)."""
    out = Dispatch.from_numpy(np.ascontiguousarray(values.astype(d.np, copy=False)),
                              resolve(device), Tensor)
    for p in params:
        if isinstance(p, Tensor) and p.requires_grad:
            out = where(True, out, p.to(d))
    return out


# ---------------------------------------------------------------------- samplers
@_creates
def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 by default)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise InvalidArgumentError(f"randperm: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ShapeError(f"randperm: n must be non-negative, got {n}")
    d = _dtype_or(dtype, dt.int64)
    if not d.is_float and d is not dt.bool_ and n > 0 and n - 1 > _int_max(d):
        raise InvalidArgumentError(f"randperm: n={n} does not fit in {d.name}")
    perm = _data.generator(generator, "randperm").permutation(int(n))
    return Dispatch.from_numpy(perm.astype(d.np), resolve(device), Tensor)


def _int_max(d: dt.DType) -> int:
    return int(np.iinfo(d.np).max)


@method(function=False)
def bernoulli(input, p=None, *, generator=None) -> Tensor:  # noqa: A002 - torch's name
    """0/1 samples, 1 with probability `input` (or with the number `p`), in input's dtype."""
    x = _float_tensor("bernoulli", "input", input)
    rng = _data.generator(generator, "bernoulli")
    if p is None:
        probs = x.numpy()
        _check_probs("bernoulli", probs)
    else:
        probs = _number_prob("bernoulli", p)
    draw = rng.random(x.shape) < probs
    return _upload(draw, x.dtype, x.device, (x,))


def _number_prob(op: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise InvalidArgumentError(f"{op}: p must be a number or a tensor, got "
                                   f"{type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{op}: p must be in [0, 1], got {p}")
    return float(p)


def _check_probs(op: str, probs: np.ndarray) -> None:
    with np.errstate(invalid="ignore"):
        bad = ~((probs >= 0) & (probs <= 1))
    if bad.any():
        raise InvalidArgumentError(f"{op}: probabilities must be in [0, 1], got "
                                   f"{probs[bad].flat[0]!r}")


@method(function=False)
def bernoulli_(input, p=0.5, *, generator=None) -> Tensor:  # noqa: A002 - torch's name
    """Fill in place with 0/1 samples, 1 with probability `p` (a number or a tensor that
    broadcasts to input)."""
    if not isinstance(input, Tensor):
        raise DTypeError(f"bernoulli_: expected a lazyt.Tensor, got {type(input).__name__}")
    rng = _data.generator(generator, "bernoulli_")
    if isinstance(p, Tensor):
        probs = p.numpy()
        _check_probs("bernoulli_", probs)
        try:
            probs = np.broadcast_to(probs, input.shape)
        except ValueError:
            raise ShapeError(f"bernoulli_: p of shape {p.shape} does not broadcast to the "
                             f"input's shape {input.shape}") from None
    else:
        probs = _number_prob("bernoulli_", p)
    draw = rng.random(input.shape) < probs
    return rebind(input, _upload(draw, input.dtype, input.device), "bernoulli_")


@method(function=False)
def multinomial(input, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator=None) -> Tensor:
    """`num_samples` category indices per row of the (1-D or 2-D) weights `input` (int64),
    with or without replacement, as torch draws them."""
    x = _float_tensor("multinomial", "input", input)
    if x.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D, got shape {x.shape}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) \
            or num_samples <= 0:
        raise InvalidArgumentError(f"multinomial: num_samples must be a positive int, got "
                                   f"{num_samples!r}")
    w = x.numpy().astype(np.float64).reshape(-1, x.shape[-1])
    n = w.shape[1]
    if n == 0:
        raise ShapeError("multinomial: the weights need at least one category")
    if not replacement and num_samples > n:
        raise InvalidArgumentError(f"multinomial: cannot draw {num_samples} samples without "
                                   f"replacement from {n} categories")
    if not np.isfinite(w).all() or (w < 0).any():
        raise InvalidArgumentError("multinomial: the weights contain inf, nan or a negative "
                                   "value")
    totals = w.sum(axis=1)
    if (totals <= 0).any():
        raise InvalidArgumentError("multinomial: a row of weights sums to 0 (an invalid "
                                   "distribution)")
    rng = _data.generator(generator, "multinomial")
    if replacement:
        out = np.empty((w.shape[0], int(num_samples)), dtype=np.int64)
        for r in range(w.shape[0]):
            out[r] = rng.choice(n, size=int(num_samples), p=w[r] / totals[r])
    else:
        # the smallest Exp(1) / w keys (as torch draws): zero weights come last, in order
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=w.shape) / w
        out = np.argsort(keys, axis=1, kind="stable")[:, :int(num_samples)]
    out = out.reshape(*x.shape[:-1], int(num_samples))
    return Dispatch.from_numpy(out, x.device, Tensor)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std^2): element-wise for tensor `mean` and/or `std` (broadcast
    together), or of shape `size` for two numbers."""
    rng = _data.generator(generator, "normal")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise InvalidArgumentError("normal: with a number mean and std, size= is needed")
        m, s = _host_values("normal", "mean", mean), _host_values("normal", "std", std)
        if s < 0:
            raise InvalidArgumentError(f"normal: std must be >= 0, got {float(s)}")
        shape = tuple(size) if not isinstance(size, numbers.Integral) else (int(size),)
        d = _dtype_or(dtype, dt.DEFAULT_FLOAT)
        out = _upload(rng.standard_normal(shape) * float(s) + float(m), d, device)
        return out.require_grad() if requires_grad else out
    if size is not None:
        raise InvalidArgumentError("normal: size= is only for a number mean and std")
    for name, t in (("mean", mean), ("std", std)):
        if isinstance(t, Tensor) and not t.dtype.is_float:
            raise DTypeError(f"normal: {name} must be a floating-point tensor, got "
                             f"{t.dtype.name}")
    d = tensors[0].dtype if len(tensors) == 1 else dt.promote(mean.dtype, std.dtype)
    m, s = _host_values("normal", "mean", mean), _host_values("normal", "std", std)
    if (s < 0).any():
        raise InvalidArgumentError("normal: std must be >= 0 everywhere")
    try:
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    except ValueError:
        raise ShapeError(f"normal: mean of shape {np.shape(m)} and std of shape "
                         f"{np.shape(s)} do not broadcast") from None
    values = rng.standard_normal(shape) * s + m
    return _upload(np.asarray(values), d, tensors[0].device, tensors)


@method(function=False)
def poisson(input, generator=None) -> Tensor:  # noqa: A002 - torch's name
    """Poisson samples with rates `input` (input's dtype)."""
    x = _float_tensor("poisson", "input", input)
    rates = x.numpy()
    if not (rates >= 0).all():
        raise InvalidArgumentError("poisson: rates must be non-negative (and not NaN)")
    draw = _data.generator(generator, "poisson").poisson(rates.astype(np.float64))
    return _upload(draw, x.dtype, x.device, (x,))


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial samples: successes in `count` trials of probability `prob` (broadcast)."""
    c = _float_tensor("binomial", "count", count)
    p = _float_tensor("binomial", "prob", prob)
    cv, pv = c.numpy().astype(np.float64), p.numpy().astype(np.float64)
    _check_probs("binomial", pv)
    if (cv < 0).any() or (cv != np.floor(cv)).any():
        raise InvalidArgumentError("binomial: count must hold non-negative whole numbers")
    try:
        draw = _data.generator(generator, "binomial").binomial(cv.astype(np.int64), pv)
    except ValueError:
        raise ShapeError(f"binomial: count {c.shape} and prob {p.shape} do not "
                         "broadcast") from None
    return _upload(np.asarray(draw), dt.promote(c.dtype, p.dtype), c.device, (c, p))


def randint_like(input, low: int = 0, high: int | None = None, *,  # noqa: A002
                 generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high) (or [0, low) given one bound), shaped as `input`."""
    if not isinstance(input, Tensor):
        raise DTypeError(f"randint_like: expected a lazyt.Tensor, got {type(input).__name__}")
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, generator=generator, dtype=dtype or input.dtype,
                   device=device or input.device, requires_grad=requires_grad)


# ---------------------------------------------------------------------- in-place fills
def _fill(op: str, input, values: np.ndarray) -> Tensor:
    return rebind(input, _upload(values, input.dtype, input.device), op)


def _positive(op: str, name: str, v, strict: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or math.isnan(v) \
            or (v <= 0 if strict else v < 0):
        raise InvalidArgumentError(f"{op}: {name} must be {'>' if strict else '>='} 0, got "
                                   f"{v!r}")
    return float(v)


@method(function=False)
def random_(input, from_=None, to=None, *, generator=None) -> Tensor:  # noqa: A002
    """Fill in place with integers uniform in [from, to): `random_(to)` draws from [0, to),
    `random_()` from [0, 2**mantissa] for floats and the dtype's range for integers."""
    t = input
    if not isinstance(t, Tensor):
        raise DTypeError(f"random_: expected a lazyt.Tensor, got {type(t).__name__}")
    rng = _data.generator(generator, "random_")
    if from_ is not None and to is None:
        from_, to = 0, from_
    if from_ is None:
        from_ = 0
        if t.dtype.is_float:
            to = (1 << {"float16": 11, "float32": 24, "float64": 53}[t.dtype.name]) + 1
        elif t.dtype is dt.bool_:
            to = 2
        else:
            to = _int_max(t.dtype) + 1
    if to <= from_:
        raise InvalidArgumentError(f"random_: expects from < to, got from={from_} and "
                                   f"to={to}")
    return _fill("random_", t, rng.integers(int(from_), int(to), size=t.shape))


@method(function=False)
def exponential_(input, lambd: float = 1.0, *, generator=None) -> Tensor:  # noqa: A002
    """Fill in place with samples of Exponential(rate `lambd`)."""
    t = _float_tensor("exponential_", "input", input)
    rate = _positive("exponential_", "lambd", lambd)
    draw = _data.generator(generator, "exponential_").exponential(1.0 / rate, size=t.shape)
    return _fill("exponential_", t, draw)


@method(function=False)
def geometric_(input, p: float, *, generator=None) -> Tensor:  # noqa: A002 - torch's name
    """Fill in place with the trial count of the first success (probability `p`): 1, 2, ..."""
    if not isinstance(input, Tensor):
        raise DTypeError(f"geometric_: expected a lazyt.Tensor, got {type(input).__name__}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 < p < 1:
        raise InvalidArgumentError(f"geometric_: p must be in (0, 1), got {p!r}")
    draw = _data.generator(generator, "geometric_").geometric(float(p), size=input.shape)
    return _fill("geometric_", input, draw)


@method(function=False)
def cauchy_(input, median: float = 0.0, sigma: float = 1.0, *,  # noqa: A002
            generator=None) -> Tensor:
    """Fill in place with samples of Cauchy(median, sigma)."""
    t = _float_tensor("cauchy_", "input", input)
    scale = _positive("cauchy_", "sigma", sigma)
    draw = _data.generator(generator, "cauchy_").standard_cauchy(t.shape) * scale + median
    return _fill("cauchy_", t, draw)


@method(function=False)
def log_normal_(input, mean: float = 1.0, std: float = 2.0, *,  # noqa: A002
                generator=None) -> Tensor:
    """Fill in place with exp of samples of N(mean, std^2)."""
    t = _float_tensor("log_normal_", "input", input)
    s = _positive("log_normal_", "std", std)
    draw = _data.generator(generator, "log_normal_").lognormal(float(mean), s, size=t.shape)
    return _fill("log_normal_", t, draw)


__all__ += ["randperm", "bernoulli", "multinomial", "normal", "poisson", "binomial",
            "randint_like"]
install_methods(__name__)
