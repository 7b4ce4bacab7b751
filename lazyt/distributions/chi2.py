"""The chi-squared distribution: Gamma(df / 2, 1 / 2)."""
from __future__ import annotations

from ..tensor import Tensor
from . import constraints
from .gamma import Gamma
from .params import broadcast_all, is_number


class Chi2(Gamma):
    """Chi2(df), a Gamma with concentration df / 2 and rate 1 / 2."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (d,) = broadcast_all("Chi2", df)
        super().__init__(0.5 * float(df) if is_number(df) else 0.5 * d, 0.5,
                         validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
