"""torch's `nn.utils.parametrizations`: `orthogonal`, `spectral_norm` and `weight_norm` as
parametrizations (see `parametrize`), with torch's modules, buffers and state-dict keys."""
from __future__ import annotations

from enum import Enum, auto

import numpy as np

from ...autodiff import no_grad
from ...creation import arange, eye, randn, zeros
from ...errors import IndexOutOfRangeError, InvalidArgumentError, MissingImplError, ShapeError
from ...functional import cat, where
from ...linalg import geqrf, householder_product, matrix_exp, qr, solve
from ...mathops import allclose
from ...reductions import normalize
from ...tensor import Tensor
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from .weight_norm import _norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _parametrized_tensor(fn: str, module: Module, name: str) -> Tensor:
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise InvalidArgumentError(f"{fn}: {type(module).__name__} has no parameter or buffer "
                                   f"named {name!r}")
    return weight


# ---------------------------------------------------------------------- orthogonal
def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(q.dtype.np).eps)
    return bool(allclose(q.mH @ q, eye(k, dtype=q.dtype, device=q.device), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR with R's diagonal made positive (torch's geqrf + householder_product)."""
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) to one with orthonormal columns (rows when
    wide): the exponential or Cayley transform of its skew-symmetric part, or a product of
    Householder reflections; with trivialization, relative to a stored orthogonal `base`."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True):
        super().__init__()
        if weight.is_complex() and orthogonal_map is _OrthMaps.householder:
            raise InvalidArgumentError("orthogonal: the householder map does not support "
                                       "complex tensors")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - torch's name
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map is _OrthMaps.householder:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            X = X.tril()
            if n != k:
                X = cat([X, zeros(*X.shape[:-2], n, n - k, dtype=X.dtype, device=X.device)],
                        -1)
            A = X - X.mH
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - torch's name
        """An original that maps to `Q`: with trivialization `Q` (made orthogonal when it is
        not) becomes the base and the original the point that maps to the identity."""
        if Q.shape != self.shape:
            raise ShapeError(f"orthogonal: expected a matrix or batch of matrices of shape "
                             f"{self.shape}, got {Q.shape}")
        with no_grad():
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map is not _OrthMaps.householder:
                    raise MissingImplError("orthogonal: the matrix_exp and cayley maps cannot "
                                           "be assigned to when use_trivialization=False")
                A, tau = geqrf(Q)
                sign = A.diagonal(dim1=-2, dim2=-1).sign() * where(tau == 0.0, -1.0, 1.0)
                on_diagonal = arange(n, device=A.device).reshape(n, 1) == \
                    arange(k, device=A.device)
                A = where(on_diagonal, sign.unsqueeze(-2), A)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], -1))
            self.base = Q
            a, b = Q_init.shape[-2], Q_init.shape[-1]
            neg_id = -eye(a, b, dtype=Q_init.dtype, device=Q_init.device)
            return neg_id.expand(*Q_init.shape).contiguous()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` (a matrix or batch of matrices) to orthonormal columns (rows
    when it is wide) through a parametrization. `orthogonal_map`: "matrix_exp" (default for
    square or complex), "cayley" or "householder" (default otherwise). Returns the module."""
    weight = _parametrized_tensor("orthogonal", module, name)
    if weight.ndim < 2:
        raise ShapeError(f"orthogonal: expected a matrix or batch of matrices, got a tensor "
                         f"of {weight.ndim} dimensions")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] or \
            weight.is_complex() else "householder"
    orth_enum = _OrthMaps.__members__.get(orthogonal_map) if isinstance(orthogonal_map, str) \
        else None
    if orth_enum is None:
        raise InvalidArgumentError(f"orthogonal: orthogonal_map must be one of 'matrix_exp', "
                                   f"'cayley', 'householder', got {orthogonal_map!r}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---------------------------------------------------------------------- weight norm
class _WeightNorm(Module):
    """`weight = weight_v * (weight_g / ||weight_v||)`, the norm over every dim but `dim`
    (over the whole tensor for dim None, which torch spells -1)."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def _norm_dim(self, ndim: int) -> int | None:
        return None if self.dim == -1 else self.dim % max(ndim, 1)

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self._norm_dim(weight_v.ndim)))

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, self._norm_dim(weight.ndim)), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude `parametrizations.<name>.original0` (its norm
    over every dim but `dim`) and a direction `original1`, recombined at each access.
    Checkpoints of the hook-based `nn.utils.weight_norm` (`<name>_g`, `<name>_v`) load into
    it. Returns the module."""
    _parametrized_tensor("weight_norm", module, name)
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def read_old_keys(state: dict, prefix: str) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state and v_key in state:
            state[f"{prefix}parametrizations.{name}.original0"] = state.pop(g_key)
            state[f"{prefix}parametrizations.{name}.original1"] = state.pop(v_key)

    parametrize._add_state_upgrade(module, read_old_keys)
    return module


# ---------------------------------------------------------------------- spectral norm
class _SpectralNorm(Module):
    """`weight / sigma`, sigma the largest singular value of the weight as a matrix (dim
    `dim` first, the rest flattened), estimated by power iteration on the buffers `_u`, `_v`,
    which each training-mode access advances by `n_power_iterations` steps."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexOutOfRangeError(f"spectral_norm: dim {dim} out of range for a weight of "
                                       f"shape {weight.shape} (expected [-{ndim}, {ndim - 1}])")
        if n_power_iterations <= 0:
            raise InvalidArgumentError(f"spectral_norm: n_power_iterations must be positive, "
                                       f"got {n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = randn(h, dtype=weight.dtype, device=weight.device)
            v = randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        sigma = self._u.vdot(weight_mat.mv(self._v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _spectral_dim(module: Module, dim: int | None) -> int:
    """torch's default: dim 1 (output channels) for transposed convolutions, else 0."""
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm (its largest singular value, estimated by
    power iteration on the buffers `parametrizations.<name>.0._u` / `._v`, advanced at each
    access in training mode) through a parametrization. Returns the module."""
    weight = _parametrized_tensor("spectral_norm", module, name)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, _spectral_dim(module, dim), eps))
    return module
