"""torch's hook-based spectral norm: `weight = weight_orig / sigma`, recomputed before every
forward, sigma estimated by power iteration on the buffers `weight_u`, `weight_v` (the
parametrization is `parametrizations.spectral_norm`)."""
from __future__ import annotations

from ...autodiff import no_grad
from ...creation import randn
from ...errors import InvalidArgumentError
from ...reductions import normalize
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter
from .parametrizations import _spectral_dim

__all__ = ["spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of `spectral_norm` on one parameter."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise InvalidArgumentError(f"spectral_norm: n_power_iterations must be positive, "
                                       f"got {n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """`weight_orig / sigma`; in training mode the buffers first advance, in place."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                w = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(w.mT.mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(w.mv(v), dim=0, eps=self.eps))
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name,
                           self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> "SpectralNorm":
        hooks = module.__dict__.setdefault("_spectral_norms", {})
        if name in hooks:
            raise InvalidArgumentError(f"spectral_norm: {name!r} of {type(module).__name__} "
                                       "already has a spectral norm hook")
        weight = module._parameters.get(name)
        if weight is None:
            raise InvalidArgumentError(f"spectral_norm: {type(module).__name__} has no "
                                       f"parameter {name!r}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        hooks[name] = (fn, module.register_forward_pre_hook(fn))
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """torch's hook-based `nn.utils.spectral_norm`: the parameter `name` becomes
    `name_orig`, and before every forward `module.<name> = name_orig / sigma`, sigma its
    largest singular value (dim `dim` against the rest; default 1 for transposed
    convolutions, else 0) by power iteration on `name_u` / `name_v`, advanced in training
    mode. Returns the module."""
    SpectralNorm.apply(module, name, n_power_iterations, _spectral_dim(module, dim), eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo `spectral_norm`: `name` is one parameter again, holding the normalized weight."""
    hooks = module.__dict__.get("_spectral_norms", {})
    if name not in hooks:
        raise InvalidArgumentError(f"remove_spectral_norm: spectral_norm of {name!r} not found "
                                   f"in {type(module).__name__}")
    fn, handle = hooks.pop(name)
    fn.remove(module)
    handle.remove()
    return module
