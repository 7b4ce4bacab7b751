"""Gamma(alpha, 1) samples drawn on the host by numpy's generator (lazyt's stream), with the
implicit reparameterization gradient torch's `_standard_gamma` has: for x = F^-1(u; alpha)
with u held fixed, dx/dalpha = -(dF/dalpha)(x; alpha) / f(x; alpha), F the regularized lower
incomplete gamma function and f the density. dF/dalpha is a central difference of `igamma`
in float64 (about 1e-9 relative), taken on the host values of the sample."""
from __future__ import annotations

import numpy as np

from .. import data as _data
from .. import dtype as dt
from ..autodiff import is_grad_enabled, no_grad
from ..creation import tensor
from ..special_fns import lgamma
from ..special_more import igamma
from ..tensor import Tensor


def _igamma64(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return igamma(tensor(a, dtype=dt.float64), tensor(x, dtype=dt.float64)).numpy()


def implicit_slope(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dalpha of a standard gamma sample x at fixed CDF value (float64 host arrays)."""
    h = 1e-5 * np.maximum(alpha, 1e-3)
    with no_grad():
        dF = (_igamma64(alpha + h, x) - _igamma64(alpha - h, x)) / (2 * h)
        log_pdf = (alpha - 1) * np.log(x) - x - \
            lgamma(tensor(alpha, dtype=dt.float64)).numpy()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        slope = -dF * np.exp(-log_pdf)
    return np.where(np.isfinite(slope), slope, 0.0)


def standard_gamma(alpha: Tensor, op: str) -> Tensor:
    """One Gamma(alpha, 1) sample per element of `alpha` (clamped to the dtype's tiny), with
    gradient dx/dalpha when `alpha` requires grad."""
    a = alpha.detach().numpy().astype(np.float64)
    x = _data.generator(None, op).standard_gamma(a)
    x = np.maximum(x.astype(alpha.dtype.np), dt.finfo(alpha.dtype).tiny)
    out = tensor(x, dtype=alpha.dtype, device=alpha.device)
    if alpha.requires_grad and is_grad_enabled():
        slope = implicit_slope(a, x.astype(np.float64))
        out = out + (alpha - alpha.detach()) * tensor(slope, dtype=alpha.dtype,
                                                      device=alpha.device)
    return out
