"""`OneCycleLR`: the 1cycle policy (Smith & Topin), stepped once per batch.

The rate rises from `max_lr / div_factor` to `max_lr` over the first `pct_start` of the steps,
then anneals to `initial_lr / final_div_factor` (with `three_phase`, it first comes back down to
the initial rate, symmetrically, and anneals to the minimum in a third phase). With
`cycle_momentum` the momentum (SGD) or beta1 (Adam) moves the opposite way."""
from __future__ import annotations

import math

from ..optimizer import Optimizer, OptimizerError
from .base import CyclesMomentum, LRScheduler, check_positive_int, per_group


def _anneal_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


_ANNEAL = {"cos": _anneal_cos, "linear": _anneal_linear}


class OneCycleLR(CyclesMomentum, LRScheduler):
    """torch's OneCycleLR: `total_steps` (or `epochs * steps_per_epoch`) steps; each group
    records `initial_lr`, `max_lr`, `min_lr` (and `max_momentum`, `base_momentum`)."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum: float | list = 0.85,
                 max_momentum: float | list = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        name = "OneCycleLR"
        if total_steps is not None:
            check_positive_int(name, "total_steps", total_steps)
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            check_positive_int(name, "epochs", epochs)
            check_positive_int(name, "steps_per_epoch", steps_per_epoch)
            self.total_steps = epochs * steps_per_epoch
        else:
            raise OptimizerError(f"{name}: give total_steps, or epochs and steps_per_epoch")
        if isinstance(pct_start, bool) or not isinstance(pct_start, (int, float)) \
                or not 0 <= pct_start <= 1:
            raise OptimizerError(f"{name}: pct_start must be a number in [0, 1], got "
                                 f"{pct_start!r}")
        if anneal_strategy not in _ANNEAL:
            raise OptimizerError(f"{name}: anneal_strategy must be 'cos' or 'linear', got "
                                 f"{anneal_strategy!r}")
        if div_factor <= 0 or final_div_factor <= 0:
            raise OptimizerError(f"{name}: div_factor and final_div_factor must be > 0, got "
                                 f"{div_factor} and {final_div_factor}")
        self.anneal_strategy = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        # (end step, start and end of the rate, start and end of the momentum), by group key
        if three_phase:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * up, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                            (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups,
                                  per_group(name, "max_lr", optimizer, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._start_momentum(name, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def step(self) -> None:
        """Advance one batch; raises `OptimizerError` past `total_steps`."""
        if self.last_epoch + 1 > self.total_steps:
            raise OptimizerError(f"OneCycleLR.step: stepped {self.last_epoch + 1} times, but "
                                 f"total_steps is {self.total_steps}")
        super().step()

    def get_lr(self) -> list[float]:
        anneal = _ANNEAL[self.anneal_strategy]
        t = self.last_epoch
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if t <= end or i == len(self._phases) - 1:
                    pct = (t - start) / (end - start) if end != start else 1.0
                    lrs.append(anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs
