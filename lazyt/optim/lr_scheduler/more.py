"""More of torch's schedulers: `ConstantLR`, `PolynomialLR`, `MultiplicativeLR`,
`CosineAnnealingWarmRestarts`, `ReduceLROnPlateau` and `ChainedScheduler`, each with torch's
chainable rule (from the current rate) and closed form where torch has one."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from ...tensor import Tensor
from ..optimizer import Optimizer, OptimizerError
from .base import LRScheduler, check_positive_int, per_group


class ConstantLR(LRScheduler):
    """`lr = base_lr * factor` until `total_iters`, then `base_lr`."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0.0 <= factor <= 1.0:
            raise OptimizerError(f"ConstantLR: factor must be in [0, 1], got {factor!r}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _closed_form_lr(self) -> list[float]:
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """`lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power`."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        check_positive_int("PolynomialLR", "total_iters", total_iters)
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, n = self.last_epoch, self.total_iters
        if self._is_initial or e == 0 or e > n:
            return self._lrs()
        decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * decay for lr in self._lrs()]

    def _closed_form_lr(self) -> list[float]:
        e, n = self.last_epoch, self.total_iters
        return [b * (1.0 - min(n, e) / n) ** self.power for b in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """`lr = lr * lr_lambda(epoch)` each step after the first (one function, or one per
    group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        self.lr_lambdas = per_group("MultiplicativeLR", "lr_lambda", optimizer, lr_lambda)
        if not all(callable(f) for f in self.lr_lambdas):
            raise OptimizerError("MultiplicativeLR: lr_lambda must be callable (epoch -> "
                                 "factor)")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch <= 0:
            return self._lrs()
        return [lr * f(self.last_epoch) for lr, f in zip(self._lrs(), self.lr_lambdas)]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from `base_lr` to `eta_min` over `T_i` epochs, restarting at
    `base_lr`; `T_i` starts at `T_0` and is multiplied by `T_mult` at each restart.
    `step(epoch)` may jump to a (fractional) epoch, as torch's."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        check_positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        check_positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise OptimizerError(f"CosineAnnealingWarmRestarts: epoch must be >= 0, got "
                                     f"{epoch!r}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self._step_count += 1
        self.last_epoch = math.floor(epoch)
        self._write(self.get_lr())


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rates by `factor` when `step(metric)` has not improved for more than
    `patience` epochs (improving: below the best by `threshold`, relative or absolute, for
    `mode="min"`; above it for "max"), then wait `cooldown` epochs; never below `min_lr`
    (one value or one per group), and not when the change would be under `eps`. A tensor
    metric is read (`float(metric)`)."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list = 0.0, eps: float = 1e-8):
        name = "ReduceLROnPlateau"
        if not isinstance(optimizer, Optimizer):
            raise OptimizerError(f"{name}: expected a lazyt.optim.Optimizer, got "
                                 f"{type(optimizer).__name__}")
        if factor >= 1.0:
            raise OptimizerError(f"{name}: factor must be < 1, got {factor!r}")
        if mode not in ("min", "max"):
            raise OptimizerError(f"{name}: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise OptimizerError(f"{name}: threshold_mode must be 'rel' or 'abs', got "
                                 f"{threshold_mode!r}")
        self.optimizer = optimizer
        self.min_lrs = per_group(name, "min_lr", optimizer, min_lr)
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.cooldown_counter = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.last_epoch = 0
        self._step_count = 0
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self._last_lr = self._lrs()

    def _better(self, a: float) -> bool:
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metrics, epoch: int | None = None) -> None:  # noqa: D417 - torch's
        current = float(metrics.item() if isinstance(metrics, Tensor) else metrics)
        self._step_count += 1
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch  # (deprecated arg)
        if self._better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(group["lr"] * self.factor, floor)
                if group["lr"] - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._lrs()


class ChainedScheduler(LRScheduler):
    """Steps every scheduler at once (their effects compose, for chainable schedules)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None):
        schedulers = list(schedulers)
        if not schedulers:
            raise OptimizerError("ChainedScheduler: expected at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler) or s.optimizer is not optimizer:
                raise OptimizerError(f"ChainedScheduler: schedulers[{i}] is not an "
                                     "LRScheduler of the same optimizer")
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._last_lr = self._lrs()

    def step(self) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()

    def state_dict(self) -> dict:
        return {"_schedulers": [s.state_dict() for s in self._schedulers],
                "_last_lr": list(self._last_lr)}

    def load_state_dict(self, state_dict: dict) -> None:
        for s, sd in zip(self._schedulers, state_dict["_schedulers"]):
            s.load_state_dict(sd)
        self._last_lr = list(state_dict["_last_lr"])
