"""Initial parameter values (the torch defaults, so models start from familiar scales)."""
from __future__ import annotations

import math

from .. import creation
from ..tensor import Tensor


def uniform(shape: tuple, bound: float, dtype, device) -> Tensor:
    """Samples of U(-bound, bound) drawn from lazyt's generator (`lazyt.manual_seed`)."""
    return creation.rand(shape, dtype=dtype, device=device) * (2 * bound) - bound


def fan_in_uniform(shape: tuple, fan_in: int, dtype, device) -> Tensor:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's Linear default for weight and bias."""
    return uniform(shape, 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0, dtype, device)
