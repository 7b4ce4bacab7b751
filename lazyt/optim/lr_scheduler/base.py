"""`LRScheduler`: the base of the learning-rate schedulers, with torch's protocol.

A scheduler writes `group["lr"]` of each parameter group of its optimizer: once when it is
built (epoch 0) and again on each `step()`. It records each group's starting rate as
`group["initial_lr"]` (kept if already there, so several schedulers can share an optimizer),
and its rates are `base_lrs`. Subclasses implement `get_lr()`, the rates for `last_epoch`,
written in torch's chainable form (from the current `group["lr"]`) where torch does, and
`_closed_form_lr()` where torch has one (used by `SequentialLR` to restart a scheduler).
During the constructor's step `_is_initial` is True: chainable schedules then keep the current
rates, so one built with `last_epoch=n` over a restored optimizer does not step ahead."""
from __future__ import annotations

from ..optimizer import Optimizer, OptimizerError


class LRScheduler:
    """Base class: `step()` advances `last_epoch` and writes the new rates into the
    optimizer's groups; `get_last_lr()` returns them; `state_dict()` / `load_state_dict()`
    save and restore everything but the optimizer."""

    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise OptimizerError(f"{name}: expected a lazyt.optim.Optimizer, got "
                                 f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            missing = [i for i, g in enumerate(optimizer.param_groups) if "initial_lr" not in g]
            if missing:
                raise OptimizerError(f"{name}: resuming at last_epoch={last_epoch} needs "
                                     f"'initial_lr' in every param group; groups {missing} have "
                                     "none (load the optimizer's state dict first)")
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Write the rates of the first epoch (torch steps once on construction)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rate of each group at `self.last_epoch` (called by `step()`)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates the last `step()` (or the constructor) wrote, one per param group."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance one epoch (or one batch, for per-batch schedules) and write the new rates."""
        self._step_count += 1
        self.last_epoch += 1
        self._write(self.get_lr())

    def _restart_at(self, epoch: int) -> None:
        """Jump to `epoch` with the closed form (what torch's `SequentialLR` does at a
        milestone)."""
        self.last_epoch = epoch
        closed = getattr(self, "_closed_form_lr", None)
        self._write(closed() if closed is not None else self.get_lr())

    def _write(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything the scheduler holds except its optimizer (plain Python values)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict()` returned (load the optimizer's state as well)."""
        self.__dict__.update(state_dict)

    def _lrs(self) -> list[float]:
        """The current rate of each group."""
        return [g["lr"] for g in self.optimizer.param_groups]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"


class CyclesMomentum:
    """For schedulers that move the momentum (SGD) or beta1 (Adam) against the rate
    (`OneCycleLR`, `CyclicLR`)."""

    use_beta1 = False

    def _start_momentum(self, name: str, optimizer: Optimizer, base_momentum, max_momentum,
                        last_epoch: int) -> tuple[list, list]:
        """Check the optimizer has a momentum; on a fresh start write `max_momentum` as each
        group's momentum and record `max_momentum` / `base_momentum` in the groups. Returns
        the per-group (base, max) values."""
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise OptimizerError(f"{name}: cycle_momentum needs an optimizer with momentum "
                                 f"or betas, got {type(optimizer).__name__}; pass "
                                 "cycle_momentum=False")
        self.use_beta1 = "betas" in optimizer.defaults
        bases = per_group(name, "base_momentum", optimizer, base_momentum)
        tops = per_group(name, "max_momentum", optimizer, max_momentum)
        if last_epoch == -1:
            for group, top, base in zip(optimizer.param_groups, tops, bases):
                self._set_momentum(group, top)
                group["max_momentum"] = top
                group["base_momentum"] = base
        return bases, tops

    def _set_momentum(self, group: dict, value: float) -> None:
        """Write `value` as the group's momentum, or as beta1 of its betas."""
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


def per_group(name: str, what: str, optimizer: Optimizer, value) -> list:
    """`value` for each param group: one value for all, or a list/tuple with one per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise OptimizerError(f"{name}: expected {n} values of {what} (one per param "
                                 f"group), got {len(value)}")
        return list(value)
    return [value] * n


def check_positive_int(name: str, what: str, value) -> None:
    """Raise `OptimizerError` unless `value` is an int > 0 (bools are not)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise OptimizerError(f"{name}: {what} must be a positive integer, got {value!r}")
