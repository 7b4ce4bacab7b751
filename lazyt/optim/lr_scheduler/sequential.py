"""`SequentialLR`: run schedulers one after another, switching at milestone epochs."""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from ..optimizer import Optimizer, OptimizerError
from .base import LRScheduler


class SequentialLR(LRScheduler):
    """`schedulers[i]` runs from `milestones[i-1]` on, restarted at its epoch 0 there (its
    closed form from its `base_lrs`), as torch's SequentialLR."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1):
        name = "SequentialLR"
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers:
            raise OptimizerError(f"{name}: expected at least one scheduler")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise OptimizerError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not "
                                     "an LRScheduler")
            if s.optimizer is not optimizer:
                raise OptimizerError(f"{name}: schedulers[{i}] is bound to another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise OptimizerError(f"{name}: expected {len(schedulers) - 1} milestones for "
                                 f"{len(schedulers)} schedulers, got {len(milestones)}")
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        for group in optimizer.param_groups:  # undo what building the schedulers did
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            _undo_step(s)
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self) -> None:
        """Advance one epoch with the scheduler whose span holds it."""
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s._restart_at(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()

    def state_dict(self) -> dict:
        """Its own position and each scheduler's `state_dict()`."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict()` returned, each scheduler's part included."""
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


def _undo_step(s: LRScheduler) -> None:
    """Take back the epoch a scheduler's constructor stepped (nested SequentialLRs too)."""
    if isinstance(s, SequentialLR):
        for inner in s._schedulers:
            _undo_step(inner)
    else:
        s.last_epoch -= 1
