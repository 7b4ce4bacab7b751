"""`lazyt.optim`: optimizers that update `lazyt.nn` parameters from `Gradients` (Burn's flow)
or from each parameter's accumulated `.grad` (torch's), learning-rate schedulers
(`lazyt.optim.lr_scheduler`), LBFGS's closure-driven steps, and optimizer state saving (`save_state` / `load_state`)."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .adaptive import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop
from .lbfgs import LBFGS
from .more import ASGD, Adafactor, Rprop
from .optimizer import Optimizer, OptimizerError
from .serialization import load_state, save_state
from .sgd import SGD

__all__ = ["Optimizer", "OptimizerError", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor", "LBFGS",
           "lr_scheduler", "save_state", "load_state"]
