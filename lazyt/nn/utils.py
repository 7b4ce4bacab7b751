"""`lazyt.nn.utils`: torch's gradient clipping and parameter-vector helpers
(`clip_grad_norm_`, `clip_grad_value_`, `get_total_norm`, `parameters_to_vector`,
`vector_to_parameters`).

Clipping updates each `.grad` in place with ordinary lazy ops (nothing is read), so it runs
inside `lazyt.compile` and fuses with the optimizer step that follows; only
`error_if_nonfinite=True` reads the norm."""
from __future__ import annotations

import math
from typing import Iterable

from .. import dtype as dt
from ..autodiff import no_grad
from ..errors import InvalidArgumentError, ShapeError
from ..functional import cat, stack
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]


def _tensors(fn: str, tensors) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    out = list(tensors)
    bad = [type(t).__name__ for t in out if not isinstance(t, Tensor)]
    if bad:
        raise InvalidArgumentError(f"{fn}: expected tensors (parameters), got {', '.join(bad)}")
    return out


def _norm(t: Tensor, p: float) -> Tensor:
    if t.dtype is dt.float16:  # squares of half values overflow: the norm in float32
        t = t.to(dt.float32)
    a = t.abs()
    if p == math.inf:
        return a.max()
    if p == 1:
        return a.sum()
    if p == 2:
        return (t * t).sum().sqrt()
    return (a ** p).sum() ** (1.0 / p)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together (the norm of their norms)."""
    ts = _tensors("get_total_norm", tensors)
    p = float(norm_type)
    if not (p > 0):
        raise InvalidArgumentError(f"get_total_norm: norm_type must be positive (or inf), got "
                                   f"{norm_type!r}")
    if not ts:
        from ..creation import zeros
        return zeros(())
    with no_grad():
        norms = [_norm(t.detach(), p) for t in ts]
        wide = dt.float64 if any(n.dtype is dt.float64 for n in norms) else norms[0].dtype
        total = _norm(stack([n.to(wide) for n in norms]), p)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise InvalidArgumentError(f"get_total_norm: the total norm of order {norm_type} is "
                                   "non-finite, so it cannot be clipped; pass "
                                   "error_if_nonfinite=False to clip anyway")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the parameters' `.grad` in place so their total `norm_type`-norm is at most
    `max_norm` (by `max_norm / (norm + 1e-6)`, capped at 1, as torch); returns the total norm
    before clipping. Parameters without a gradient are skipped."""
    grads = [p.grad for p in _tensors("clip_grad_norm_", parameters) if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    with no_grad():
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every `.grad` element to [-clip_value, clip_value] in place."""
    c = float(clip_value)
    with no_grad():
        for p in _tensors("clip_grad_value_", parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-c, max=c)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened into one vector, in order."""
    ts = _tensors("parameters_to_vector", parameters)
    return cat([t.reshape(-1) for t in ts], 0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of `vec` into the parameters (in place, their shapes kept)."""
    ts = _tensors("vector_to_parameters", parameters)
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise ShapeError(f"vector_to_parameters: expected a 1-D tensor, got "
                         f"{getattr(vec, 'shape', type(vec).__name__)}")
    total = sum(t.numel() for t in ts)
    if vec.shape[0] != total:
        raise ShapeError(f"vector_to_parameters: the vector has {vec.shape[0]} elements, the "
                         f"parameters {total}")
    at = 0
    with no_grad():
        for t in ts:
            n = t.numel()
            t.copy_(vec[at:at + n].reshape(t.shape))
            at += n


# ---------------------------------------------------------------------- weight norm
def _norm_except_dim(v: Tensor, dim: int | None) -> Tensor:
    """||v|| over every dim but `dim` (kept as size 1); over all of v for None."""
    if dim is None:
        return (v * v).sum().sqrt()
    others = tuple(i for i in range(v.ndim) if i != dim)
    return (v * v).sum(others, keepdim=True).sqrt() if others else v.abs()


class _WeightNorm:
    """The forward pre-hook of `weight_norm`: `name = name_v * (name_g / ||name_v||)`."""

    def __init__(self, name: str, dim: int | None):
        self.name, self.dim = name, dim

    def compute(self, module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, args) -> None:
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """torch's (deprecated) `nn.utils.weight_norm`: replace the parameter `name` by a
    magnitude `name_g` (its norm over every dim but `dim`; `dim=None`: one number) and a
    direction `name_v`, recombined before every forward (`dim=-1` is torch's spelling of
    None). Returns the module."""
    import warnings

    from .parameter import Parameter
    warnings.warn("nn.utils.weight_norm is deprecated in favor of "
                  "nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=2)
    w = getattr(module, name, None)
    if not isinstance(w, Parameter):
        raise InvalidArgumentError(f"weight_norm: {type(module).__name__} has no parameter "
                                   f"{name!r}")
    hooks = module.__dict__.setdefault("_weight_norms", {})
    if name in hooks:
        raise InvalidArgumentError(f"weight_norm: {name!r} of {type(module).__name__} already "
                                   "has a weight norm")
    if dim == -1:            # torch's own spelling of None: the whole tensor
        dim = None
    elif dim is not None and dim < 0:
        dim += w.ndim
    fn = _WeightNorm(name, dim)
    with no_grad():
        g, v = _norm_except_dim(w, dim), w * 1
    delattr(module, name)
    module.register_parameter(name + "_g", Parameter(g))
    module.register_parameter(name + "_v", Parameter(v))
    fn(module, ())
    hooks[name] = (fn, module.register_forward_pre_hook(fn))
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo `weight_norm`: `name` is one parameter again, holding the recombined weight."""
    from .parameter import Parameter
    hooks = module.__dict__.get("_weight_norms", {})
    if name not in hooks:
        raise InvalidArgumentError(f"remove_weight_norm: weight_norm of {name!r} not found in "
                                   f"{type(module).__name__}")
    fn, handle = hooks.pop(name)
    with no_grad():
        w = fn.compute(module)
    handle.remove()
    delattr(module, name + "_g")
    delattr(module, name + "_v")
    module.__dict__.pop(name, None)
    module.register_parameter(name, Parameter(w))
    return module


__all__ += ["weight_norm", "remove_weight_norm"]
