"""`lazyt.optim`: optimizers that update `lazyt.nn` parameters from `Gradients`."""
from .adam import Adam, AdamW
from .optimizer import Optimizer, OptimizerError
from .sgd import SGD

__all__ = ["Optimizer", "OptimizerError", "SGD", "Adam", "AdamW"]
