"""`LambdaLR`: `lr = base_lr * lr_lambda(epoch)`, one function for all groups or one each."""
from __future__ import annotations

import types
from typing import Callable

from ..optimizer import Optimizer, OptimizerError
from .base import LRScheduler, per_group


class LambdaLR(LRScheduler):
    """`lr = base_lr * lr_lambda(epoch)`; `lr_lambda` is a callable or a list, one per group.
    `state_dict()` saves the `__dict__` of callable objects, not plain functions (as torch)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        self.lr_lambdas = per_group("LambdaLR", "lr_lambda", optimizer, lr_lambda)
        bad = [type(f).__name__ for f in self.lr_lambdas if not callable(f)]
        if bad:
            raise OptimizerError(f"LambdaLR: lr_lambda must be callable (epoch -> factor), got "
                                 f"{', '.join(bad)}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [b * f(self.last_epoch) for b, f in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self) -> dict:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(f.__dict__)
                            for f in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state_dict)
        for f, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                f.__dict__.update(attrs)
