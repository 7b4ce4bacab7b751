"""Activation modules: thin wrappers of the Tensor methods and of `lazyt.nn.functional`, so
they can sit in a Sequential and be found (and swapped for kernels) by class name."""
from __future__ import annotations

import warnings

from ..errors import InvalidArgumentError, LazytError
from ..tensor import Tensor
from . import functional as F
from .module import Module


class GELU(Module):
    """Exact GELU, or its tanh approximation with `approximate="tanh"`."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise LazytError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return x.gelu(self.approximate)

    def extra_repr(self) -> str:
        return "" if self.approximate == "none" else f"approximate={self.approximate!r}"


class SiLU(Module):
    """`x * sigmoid(x)` (swish); `inplace=True` updates the input tensor."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, self.inplace) if self.inplace else x.silu()

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(SiLU):
    """`max(x, 0)`; `inplace=True` updates the input tensor."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, self.inplace) if self.inplace else x.relu()


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()


# ---------------------------------------------------------------------- torch's activations
class _Inplace(Module):
    """An activation whose torch constructor takes `inplace`: True makes `forward` update its
    input tensor to the result and return it (see `lazyt.inplace`)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)

    def _inplace_str(self, sep: str = ", ") -> str:
        return f"{sep}inplace=True" if self.inplace else ""


class ELU(_Inplace):
    """`x` where x > 0, else `alpha * (exp(x) - 1)`."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{self._inplace_str()}"


class CELU(ELU):
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha, self.inplace)


class SELU(_Inplace):
    """Scaled ELU with torch's constants."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x, self.inplace)

    def extra_repr(self) -> str:
        return self._inplace_str("")


class LeakyReLU(_Inplace):
    """`x` where x > 0, else `negative_slope * x`."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{self._inplace_str()}"


class Hardtanh(_Inplace):
    """`x` limited to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        if min_val > max_val:
            raise InvalidArgumentError(f"{type(self).__name__}: min_val ({min_val!r}) must not "
                                       f"be greater than max_val ({max_val!r})")
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{self._inplace_str()}"


class ReLU6(Hardtanh):
    """`min(max(0, x), 6)`."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x, self.inplace)

    def extra_repr(self) -> str:
        return self._inplace_str("")


class Hardsigmoid(_Inplace):
    """0 for x <= -3, 1 for x >= 3, else `x / 6 + 1 / 2`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x, self.inplace)


class Hardswish(_Inplace):
    """`x * hardsigmoid(x)`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x, self.inplace)


class Mish(_Inplace):
    """`x * tanh(softplus(x))`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x, self.inplace)

    def extra_repr(self) -> str:
        return self._inplace_str("")


class Softplus(Module):
    """`log(1 + exp(beta * x)) / beta`, linear where `beta * x > threshold`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """`x / (1 + |x|)`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softsign(x)


class LogSigmoid(Module):
    """`log(sigmoid(x))`, stable for large |x|."""

    def forward(self, x: Tensor) -> Tensor:
        return F.logsigmoid(x)


class Softmin(Module):
    """`softmax(-x, dim)`."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(Module):
    """`softmax(x, dim)`; without `dim`, torch's deprecated implicit choice (0 for 0-, 1- and
    3-D input, else 1) with a warning."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        dim = self.dim
        if dim is None:  # torch's deprecated implicit choice, with its warning
            dim = 0 if x.ndim in (0, 1, 3) else 1
            warnings.warn(f"{type(self).__name__}: implicit dimension choice (dim={dim} for a "
                          f"{x.ndim}-D input) is deprecated; construct it with dim=",
                          UserWarning, stacklevel=2)
        return self._apply_dim(x, dim)

    def _apply_dim(self, x: Tensor, dim: int) -> Tensor:
        return F.softmax(x, dim=dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """`log_softmax(x, dim)`."""

    def _apply_dim(self, x: Tensor, dim: int) -> Tensor:
        return F.log_softmax(x, dim=dim)


class GLU(Module):
    """`a * sigmoid(b)` for the halves of x along `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(Module):
    """`x` where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """`x - lambd` above lambd, `x + lambd` below -lambd, else 0."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softshrink(x, self.lambd)


class Tanhshrink(Module):
    """`x - tanh(x)`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanhshrink(x)


class Threshold(_Inplace):
    """`x` where x > threshold, else `value`."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + self._inplace_str()


class RReLU(_Inplace):
    """`F.rrelu`: negative inputs scaled by a random slope from U(lower, upper) per element in
    training mode, by the mean slope in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__(inplace)
        self.lower, self.upper = lower, upper

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{self._inplace_str()}"
