"""`Optimizer`: the base of SGD/Adam/AdamW, for both training flows.

Burn's: `opt.step(grads)` reads each parameter's gradient from the `Gradients` that
`loss.backward()` returned (or from a mapping Parameter -> Tensor). torch's: `opt.step()` reads
each parameter's accumulated `p.grad`, and `opt.zero_grad()` clears it. Either way the parameter
is rebound to its new value (detached), so the same Parameter objects stay in the model.
`state_dict()` / `load_state_dict()` use torch's layout, with parameters named by index.
`opt.state` is keyed by the Parameter objects, as torch's (`opt.state[p]["exp_avg"]`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping

from .. import capture_state as _capture
from ..autodiff import Gradients
from ..autodiff import no_grad as _no_grad
from ..creation import tensor as _tensor
from ..creation import zeros as _zeros
from ..errors import LazytError
from ..nn.parameter import Parameter
from ..tensor import Tensor


class OptimizerError(LazytError, ValueError):
    """Bad optimizer or scheduler arguments: no parameters, a non-Parameter, a negative learning
    rate, a state dict that does not fit the optimizer."""


class Optimizer:
    """Holds parameter groups (dicts with "params", "param_names" when built from
    `named_parameters()`, and hyper-parameters) and per-parameter state (`state[param]`);
    subclasses implement `update(param, grad, group, state) -> new value`."""

    # Per-parameter state kept as Python numbers (host-side, no device sync per step) and
    # exported by `state_dict()` as 0-d float32 tensors, as torch exports Adam's `step`.
    scalar_state: tuple = ("step",)

    def __init__(self, params: Iterable, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: defaultdict[Parameter, dict] = defaultdict(dict)
        params = list(params)
        if not params:
            raise OptimizerError(f"{type(self).__name__}: got an empty parameter list")
        if isinstance(params[0], dict):
            for g in params:
                self.add_param_group(g)
        else:
            self.add_param_group({"params": params})

    def add_param_group(self, group: dict) -> None:
        """Add parameters with their own hyper-parameters (missing ones take the defaults).
        `(name, parameter)` pairs (`model.named_parameters()`) put the names in the group's
        "param_names", as torch; every group must then have names."""
        name = type(self).__name__
        params = group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        names = []
        for i, p in enumerate(params):
            if isinstance(p, tuple) and len(p) == 2:
                names.append(p[0])
                params[i] = p = p[1]
            if not isinstance(p, Parameter):
                raise OptimizerError(f"{name}: expected Parameters, got "
                                     f"{type(p).__name__} at index {i}")
        if names and len(names) != len(params):
            raise OptimizerError(f"{name}: give every parameter of a group with its name "
                                 f"or none: {len(names)} of {len(params)} have names")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise OptimizerError(f"{name}: a parameter appears in more than one group")
        full = {"params": params}
        if names:
            full["param_names"] = names
        full.update({k: v for k, v in group.items() if k != "params"})
        for k, v in self.defaults.items():
            full.setdefault(k, v)
        if self.param_groups and ("param_names" in full) != \
                ("param_names" in self.param_groups[0]):
            raise OptimizerError(f"{name}: all parameter groups must be with names or all "
                                 f"without (named_parameters() or parameters())")
        self._check(full)
        self.param_groups.append(full)

    def _check(self, group: dict) -> None:
        if group.get("lr", 0) < 0:
            raise OptimizerError(f"{type(self).__name__}: learning rate must be >= 0, got "
                                 f"{group['lr']}")
        if group.get("weight_decay", 0) < 0:
            raise OptimizerError(f"{type(self).__name__}: weight_decay must be >= 0, got "
                                 f"{group['weight_decay']}")

    # ------------------------------------------------------------------ gradients
    def _grad_lookup(self, grads) -> Callable[[Parameter], Tensor | None]:
        """A function param -> gradient Tensor or None, for each accepted form of `grads`."""
        if grads is None:
            return lambda p: p.grad
        if isinstance(grads, Gradients):  # before Mapping: a Gradients may one day be one
            return grads.get
        if isinstance(grads, Mapping):
            by_id = {id(k): v for k, v in grads.items()}
            return lambda p: by_id.get(id(p))
        raise OptimizerError(f"{type(self).__name__}.step: expected None (use each parameter's "
                             "accumulated .grad), the Gradients returned by loss.backward(), "
                             f"or a mapping Parameter -> Tensor; got {type(grads).__name__}")

    def step(self, grads: Any = None):
        """Update every parameter that has a gradient: with no argument, its accumulated
        `p.grad` (torch's flow); else its gradient in `grads`, the `Gradients` returned by
        `loss.backward()` or a mapping Parameter -> Tensor (Burn's flow). Parameters without a
        gradient are skipped; as in torch, a frozen parameter (`requires_grad=False`) that
        holds a `.grad` is updated by `step()`, while the explicit `grads` forms skip it.

        Burn's flow hands the pass's gradients over: a parameter whose `.grad` holds exactly
        that pass's gradient (nothing accumulated before it) gets `.grad = None` after the
        update, so a loop of `opt.step(loss.backward())` neither accumulates nor keeps last
        step's gradients alive. Accumulated `.grad` (torch's flow) is left as torch leaves it.

        A callable is torch's closure: it is called (it should zero the gradients, compute
        the loss and call `backward()`), the parameters are updated from their `.grad`, and
        its loss is returned."""
        if callable(grads) and not isinstance(grads, Mapping) and not hasattr(grads, "get"):
            loss = grads()
            self.step()
            return loss
        lookup = self._grad_lookup(grads)
        handed_over = []
        if grads is not None and not isinstance(grads, Mapping):
            for group in self.param_groups:
                for p in group["params"]:
                    acc = p.grad
                    if acc is not None:
                        g = grads.get(p)
                        if g is not None and acc.primitive is g.primitive:
                            handed_over.append(p)
        with _no_grad():
            self._step(lookup, frozen_too=grads is None)
        for p in handed_over:
            p.grad = None

    #: The per-parameter state entries `update` may replace (lazyt.compile watches them).
    state_keys: tuple = ()

    def _step(self, lookup, frozen_too: bool) -> None:
        capturing = _capture.active()
        for group in self.param_groups:
            if capturing:   # a recording bakes these in: a replay checks them first
                for k in group:
                    if k != "params":
                        _capture.guard(group, k)
            for p in group["params"]:
                if not (frozen_too or p.trainable):
                    continue  # explicit grads skip it; a .grad moves it, as in torch
                g = lookup(p)
                if g is None:
                    continue
                if not isinstance(g, Tensor) or g.shape != p.shape:
                    raise OptimizerError(f"{type(self).__name__}.step: gradient of shape "
                                         f"{getattr(g, 'shape', None)} for a parameter of shape "
                                         f"{p.shape}")
                state = self.state[p]
                if capturing:
                    for k in self.state_keys:
                        _capture.watch(state, k)
                new = self.update(p.detach(), g.detach().to(p.dtype), group, state)
                p.assign(new, cast=True)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the accumulated gradient of every parameter that has one: `p.grad = None`, or
        with `set_to_none=False` zeros of the parameter's shape and dtype on its device (as
        torch, a parameter without a gradient keeps None)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad = None if set_to_none else _zeros(p.shape, dtype=p.dtype,
                                                          device=p.device)

    def update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> Tensor:
        """The new value of `p` from its gradient `g`; may read and write `state`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state dict
    def _indexed_params(self) -> list[Parameter]:
        """All parameters in group order: a parameter's index in the state dict."""
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict:
        """torch's layout: `{"state": {index: {name: value}}, "param_groups": [{hyper-params,
        "params": [indices]}]}`; tensors are shared, not copied (lazyt tensors are immutable)."""
        groups, index = [], 0
        for g in self.param_groups:
            hp = {k: v for k, v in g.items() if k != "params"}
            hp["params"] = list(range(index, index + len(g["params"])))
            index += len(g["params"])
            groups.append(hp)
        state = {}
        for i, p in enumerate(self._indexed_params()):
            s = self.state.get(p)
            if s:
                state[i] = {k: _tensor(float(v), device="cpu") if k in self.scalar_state else v
                            for k, v in s.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Take the hyper-parameters and per-parameter state of `state_dict` (from
        `state_dict()` of an optimizer over parameters of the same shapes, in the same groups);
        raises `OptimizerError` naming the group, parameter or state entry that does not fit."""
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping) or not {"state", "param_groups"} <= set(state_dict):
            raise OptimizerError(f"{name}: expected a dict with 'state' and 'param_groups', got "
                                 f"{_describe(state_dict)}")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise OptimizerError(f"{name}: the state dict has {len(saved_groups)} parameter "
                                 f"groups, this optimizer has {len(self.param_groups)}")
        index_to_param: dict[int, Parameter] = {}
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            ids = list(saved.get("params", ()))
            if len(ids) != len(group["params"]):
                raise OptimizerError(f"{name}: group {gi} has {len(ids)} parameters in the "
                                     f"state dict, {len(group['params'])} in this optimizer")
            index_to_param.update(zip((int(i) for i in ids), group["params"]))
        new_state: defaultdict[Parameter, dict] = defaultdict(dict)
        for key, saved in state_dict["state"].items():
            p = index_to_param.get(int(key))
            if p is None:
                raise OptimizerError(f"{name}: state for parameter {key}, which no group of the "
                                     f"state dict lists (indices {sorted(index_to_param)})")
            new_state[p] = {k: self._load_value(name, key, k, v, p) for k, v in saved.items()}
        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            full = {k: v for k, v in group.items() if k != "params"}
            full.update({k: v for k, v in saved.items() if k != "params"})
            full["params"] = group["params"]
            self._check(full)
            new_groups.append(full)
        self.param_groups, self.state = new_groups, new_state

    def _load_value(self, call: str, index, key: str, value, p: Parameter):
        """One state entry, fitted to parameter `p`: scalars back to numbers, tensors checked
        against p's shape and moved to its device and dtype."""
        if key in self.scalar_state:
            if isinstance(value, Tensor):
                if value.numel() != 1:
                    raise OptimizerError(f"{call}: state {key!r} of parameter {index} should be "
                                         f"a number, got a tensor of shape {value.shape}")
                value = value.item()
            return int(round(value)) if float(value).is_integer() else float(value)
        if not isinstance(value, Tensor):
            return value
        if value.shape != p.shape:
            raise OptimizerError(f"{call}: state {key!r} of parameter {index} has shape "
                                 f"{value.shape}, the parameter has shape {p.shape}")
        return value.detach().to(p.device).to(p.dtype)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            hp = ", ".join(f"{k}={v}" for k, v in g.items()
                           if k not in ("params", "param_names"))
            lines.append(f"  group {i}: {len(g['params'])} params, {hp}")
        return "\n".join(lines) + "\n)"


def _describe(value) -> str:
    return f"{type(value).__name__} with keys {sorted(map(str, value))}" \
        if isinstance(value, Mapping) else type(value).__name__


#: torch's implementation switches and their defaults.
_FLAG_DEFAULTS = {"foreach": None, "capturable": False, "differentiable": False, "fused": None}


def torch_flags(name: str, flags: dict, accepted: tuple) -> dict:
    """torch's implementation switches (`foreach`, `fused`, `capturable`,
    `differentiable`) that `name` takes (`accepted`), with torch's defaults, to keep in the
    param groups as torch does. lazyt's step is one lazy program that fuses anyway, so they
    change nothing; `differentiable=True` (a step autodiff can differentiate) is refused."""
    unknown = [k for k in flags if k not in accepted]
    if unknown:
        raise TypeError(f"{name}: unexpected keyword argument(s) {', '.join(unknown)}")
    if flags.get("differentiable"):
        raise OptimizerError(f"{name}: differentiable=True is not supported")
    return {k: flags.get(k, _FLAG_DEFAULTS[k]) for k in accepted}
