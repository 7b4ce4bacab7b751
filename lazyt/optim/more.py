"""Rprop, ASGD and Adafactor, with torch's update rules, defaults, validation and state names.

As in `adaptive.py`, the step count is a Python number, or under `lazyt.compile` a device
scalar that a replay advances; what torch reads back on the host each step (ASGD's `eta` and
`mu`, Adafactor's norms) is kept on the device or computed from the step count instead."""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from .. import capture_state as _capture
from ..creation import full as _full
from ..creation import full_like as _full_like
from ..creation import zeros_like as _zeros_like
from ..dtype import finfo as _finfo
from ..dtype import float32
from ..functional import where
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .adaptive import _grad, _next_step, _scalar
from .optimizer import Optimizer, OptimizerError, torch_flags


def _f32(x: float) -> float:
    """`x` rounded to float32, as torch keeps ASGD's `eta` and `mu` (0-d float32 tensors)."""
    return float(np.float32(x))


class _Validated(Optimizer):
    """An optimizer whose hyper-parameters are checked by `_validate(group)`: on the defaults
    (before any group takes them, as torch checks its arguments) and on every group added or
    loaded later."""

    def _validate(self, group: dict) -> None:
        raise NotImplementedError

    def _check(self, group: dict) -> None:
        self._validate(group)
        super()._check(group)


class Rprop(_Validated):
    """Resilient backpropagation: each entry's step size grows by `etas[1]` while its gradient
    keeps its sign and shrinks by `etas[0]` when it flips (that step then skips the entry),
    clamped to `step_sizes`; `p -= sign(g) * step_size`, as torch.optim.Rprop."""

    def __init__(self, params: Iterable, lr: float = 1e-2, etas: tuple = (0.5, 1.2),
                 step_sizes: tuple = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        f = torch_flags("Rprop", dict(capturable=capturable, foreach=foreach,
                                      differentiable=differentiable),
                        ("foreach", "differentiable", "capturable"))
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                        foreach=f["foreach"], maximize=maximize,
                        differentiable=f["differentiable"], capturable=f["capturable"])
        self._validate(defaults)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        if not group["lr"] >= 0.0:
            raise OptimizerError(f"Rprop: learning rate must be >= 0, got {group['lr']!r}")
        etas = tuple(group["etas"])
        if len(etas) != 2 or not 0.0 < etas[0] < 1.0 < etas[1]:
            raise OptimizerError(f"Rprop: etas must be (etaminus, etaplus) with "
                                 f"0 < etaminus < 1 < etaplus, got {group['etas']!r}")
        sizes = tuple(group["step_sizes"])
        if len(sizes) != 2 or not sizes[0] <= sizes[1]:
            raise OptimizerError(f"Rprop: step_sizes must be (min, max) with min <= max, got "
                                 f"{group['step_sizes']!r}")

    state_keys = ("step", "prev", "step_size")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        if group["maximize"]:
            g = -g
        (eta_minus, eta_plus), (lo, hi) = group["etas"], group["step_sizes"]
        _next_step(state, p)
        prev = state.get("prev")
        size = state.get("step_size")
        if prev is None:
            prev = _zeros_like(p)
        if size is None:
            size = _full_like(p, group["lr"])
        sign = (g * prev).sign()
        # etaplus where the sign held, etaminus where it flipped, 1 at a zero (NaN stays NaN);
        # `sign + 1` keeps the factor in p's dtype
        factor = where(sign > 0, eta_plus, where(sign < 0, eta_minus, sign + 1))
        size = (size * factor).clamp(lo, hi)
        g = where(sign < 0, 0.0, g)   # the sign flipped: no step now, and no flip next time
        state["prev"], state["step_size"] = g, size
        return p - g.sign() * size


class ASGD(_Validated):
    """Averaged SGD: `p = p (1 - lambd eta) - eta g` with `eta = lr / (1 + lambd lr t)^alpha`,
    and the running average `ax` of the iterates from step `t0` on (`mu = 1 / max(1, t - t0)`),
    as torch.optim.ASGD; its state is `step`, `eta`, `mu` and `ax`."""

    scalar_state = ("step", "eta", "mu")

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        f = torch_flags("ASGD", dict(foreach=foreach, differentiable=differentiable,
                                     capturable=capturable),
                        ("foreach", "differentiable", "capturable"))
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=f["foreach"], maximize=maximize,
                        differentiable=f["differentiable"], capturable=f["capturable"])
        self._validate(defaults)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        if not group["lr"] >= 0.0:
            raise OptimizerError(f"ASGD: learning rate must be >= 0, got {group['lr']!r}")
        if not group["weight_decay"] >= 0.0:
            raise OptimizerError(f"ASGD: weight_decay must be >= 0, got "
                                 f"{group['weight_decay']!r}")

    state_keys = ("step", "eta", "mu", "ax")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        g = _grad(p, g, group)
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        eta = state.get("eta", _f32(lr))
        mu = state.get("mu", 1.0)
        ax = state.get("ax")
        if _capture.active():   # a replay reads them from the state, so on the device
            eta, mu = (v if isinstance(v, Tensor) else
                       _full((), float(v), dtype=float32, device=p.device) for v in (eta, mu))
        t = _next_step(state, p)
        e = _scalar(eta, p)
        p = p * (1 - lambd * e) - e * g
        if isinstance(mu, Tensor) or mu != 1:
            ax = _zeros_like(p) if ax is None else ax
            ax = ax + (p - ax) * _scalar(mu, p)
        else:
            ax = p          # no averaging yet: the average is the iterate
        if isinstance(t, Tensor):
            state["eta"] = lr / (1 + lambd * lr * t) ** alpha
            state["mu"] = 1 / (t - t0).clamp_min(1.0)
        else:
            state["eta"] = _f32(lr / ((1 + lambd * lr * t) ** alpha))
            state["mu"] = _f32(1 / max(1, t - t0))
        state["ax"] = ax
        return p


class Adafactor(_Validated):
    """Adafactor as torch.optim.Adafactor: the second moment of a >= 2-D parameter is kept as
    row and column means over its last two dims (`row_var`, `col_var`), of a vector as
    `variance`; the step is relative to the parameter's RMS, `rho_t = min(lr, 1/sqrt(t))`,
    `beta2_t = 1 - t^beta2_decay`, and the update's RMS is clipped to `d`."""

    def __init__(self, params: Iterable, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False):
        f = torch_flags("Adafactor", dict(foreach=foreach), ("foreach",))
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                        weight_decay=weight_decay, foreach=f["foreach"], maximize=maximize)
        self._validate(defaults)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        def bad(what, value, want):
            raise OptimizerError(f"Adafactor: {what} must be {want}, got {value!r}")
        if not group["lr"] >= 0.0:
            bad("learning rate", group["lr"], ">= 0")
        if not group["beta2_decay"] <= 0.0:
            bad("beta2_decay", group["beta2_decay"], "<= 0")
        eps = tuple(group["eps"])
        if len(eps) != 2:
            bad("eps", group["eps"], "a pair (eps1 or None, eps2)")
        if eps[0] is not None and not eps[0] >= 0.0:
            bad("eps[0] (epsilon1)", eps[0], ">= 0 or None")
        if not eps[1] >= 0.0:
            bad("eps[1] (epsilon2)", eps[1], ">= 0")
        if not group["d"] >= 1.0:
            bad("the clipping threshold d", group["d"], ">= 1")
        if not group["weight_decay"] >= 0.0:
            bad("weight_decay", group["weight_decay"], ">= 0")

    state_keys = ("step", "row_var", "col_var", "variance")

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        if group["maximize"]:
            g = -g
        lr, wd, d = group["lr"], group["weight_decay"], group["d"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = _finfo(p.dtype).eps
        t = _next_step(state, p)
        if isinstance(t, Tensor):
            w = _scalar(t ** group["beta2_decay"], p)       # 1 - beta2_t
            rho = _scalar(t.rsqrt().clamp_max(lr), p)
        else:
            w = t ** group["beta2_decay"]
            rho = min(lr, 1 / (t ** 0.5))
        root_n = math.sqrt(max(p.numel(), 1))
        alpha = (p.norm() / root_n).clamp_min(eps2) * rho    # from p before the decay
        if wd:
            p = p * (1 - lr * wd)
        if g.ndim > 1:
            row = _lerp(state.get("row_var"), (g * g).mean(dim=-1, keepdim=True), w)
            col = _lerp(state.get("col_var"), (g * g).mean(dim=-2, keepdim=True), w)
            state["row_var"], state["col_var"] = row, col
            var = row * col / row.mean(dim=-2, keepdim=True).clamp_min(eps1)
        else:
            var = state["variance"] = _lerp(state.get("variance"), g * g, w)
        u = var.clamp_min(eps1 * eps1).rsqrt() * g
        denom = (u.norm() / (root_n * d)).clamp_min(1.0)
        return p - u * (alpha / denom)

    def _load_value(self, call: str, index, key: str, value, p: Parameter):
        """`row_var` / `col_var` have p's shape with the last / second-to-last dim 1."""
        if key in ("row_var", "col_var") and isinstance(value, Tensor):
            want = list(p.shape)
            if len(want) < 2:
                raise OptimizerError(f"{call}: state {key!r} of parameter {index}, which has "
                                     f"shape {p.shape}: only parameters of 2 or more dims "
                                     f"have it")
            want[-1 if key == "row_var" else -2] = 1
            if tuple(value.shape) != tuple(want):
                raise OptimizerError(f"{call}: state {key!r} of parameter {index} has shape "
                                     f"{value.shape}, expected {tuple(want)} for a parameter "
                                     f"of shape {p.shape}")
            return value.detach().to(p.device).to(p.dtype)
        return super()._load_value(call, index, key, value, p)


def _lerp(start: Tensor | None, end: Tensor, w) -> Tensor:
    """torch's `start.lerp_(end, w)`, with a missing `start` as zeros."""
    return end * w if start is None else start.lerp(end, w)
