"""`lazyt.optim.lr_scheduler`: learning-rate schedules with torch's names and semantics.

Each scheduler writes `group["lr"]` of its optimizer's param groups; call `scheduler.step()`
after `optimizer.step()`, once per epoch (`OneCycleLR`: once per batch)."""
from .base import LRScheduler
from .cosine import CosineAnnealingLR
from .cyclic import CyclicLR
from .lambda_lr import LambdaLR
from .linear import LinearLR
from .more import (ChainedScheduler, ConstantLR, CosineAnnealingWarmRestarts, MultiplicativeLR,
                   PolynomialLR, ReduceLROnPlateau)
from .one_cycle import OneCycleLR
from .sequential import SequentialLR
from .step import ExponentialLR, MultiStepLR, StepLR

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
           "LinearLR", "OneCycleLR", "LambdaLR", "SequentialLR", "ConstantLR", "PolynomialLR",
           "MultiplicativeLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau",
           "ChainedScheduler", "CyclicLR"]
