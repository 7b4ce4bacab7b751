"""Initial parameter values: torch's defaults (so models start from familiar scales) and
torch.nn.init's in-place initializers (`kaiming_uniform_`, `xavier_normal_`, `constant_`,
...), which fill a tensor without recording gradients and return it."""
from __future__ import annotations

import math
import numbers

from .. import creation
from ..autodiff import no_grad
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..reductions import normal_ as _normal
from ..reductions import uniform_ as _uniform
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_",
    "eye_", "dirac_", "sparse_",
]


def _uniform_values(shape: tuple, bound: float, dtype, device) -> Tensor:
    """Samples of U(-bound, bound) drawn from lazyt's generator (`lazyt.manual_seed`)."""
    return creation.rand(shape, dtype=dtype, device=device) * (2 * bound) - bound


def fan_in_uniform(shape: tuple, fan_in: int, dtype, device) -> Tensor:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's Linear default for weight and bias."""
    return _uniform_values(shape, 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0, dtype, device)


# ---------------------------------------------------------------------- torch.nn.init
_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (torch's table): 1 for linear layers and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope
    `param`, default 0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise InvalidArgumentError(f"calculate_gain: negative_slope {param!r} is not a "
                                       "valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidArgumentError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _tensor(op: str, t) -> Tensor:
    if not isinstance(t, Tensor):
        raise DTypeError(f"{op}: expected a lazyt.Tensor, got {type(t).__name__}")
    return t


def _fans(op: str, t: Tensor) -> tuple:
    """(fan_in, fan_out) of a weight shaped (out, in, *kernel), as torch computes them."""
    if t.ndim < 2:
        raise ShapeError(f"{op}: fan in and fan out cannot be computed for a tensor with fewer "
                         f"than 2 dims (shape {t.shape})")
    receptive = 1
    for s in t.shape[2:]:
        receptive *= s
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(op: str, t: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(op, t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill `tensor` with samples of U(a, b)."""
    with no_grad():
        return _uniform(_tensor("uniform_", tensor), a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill `tensor` with samples of N(mean, std^2)."""
    with no_grad():
        return _normal(_tensor("normal_", tensor), mean, std, generator=generator)


def constant_(tensor: Tensor, val) -> Tensor:
    """Fill `tensor` with `val`."""
    with no_grad():
        return _tensor("constant_", tensor).fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill `tensor` with zeros."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill `tensor` with ones."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    t = _tensor("xavier_uniform_", tensor)
    fan_in, fan_out = _fans("xavier_uniform_", t)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return uniform_(t, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    t = _tensor("xavier_normal_", tensor)
    fan_in, fan_out = _fans("xavier_normal_", t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), gain from `nonlinearity` (and
    slope `a` for leaky_relu), fan the weight's fan_in or fan_out. An empty tensor is
    returned unchanged, as torch does."""
    t = _tensor("kaiming_uniform_", tensor)
    if 0 in t.shape:
        return t
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan("kaiming_uniform_", t, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan) (see `kaiming_uniform_`)."""
    t = _tensor("kaiming_normal_", tensor)
    if 0 in t.shape:
        return t
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan("kaiming_normal_", t, mode))
    return normal_(t, 0.0, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill `tensor` with N(mean, std^2) truncated to [a, b] (torch's method: uniform samples
    between the normal CDF at a and at b, mapped back through the inverse CDF)."""
    t = _tensor("trunc_normal_", tensor)
    if not a < b:
        raise InvalidArgumentError(f"trunc_normal_: a ({a!r}) must be below b ({b!r})")
    if not std > 0:
        raise InvalidArgumentError(f"trunc_normal_: std must be positive, got {std!r}")

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad():
        uniform_(t, 2 * lo - 1, 2 * hi - 1, generator)
        t.copy_((t.erfinv() * (std * math.sqrt(2.0)) + mean).clamp(a, b))
    return t


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill `tensor` (2 dims or more; trailing dims flattened) with a (semi-)orthogonal
    matrix times `gain`: the Q of a Gaussian matrix's QR, signs fixed by R's diagonal."""
    import numpy as np
    t = _tensor("orthogonal_", tensor)
    if t.ndim < 2:
        raise ShapeError(f"orthogonal_: only tensors with 2 or more dims are supported, got "
                         f"shape {t.shape}")
    if t.numel() == 0:
        return t
    rows = t.shape[0]
    cols = t.numel() // rows
    with no_grad():
        flat = creation.empty((rows, cols), dtype=t.dtype, device=t.device)
        a = normal_(flat, 0.0, 1.0, generator).numpy().astype(np.float64)  # lazyt's generator
        if rows < cols:
            a = a.T
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        t.copy_(creation.tensor((q * gain).reshape(t.shape).astype(t.dtype.np),
                                device=t.device))
    return t


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D `tensor` with the identity (ones on the diagonal, zeros elsewhere)."""
    t = _tensor("eye_", tensor)
    if t.ndim != 2:
        raise ShapeError(f"eye_: only 2-D tensors are supported, got shape {t.shape}")
    with no_grad():
        t.copy_(creation.eye(*t.shape, dtype=t.dtype, device=t.device))
    return t


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta: each of the first
    `out_channels / groups` channels of a group passes its input channel through."""
    import numpy as np
    t = _tensor("dirac_", tensor)
    if t.ndim not in (3, 4, 5):
        raise ShapeError(f"dirac_: only 3, 4 and 5-D tensors are supported, got shape "
                         f"{t.shape}")
    if groups < 1 or t.shape[0] % groups:
        raise InvalidArgumentError(f"dirac_: dim 0 ({t.shape[0]}) must be divisible by "
                                   f"groups ({groups})")
    out_per = t.shape[0] // groups
    w = np.zeros(t.shape, dtype=t.dtype.np)
    center = tuple(s // 2 for s in t.shape[2:])
    for g in range(groups):
        for d in range(min(out_per, t.shape[1])):
            w[(g * out_per + d, d) + center] = 1
    with no_grad():
        t.copy_(creation.tensor(w, device=t.device))
    return t


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D `tensor` with N(0, std^2) values, then zero `ceil(sparsity * rows)` random
    entries of each column."""
    t = _tensor("sparse_", tensor)
    if t.ndim != 2:
        raise ShapeError(f"sparse_: only 2-D tensors are supported, got shape {t.shape}")
    if not 0.0 <= sparsity <= 1.0:
        raise InvalidArgumentError(f"sparse_: sparsity must be in [0, 1], got {sparsity!r}")
    rows = t.shape[0]
    zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        normal_(t, 0.0, std, generator)
        if zeros:
            rank = creation.rand(t.shape, device=t.device).argsort(0).argsort(0)
            t.copy_(t.masked_fill(rank < zeros, 0.0))
    return t


def _deprecated(name: str):
    import warnings
    target = globals()[name + "_"]

    def old(*args, **kwargs):
        warnings.warn(f"nn.init.{name} is now deprecated in favor of nn.init.{name}_.",
                      FutureWarning, stacklevel=2)
        return target(*args, **kwargs)

    old.__name__ = old.__qualname__ = name
    old.__doc__ = f"torch's deprecated name of `{name}_` (with its FutureWarning)."
    return old


for _name in ("uniform", "normal", "constant", "xavier_uniform", "xavier_normal",
              "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse", "eye", "dirac"):
    globals()[_name] = _deprecated(_name)
del _name
