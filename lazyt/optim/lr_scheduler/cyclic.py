"""`CyclicLR`: the cyclical learning-rate policy (Smith), stepped once per batch.

The rate goes from `base_lr` up to `max_lr` over `step_size_up` steps and back over
`step_size_down`, the height of each cycle scaled by `mode` ("triangular": constant,
"triangular2": halved each cycle, "exp_range": `gamma ** step`) or by `scale_fn`. With
`cycle_momentum` the momentum (SGD) or beta1 (Adam) moves the opposite way, between
`max_momentum` and `base_momentum`."""
from __future__ import annotations

import math

from ..optimizer import Optimizer, OptimizerError
from .base import CyclesMomentum, LRScheduler, per_group

_MODES = {"triangular": (lambda x: 1.0, "cycle"),
          "triangular2": (lambda x: 1 / (2.0 ** (x - 1)), "cycle"),
          "exp_range": (None, "iterations")}


class CyclicLR(CyclesMomentum, LRScheduler):
    """torch's CyclicLR (the same rates and momenta step for step)."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1):
        name = "CyclicLR"
        if not isinstance(optimizer, Optimizer):
            raise OptimizerError(f"{name}: expected a lazyt.optim.Optimizer, got "
                                 f"{type(optimizer).__name__}")
        base_lrs = per_group(name, "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = per_group(name, "max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if up <= 0 or down <= 0:
            raise OptimizerError(f"{name}: step_size_up and step_size_down must be positive, "
                                 f"got {step_size_up} and {step_size_down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in _MODES:
            raise OptimizerError(f"{name}: mode must be 'triangular', 'triangular2' or "
                                 f"'exp_range' (or pass scale_fn), got {mode!r}")
        if scale_fn is not None and scale_mode not in ("cycle", "iterations"):
            raise OptimizerError(f"{name}: scale_mode must be 'cycle' or 'iterations', got "
                                 f"{scale_mode!r}")
        self.mode, self.gamma = mode, gamma
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        else:
            fn, self.scale_mode = _MODES[mode]
            self.scale_fn = fn if fn is not None else (lambda x: self.gamma ** x)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = self._start_momentum(
                name, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        factor = x / self.step_ratio if x <= self.step_ratio else \
            (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * factor * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):
                self._set_momentum(group, top - (top - base) * factor * scale)
        return lrs

    def state_dict(self) -> dict:
        """Everything but the optimizer and the scale function (as torch's)."""
        state = super().state_dict()
        state.pop("scale_fn", None)
        return state
