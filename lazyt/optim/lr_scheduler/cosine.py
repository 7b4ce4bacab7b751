"""`CosineAnnealingLR`: half a cosine from `base_lr` down to `eta_min` over `T_max` epochs."""
from __future__ import annotations

import math

from ..optimizer import Optimizer
from .base import LRScheduler, check_positive_int


class CosineAnnealingLR(LRScheduler):
    """`lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`; past `T_max`
    the cosine continues (rises again), as torch's."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        check_positive_int("CosineAnnealingLR", "T_max", T_max)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._lrs()
        if (e - 1 - t) % (2 * t) == 0:  # leaving the minimum, where the ratio below is 0/0
            return [lr + (b - lo) * (1 - math.cos(math.pi / t)) / 2
                    for b, lr in zip(self.base_lrs, self._lrs())]
        ratio = (1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
        return [ratio * (lr - lo) + lo for lr in self._lrs()]

    def _closed_form_lr(self) -> list[float]:
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * e / t)) / 2 for b in self.base_lrs]
