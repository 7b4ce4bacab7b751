"""More of torch's optimizers, with torch's update rules, defaults and state names: RMSprop,
Adagrad, Adadelta, Adamax, NAdam and RAdam.

Rules that depend on the step count (bias corrections) read it as a Python number, or, under
`lazyt.compile`, as a device scalar that a replay advances (as `Adam` does), so a compiled
training step gives the same parameters as the plain loop."""
from __future__ import annotations

import math
from typing import Iterable

from .. import capture_state as _capture
from ..creation import full as _full
from ..dtype import float32
from ..functional import where
from ..tensor import Tensor
from .optimizer import Optimizer, OptimizerError, torch_flags


def _next_step(state: dict, p: Tensor):
    """The step count after this step (a Python int, or a device scalar under capture)."""
    t = state.get("step", 0)
    if not isinstance(t, Tensor) and _capture.active():
        t = _full((), float(t), dtype=float32, device=p.device)
    t = t + 1
    state["step"] = t
    return t


def _pow(base: float, t):
    """`base ** t` for a Python or a device step count."""
    if not isinstance(t, Tensor):
        return base ** t
    if base <= 0:
        return where(t == 0, 1.0, 0.0) if base == 0 else (t * 0 + base) ** t
    return (t * math.log(base)).exp()


def _scalar(x, like: Tensor):
    """A Python number, or a device scalar in `like`'s dtype."""
    return x.to(like.dtype) if isinstance(x, Tensor) else x


def _check(name: str, **values) -> None:
    for what, (v, lo, closed) in values.items():
        if not (v >= lo if closed else v > lo):
            raise OptimizerError(f"{name}: {what} must be {'>=' if closed else '>'} {lo}, got "
                                 f"{v!r}")


def _grad(p: Tensor, g: Tensor, group: dict) -> Tensor:
    """The gradient with `maximize` and L2 `weight_decay` applied (torch's coupled form)."""
    if group.get("maximize"):
        g = -g
    if group["weight_decay"] and not group.get("decoupled_weight_decay"):
        g = g + group["weight_decay"] * p
    return g


class RMSprop(Optimizer):
    """`v = alpha v + (1 - alpha) g^2`; `p -= lr g / (sqrt(v) + eps)`, with `centered` (the
    variance: v minus the squared mean gradient) and `momentum` as torch.optim.RMSprop."""

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("capturable", "foreach", "differentiable"))
        _check("RMSprop", lr=(lr, 0.0, True), eps=(eps, 0.0, True), alpha=(alpha, 0.0, True),
               momentum=(momentum, 0.0, True), weight_decay=(weight_decay, 0.0, True))
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=f["capturable"], foreach=f["foreach"],
                                      maximize=maximize, differentiable=f["differentiable"]))

    state_keys = ("step", "square_avg", "momentum_buffer", "grad_avg")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        g = _grad(p, g, group)
        a, eps = group["alpha"], group["eps"]
        _next_step(state, p)
        v = state.get("square_avg")
        v = g * g * (1 - a) if v is None else v * a + g * g * (1 - a)
        state["square_avg"] = v
        if group["centered"]:
            m = state.get("grad_avg")
            m = g * (1 - a) if m is None else m * a + g * (1 - a)
            state["grad_avg"] = m
            avg = (v - m * m).sqrt() + eps
        else:
            avg = v.sqrt() + eps
        if group["momentum"] > 0:
            buf = state.get("momentum_buffer")
            buf = g / avg if buf is None else buf * group["momentum"] + g / avg
            state["momentum_buffer"] = buf
            return p - group["lr"] * buf
        return p - group["lr"] * (g / avg)


class Adagrad(Optimizer):
    """`s += g^2`; `p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)`, the sum starting
    at `initial_accumulator_value`, as torch.optim.Adagrad."""

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("foreach", "differentiable", "fused"))
        _check("Adagrad", lr=(lr, 0.0, True), lr_decay=(lr_decay, 0.0, True),
               weight_decay=(weight_decay, 0.0, True), eps=(eps, 0.0, True),
               initial_accumulator_value=(initial_accumulator_value, 0.0, True))
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=f["foreach"], maximize=maximize,
                                      differentiable=f["differentiable"], fused=f["fused"]))

    state_keys = ("step", "sum")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        g = _grad(p, g, group)
        t = _next_step(state, p)
        s = state.get("sum")
        s = g * g + group["initial_accumulator_value"] if s is None else s + g * g
        state["sum"] = s
        clr = group["lr"] / ((t - 1) * group["lr_decay"] + 1)
        return p - _scalar(clr, p) * (g / (s.sqrt() + group["eps"]))


class Adadelta(Optimizer):
    """`v = rho v + (1 - rho) g^2`; `d = sqrt(u + eps) / sqrt(v + eps) * g`;
    `u = rho u + (1 - rho) d^2`; `p -= lr d`, as torch.optim.Adadelta."""

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("capturable", "foreach", "differentiable"))
        _check("Adadelta", lr=(lr, 0.0, True), eps=(eps, 0.0, True),
               weight_decay=(weight_decay, 0.0, True))
        if not 0.0 <= rho <= 1.0:
            raise OptimizerError(f"Adadelta: rho must be in [0, 1], got {rho!r}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **f))

    state_keys = ("step", "square_avg", "acc_delta")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        g = _grad(p, g, group)
        rho, eps = group["rho"], group["eps"]
        _next_step(state, p)
        v = state.get("square_avg")
        v = g * g * (1 - rho) if v is None else v * rho + g * g * (1 - rho)
        u = state.get("acc_delta")  # starts at zero
        num = math.sqrt(eps) if u is None else (u + eps).sqrt()
        delta = num / (v + eps).sqrt() * g
        u = delta * delta * (1 - rho) if u is None else u * rho + delta * delta * (1 - rho)
        state["square_avg"], state["acc_delta"] = v, u
        return p - group["lr"] * delta


class _AdamFamily(Optimizer):
    def __init__(self, name: str, params: Iterable, defaults: dict):
        b1, b2 = defaults["betas"]
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise OptimizerError(f"{name}: betas must be in [0, 1), got {defaults['betas']}")
        _check(name, lr=(defaults["lr"], 0.0, True), eps=(defaults["eps"], 0.0, True),
               weight_decay=(defaults["weight_decay"], 0.0, True))
        super().__init__(params, defaults)

    def _moments(self, g: Tensor, state: dict, b1: float, b2: float) -> tuple:
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = g * (1 - b1) if m is None else m * b1 + g * (1 - b1)
        v = g * g * (1 - b2) if v is None else v * b2 + g * g * (1 - b2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        return m, v


class Adamax(_AdamFamily):
    """Adam with the infinity norm: `u = max(b2 u, |g| + eps)`;
    `p -= lr / (1 - b1^t) * m / u`, as torch.optim.Adamax."""

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("foreach", "differentiable", "capturable"))
        super().__init__("Adamax", params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                                weight_decay=weight_decay,
                                                foreach=f["foreach"], maximize=maximize,
                                                differentiable=f["differentiable"],
                                                capturable=f["capturable"]))

    state_keys = ("step", "exp_avg", "exp_inf")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        g = _grad(p, g, group)
        (b1, b2), eps = group["betas"], group["eps"]
        t = _next_step(state, p)
        m = state.get("exp_avg")
        m = g * (1 - b1) if m is None else m * b1 + g * (1 - b1)
        u = state.get("exp_inf")
        a = g.abs() + eps
        u = a if u is None else (u * b2).maximum(a)
        state["exp_avg"], state["exp_inf"] = m, u
        clr = group["lr"] / (1 - _pow(b1, t))
        return p - _scalar(clr, p) * (m / u)


class NAdam(_AdamFamily):
    """Adam with Nesterov momentum and torch's momentum schedule
    `mu_t = b1 (1 - 0.96^(t psi) / 2)` (`psi = momentum_decay`), as torch.optim.NAdam;
    `decoupled_weight_decay` decays the parameter instead of the gradient."""

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("foreach", "capturable", "differentiable"))
        _check("NAdam", momentum_decay=(momentum_decay, 0.0, True))
        super().__init__("NAdam", params, dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize, **f))

    state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        lr, (b1, b2), eps, psi = group["lr"], group["betas"], group["eps"], \
            group["momentum_decay"]
        if group["decoupled_weight_decay"] and group["weight_decay"]:
            p = p * (1 - lr * group["weight_decay"])
        g = _grad(p, g, group)
        t = _next_step(state, p)
        mu = b1 * (1 - 0.5 * _pow(0.96, t * psi))
        mu_next = b1 * (1 - 0.5 * _pow(0.96, (t + 1) * psi))
        prod = state.get("mu_product", 1.0) * mu
        state["mu_product"] = prod
        m, v = self._moments(g, state, b1, b2)
        denom = (v / _scalar(1 - _pow(b2, t), v)).sqrt() + eps
        p = p - _scalar(lr * (1 - mu) / (1 - prod), p) * (g / denom)
        return p - _scalar(lr * mu_next / (1 - prod * mu_next), p) * (m / denom)


class RAdam(_AdamFamily):
    """Rectified Adam: the adaptive step only once the variance of the adaptive rate is
    tractable (`rho_t > 5`), plain momentum SGD before, as torch.optim.RAdam;
    `decoupled_weight_decay` decays the parameter instead of the gradient."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, maximize: bool = False, **flags):
        f = torch_flags(type(self).__name__, flags, ("foreach", "capturable", "differentiable"))
        super().__init__("RAdam", params, dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
            foreach=f["foreach"], capturable=f["capturable"],
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=f["differentiable"]))

    state_keys = ("step", "exp_avg", "exp_avg_sq")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        if group["decoupled_weight_decay"] and group["weight_decay"]:
            p = p * (1 - lr * group["weight_decay"])
        g = _grad(p, g, group)
        t = _next_step(state, p)
        m, v = self._moments(g, state, b1, b2)
        bc1 = 1 - _pow(b1, t)
        bc2 = 1 - _pow(b2, t)
        m_hat = m / _scalar(bc1, m)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * _pow(b2, t) / bc2
        if not isinstance(rho_t, Tensor):
            if rho_t <= 5.0:
                return p - lr * m_hat
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                             ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            return p - (lr * rect * math.sqrt(bc2)) * (m_hat / (v.sqrt() + eps))
        ok = rho_t > 5.0  # on the device: both forms, the one that applies kept
        safe = where(ok, rho_t, 6.0)
        rect = ((safe - 4) * (safe - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * safe)).sqrt()
        adaptive = m_hat / (v.sqrt() + eps) * _scalar(rect * bc2.sqrt(), v)
        return p - lr * where(ok, adaptive, m_hat)
