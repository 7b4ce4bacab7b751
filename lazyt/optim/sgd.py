"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (torch's
update rule)."""
from __future__ import annotations

from typing import Iterable

from ..tensor import Tensor
from .optimizer import Optimizer, OptimizerError, torch_flags


class SGD(Optimizer):
    """SGD as torch.optim.SGD; with momentum its state is `momentum_buffer`."""

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("foreach", "differentiable", "fused"))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise OptimizerError("SGD: nesterov needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, **f))

    state_keys = ("momentum_buffer",)

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        mu = group["momentum"]
        if mu:
            buf = state.get("momentum_buffer")
            buf = g if buf is None else buf * mu + g * (1 - group["dampening"])
            state["momentum_buffer"] = buf
            g = g + mu * buf if group["nesterov"] else buf
        return p - group["lr"] * g
