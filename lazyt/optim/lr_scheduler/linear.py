"""`LinearLR`: the rate's factor moves linearly from `start_factor` to `end_factor` (warm-up)."""
from __future__ import annotations

from ..optimizer import Optimizer, OptimizerError
from .base import LRScheduler, check_positive_int


class LinearLR(LRScheduler):
    """`lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)`."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1:
            raise OptimizerError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise OptimizerError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        check_positive_int("LinearLR", "total_iters", total_iters)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, s, d = self.last_epoch, self.start_factor, self.end_factor - self.start_factor
        if e == 0:
            return [lr * s for lr in self._lrs()]
        if self._is_initial or e > self.total_iters:
            return self._lrs()
        factor = 1.0 + d / (self.total_iters * s + (e - 1) * d)
        return [lr * factor for lr in self._lrs()]

    def _closed_form_lr(self) -> list[float]:
        e = min(self.total_iters, self.last_epoch)
        d = self.end_factor - self.start_factor
        return [b * (self.start_factor + d * e / self.total_iters) for b in self.base_lrs]
