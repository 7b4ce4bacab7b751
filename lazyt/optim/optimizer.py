"""`Optimizer`: the base of SGD/Adam/AdamW. `opt.step(grads)` reads each parameter's gradient
from the `Gradients` that `loss.backward()` returned and rebinds the parameter to its new value
(detached), so the same Parameter objects stay in the model."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..autodiff import no_grad as _no_grad
from ..errors import LazytError
from ..nn.parameter import Parameter
from ..tensor import Tensor


class OptimizerError(LazytError, ValueError):
    """Bad optimizer arguments: no parameters, a non-Parameter, a negative learning rate."""


class Optimizer:
    """Holds parameter groups (dicts with "params" and hyper-parameters) and per-parameter
    state; subclasses implement `update(param, grad, group, state) -> new value`."""

    def __init__(self, params: Iterable, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict[int, dict] = {}
        params = list(params)
        if not params:
            raise OptimizerError(f"{type(self).__name__}: got an empty parameter list")
        if isinstance(params[0], dict):
            for g in params:
                self.add_param_group(g)
        else:
            self.add_param_group({"params": params})

    def add_param_group(self, group: dict) -> None:
        """Add parameters with their own hyper-parameters (missing ones take the defaults)."""
        params = group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        for i, p in enumerate(params):
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], Parameter):
                params[i] = p = p[1]  # accept model.named_parameters()
            if not isinstance(p, Parameter):
                raise OptimizerError(f"{type(self).__name__}: expected Parameters, got "
                                     f"{type(p).__name__} at index {i}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise OptimizerError(f"{type(self).__name__}: a parameter appears in more than "
                                 "one group")
        full = dict(self.defaults)
        full.update({k: v for k, v in group.items() if k != "params"})
        full["params"] = params
        self._check(full)
        self.param_groups.append(full)

    def _check(self, group: dict) -> None:
        if group.get("lr", 0) < 0:
            raise OptimizerError(f"{type(self).__name__}: learning rate must be >= 0, got "
                                 f"{group['lr']}")
        if group.get("weight_decay", 0) < 0:
            raise OptimizerError(f"{type(self).__name__}: weight_decay must be >= 0, got "
                                 f"{group['weight_decay']}")

    def _grad_lookup(self, grads):
        """A function param -> gradient Tensor or None, for `Gradients` or a mapping."""
        if isinstance(grads, Mapping):
            by_id = {id(k): v for k, v in grads.items()}
            return lambda p: by_id.get(id(p))
        return lambda p: p.grad(grads)

    def step(self, grads: Any) -> None:
        """Update every parameter that has a gradient in `grads` (the `Gradients` returned by
        `backward()`, or a mapping Parameter -> Tensor). Parameters without one are skipped."""
        lookup = self._grad_lookup(grads)
        with _no_grad():
            self._step(lookup)

    def _step(self, lookup) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if not p.trainable:
                    continue
                g = lookup(p)
                if g is None:
                    continue
                if not isinstance(g, Tensor) or g.shape != p.shape:
                    raise OptimizerError(f"{type(self).__name__}.step: gradient of shape "
                                         f"{getattr(g, 'shape', None)} for a parameter of shape "
                                         f"{p.shape}")
                state = self.state.setdefault(id(p), {})
                new = self.update(p.detach(), g.detach().to(p.dtype), group, state)
                p.assign(new, cast=True)

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            hp = ", ".join(f"{k}={v}" for k, v in g.items() if k != "params")
            lines.append(f"  group {i}: {len(g['params'])} params, {hp}")
        return "\n".join(lines) + "\n)"
