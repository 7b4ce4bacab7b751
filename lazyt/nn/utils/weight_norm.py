"""torch's (deprecated) hook-based weight norm: `weight = weight_v * (weight_g / ||weight_v||)`,
recomputed before every forward (the parametrization is `parametrizations.weight_norm`)."""
from __future__ import annotations

import warnings

from ...autodiff import no_grad
from ...errors import InvalidArgumentError
from ...tensor import Tensor
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm"]


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
