"""torch's reductions and statistics that lazyt's primitive op set lacks (logsumexp,
var_mean, std_mean, nn.functional.normalize), linspace, and the in-place random fills
`Tensor.normal_` / `Tensor.uniform_`, as composites of the differentiable ops.

logsumexp subtracts the (detached) maximum before exponentiating, so it neither overflows
nor underflows, and its gradient is the softmax. normalize guards the norm's square root at
zero, so a zero vector gets a zero gradient rather than NaN. `sum`/`prod` already take
torch's `dtype=` (lazyt.functional casts first, as torch does).
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from . import dtype as dt
from . import shape as sh
from .creation import rand, randn, tensor
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import clamp, floating, method, where
from .inplace import rebind
from .mathops import install_methods, isinf, tensor_arg
from .tensor import Tensor

__all__ = ["logsumexp", "var_mean", "std_mean", "linspace"]


# ---------------------------------------------------------------------- logsumexp
def _reduced_dims(op: str, x: Tensor, dim) -> tuple:
    """`dim` (an int or a sequence; None or () for all dims) normalized."""
    if x.ndim == 0:  # a 0-d tensor reduces to itself; dim 0 / -1 are accepted
        for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
            sh.normalize_dim(op, d, 0)
        return ()
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(x.ndim))
    return sh.normalize_dims(op, dim, x.ndim)


@method(function=False)
def logsumexp(input, dim, keepdim: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """`log(sum(exp(input), dim))` computed stably: the maximum along `dim` is taken out
    first (an infinite maximum counts as 0, as torch). Integers are computed in the default
    float, float16 in float32; a reduction over an empty dim gives -inf."""
    x = floating(tensor_arg("logsumexp", input))
    dims = _reduced_dims("logsumexp", x, dim)
    if x.dtype is dt.float16:
        return logsumexp(x.to(dt.float32), dims, keepdim).to(dt.float16)
    if not dims:
        return x
    if x.numel() == 0:
        return x.exp().sum(dims, keepdim=bool(keepdim)).log()
    keepdim = bool(keepdim)
    m = x.detach().max(dims, keepdim=True)
    m = where(isinf(m), 0.0, m)
    total = (x - m).exp().sum(dims, keepdim=keepdim)
    return total.log() + (m if keepdim else m.reshape(total.shape))


# ---------------------------------------------------------------------- var_mean / std_mean
def _stat_args(op: str, dim, unbiased, correction):
    """torch's overloads: `(input, unbiased)`, `(input, dim, unbiased, keepdim)` and
    `(input, dim, *, correction=, keepdim=)`."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise InvalidArgumentError(f"{op}: got unbiased twice ({dim} and {unbiased})")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise InvalidArgumentError(f"{op}: pass unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def var_mean(input, dim=None, unbiased: bool | None = None,  # noqa: A002 - torch's name
             keepdim: bool = False, *, correction=None) -> tuple:
    """`(var, mean)` over `dim` (all dims when None), var with `correction` (default 1,
    Bessel's correction; `unbiased=False` means 0), as torch.var_mean."""
    x = tensor_arg("var_mean", input)
    dim, correction = _stat_args("var_mean", dim, unbiased, correction)
    v = x.var(dim, keepdim, correction=correction)
    return v, floating(x).mean(dim, keepdim).to(v.dtype)


def std_mean(input, dim=None, unbiased: bool | None = None,  # noqa: A002 - torch's name
             keepdim: bool = False, *, correction=None) -> tuple:
    """`(std, mean)` over `dim`, as torch.std_mean (see `var_mean`)."""
    x = tensor_arg("std_mean", input)
    dim, correction = _stat_args("std_mean", dim, unbiased, correction)
    v, m = var_mean(x, dim, keepdim=keepdim, correction=correction)
    return v.sqrt(), m


# ---------------------------------------------------------------------- normalize
def _norm(x: Tensor, p: float, dim: int) -> Tensor:
    """The p-norm along `dim`, kept; at a zero vector the 2-norm's gradient is zero."""
    a = x.abs()
    if p == math.inf:
        return a.max(dim, keepdim=True)
    if p == 1:
        return a.sum(dim, keepdim=True)
    if p == 2:
        s = (x * x).sum(dim, keepdim=True)
        pos = s > 0
        return where(pos, where(pos, s, 1.0).sqrt(), 0.0)
    s = (a ** p).sum(dim, keepdim=True)
    pos = s > 0
    return where(pos, where(pos, s, 1.0) ** (1.0 / p), 0.0)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out=None) -> Tensor:
    """torch.nn.functional.normalize: `input / max(||input||_p, eps)` along `dim`, so each
    slice has unit p-norm (p > 0, or inf); zero slices stay zero."""
    if out is not None:
        raise InvalidArgumentError("normalize: out= is not supported: lazyt tensors are "
                                   "immutable; use the returned tensor")
    x = tensor_arg("normalize", input)
    if not x.dtype.is_float:
        raise DTypeError(f"normalize: expected a floating-point input, got {x.dtype.name}")
    if not isinstance(p, numbers.Real) or not (p > 0):
        raise InvalidArgumentError(f"normalize: p must be positive (or inf), got {p!r}")
    if x.ndim == 0:
        x1 = normalize(x.reshape(1), p, 0, eps)
        return x1.reshape(())
    d = sh.normalize_dim("normalize", dim, x.ndim)
    if x.dtype is dt.float16:
        return normalize(x.to(dt.float32), p, d, eps).to(dt.float16)
    return x / clamp(_norm(x, float(p), d), min=eps)


# ---------------------------------------------------------------------- linspace
def linspace(start, end, steps: int, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive, torch's formula: the
    first half counted up from start, the second half down from end (so both ends are
    exact). Default dtype: the default float; integer dtypes truncate toward zero."""
    try:
        steps = operator.index(steps)
    except TypeError:
        raise DTypeError(f"linspace: steps must be an int, got {type(steps).__name__}") from None
    if steps < 0:
        raise ShapeError(f"linspace: number of steps must be non-negative, got {steps}")
    d = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if d is dt.bool_:
        raise DTypeError("linspace: dtype bool is not supported")
    start, end = (float(v.item()) if isinstance(v, Tensor) else v for v in (start, end))
    for name, v in (("start", start), ("end", end)):
        if not isinstance(v, (numbers.Real, np.generic)) or isinstance(v, (bool, np.bool_)):
            raise DTypeError(f"linspace: {name} must be a real number, got {v!r}")
    if steps == 1:
        vals = np.array([start], dtype=np.float64)
        out = tensor(vals.astype(d.np), dtype=d, device=device)
        return out.require_grad() if requires_grad else out
    acc = np.float64 if d in (dt.float64, dt.int32, dt.int64) else np.float32
    i = np.arange(steps, dtype=acc)
    a, b = acc(start), acc(end)
    step = (b - a) / acc(steps - 1)
    half = steps // 2
    vals = np.where(i < half, a + step * i, b - step * (acc(steps - 1) - i))
    out = tensor(vals.astype(d.np), dtype=d, device=device)
    return out.require_grad() if requires_grad else out


# ---------------------------------------------------------------------- in-place random fills
def _float_fill(op: str, t) -> Tensor:
    if not isinstance(t, Tensor):
        raise DTypeError(f"{op}: expected a lazyt.Tensor, got {type(t).__name__}")
    if not t.dtype.is_float:
        raise DTypeError(f"{op}: expects a floating-point tensor, got {t.dtype.name}")
    return t


@method(function=False)
def normal_(input, mean: float = 0.0, std: float = 1.0, *,  # noqa: A002 - torch's name
            generator=None) -> Tensor:
    """Fill in place with samples of N(mean, std^2), drawn from lazyt's generator
    (`lazyt.manual_seed`); a leaf that requires grad only under `lazyt.no_grad()`."""
    t = _float_fill("normal_", input)
    if generator is not None:
        raise InvalidArgumentError("normal_: generator= is not supported; seed with "
                                   "lazyt.manual_seed")
    if std < 0:
        raise InvalidArgumentError(f"normal_: std must be non-negative, got {std}")
    draw = randn(t.shape, dtype=t.dtype, device=t.device)
    return rebind(t, draw * std + mean, "normal_")


@method(function=False)
def uniform_(input, a: float = 0.0, b: float = 1.0, *,  # noqa: A002 - torch's name
             generator=None) -> Tensor:
    """Fill in place with samples of U(a, b) from lazyt's generator (torch's `from`/`to`)."""
    t = _float_fill("uniform_", input)
    if generator is not None:
        raise InvalidArgumentError("uniform_: generator= is not supported; seed with "
                                   "lazyt.manual_seed")
    if a > b:
        raise InvalidArgumentError(f"uniform_: expects a <= b, got a={a} and b={b}")
    draw = rand(t.shape, dtype=t.dtype, device=t.device)
    return rebind(t, draw * (b - a) + a, "uniform_")


install_methods(__name__)
