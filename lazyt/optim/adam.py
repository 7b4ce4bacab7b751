"""Adam and AdamW (decoupled weight decay), with optional AMSGrad; torch's update rules."""
from __future__ import annotations

import math
from typing import Iterable

from .. import capture_state as _capture
from ..creation import full as _full
from ..dtype import float32
from ..tensor import Tensor
from .optimizer import Optimizer, OptimizerError, torch_flags


class Adam(Optimizer):
    """Adam; `weight_decay` adds `wd * p` to the gradient (L2), as torch.optim.Adam, or with
    `decoupled_weight_decay=True` decays the parameter (AdamW)."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False,
                 maximize: bool = False, decoupled_weight_decay: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags,
                        ("foreach", "capturable", "differentiable", "fused"))
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise OptimizerError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        if eps < 0:
            raise OptimizerError(f"{type(self).__name__}: eps must be >= 0, got {eps}")
        super().__init__(params, dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, **f,
                                      decoupled_weight_decay=decoupled_weight_decay))

    state_keys = ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if wd:
            if group["decoupled_weight_decay"]:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        t = state.get("step", 0)
        if not isinstance(t, Tensor) and _capture.active():
            # under lazyt.compile the step count lives on the device (a replay advances it)
            t = _full((), float(t), dtype=float32, device=p.device)
        t = t + 1
        state["step"] = t
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = g * (1 - b1) if m is None else m * b1 + g * (1 - b1)
        v = g * g * (1 - b2) if v is None else v * b2 + g * g * (1 - b2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            v = v if vmax is None else vmax.maximum(v)
            state["max_exp_avg_sq"] = v
        if isinstance(t, Tensor):   # the step count on the device: corrections there too
            bc1 = 1 - (t * math.log(b1)).exp() if b1 > 0 else _full((), 1.0, device=p.device)
            bc2 = 1 - (t * math.log(b2)).exp() if b2 > 0 else _full((), 1.0, device=p.device)
            denom = v.sqrt() / bc2.sqrt().to(v.dtype) + eps
            return p - (m / denom) * (lr / bc1).to(p.dtype)
        bc1 = 1 - b1 ** t
        bc2 = 1 - b2 ** t
        denom = v.sqrt() * (1 / math.sqrt(bc2)) + eps
        return p - (lr / bc1) * (m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay: `p <- p * (1 - lr * wd)` before the Adam step."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False,
                 maximize: bool = False, **flags):
        torch_flags(type(self).__name__, flags, ("foreach", "capturable", "differentiable",
                                                 "fused"))
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=True,
                         **flags)
