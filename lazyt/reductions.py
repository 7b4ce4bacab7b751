"""torch's reductions and statistics that lazyt's primitive op set lacks (logsumexp,
var_mean, std_mean, nn.functional.normalize), linspace and logspace, and the in-place random
fills `Tensor.normal_` / `Tensor.uniform_`, as composites of the differentiable ops.

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
from .functional import clamp, floating, method, std_of_var, where
from .inplace import rebind
from .mathops import install_methods, isinf, tensor_arg
from .promotion import fit_int
from .tensor import Tensor

__all__ = ["logsumexp", "var_mean", "std_mean", "linspace", "logspace"]


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
    m = x.detach().amax(dims, keepdim=True)
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
    v = x.var(dim, keepdim=keepdim, correction=correction)
    return v, floating(x).mean(dim, keepdim).to(v.dtype)


def std_mean(input, dim=None, unbiased: bool | None = None,  # noqa: A002 - torch's name
             keepdim: bool = False, *, correction=None) -> tuple:
    """`(std, mean)` over `dim`, as torch.std_mean (see `var_mean`)."""
    x = tensor_arg("std_mean", input)
    dim, correction = _stat_args("std_mean", dim, unbiased, correction)
    v, m = var_mean(x, dim, keepdim=keepdim, correction=correction)
    return std_of_var(v), m


# ---------------------------------------------------------------------- normalize
def _norm(x: Tensor, p: float, dim: int) -> Tensor:
    """The p-norm along `dim`, kept; at a zero vector the 2-norm's gradient is zero."""
    a = x.abs()
    if p == math.inf:
        return a.amax(dim, keepdim=True)
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


# ---------------------------------------------------------------------- linspace, logspace
def linspace(start, end, steps: int, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive, bit for bit as torch's
    CPU kernel makes them: the first half up from start, the rest down from end, each value
    one fused multiply-add in the dtype's arithmetic (double for integer dtypes, which
    truncate the ends first and then each value: 0.5 to 7.5 in 3 int64 steps is [0, 3, 7]).
    Default dtype: the default float."""
    steps, d = _space_args("linspace", steps, dtype)
    a, b = _space_ends("linspace", start, end, steps, d)
    if steps <= 1:
        vals = np.array([a] * steps, dtype=d.np if d.is_int else np.float64)
    elif d is dt.float16:
        vals = _spaced_half(a, b, steps)
    else:
        acc = np.float32 if d is dt.float32 else np.float64
        step = acc(acc(b) - acc(a)) / acc(steps - 1)
        i = np.arange(steps, dtype=acc)
        up = _fma(step, i, a, acc)
        down = _fma(-step, np.arange(steps - 1, -1, -1, dtype=acc), b, acc)
        vals = np.where(np.arange(steps) < steps // 2, up, down)
    return _spaced_tensor(vals, d, device, requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """`base ** linspace(start, end, steps)` as torch's CPU kernel computes it: the ends in
    the dtype (integers truncated), the exponents in double (up from start for the first
    half, down from end for the rest), C's `pow` on each. Default dtype: the default float."""
    steps, d = _space_args("logspace", steps, dtype)
    base = float(base.item()) if isinstance(base, Tensor) else base
    if not isinstance(base, (numbers.Real, np.generic)) or isinstance(base, (bool, np.bool_)):
        raise DTypeError(f"logspace: base must be a real number, got {base!r}")
    a, b = _space_ends("logspace", start, end, steps, d)
    if steps <= 1:    # torch fills base ** start (start as given), checked against the dtype
        vals = np.array([_pow(float(base), float(a))] * steps, dtype=np.float64)
        if steps:
            _space_end("logspace", "base ** start", vals[0], _fill_check(d))
        return _spaced_tensor(vals, d, device, requires_grad)
    width = float(b - a) if d.is_int else float(d.np.type(d.np.type(b) - d.np.type(a)))
    step = width / (steps - 1)
    half = steps // 2
    exps = [a + step * i if i < half else b - step * (steps - i - 1) for i in range(steps)]
    vals = np.array([_pow(float(base), e) for e in exps], dtype=np.float64)
    return _spaced_tensor(vals, d, device, requires_grad)


def _space_args(op: str, steps, dtype) -> tuple:
    """(steps as an int, the result dtype) checked as torch checks them."""
    if isinstance(steps, (bool, np.bool_)):
        raise DTypeError(f"{op}: steps must be an int, got bool")
    try:
        steps = operator.index(steps)
    except TypeError:
        raise DTypeError(f"{op}: steps must be an int, got {type(steps).__name__}") from None
    if steps < 0:
        raise ShapeError(f"{op}: number of steps must be non-negative, got {steps}")
    d = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if d is dt.bool_:
        raise DTypeError(f"{op}: dtype bool is not supported")
    return steps, d


def _space_ends(op: str, start, end, steps: int, d: dt.DType) -> tuple:
    """The end points as `_space_end` makes them; like torch, only those used are checked
    (none for 0 steps; for 1, start as a fill value, float16 against float32's range, and
    logspace's single value after its pow)."""
    if steps <= 1:
        for name, v in (("start", start), ("end", end)):
            _space_end(op, name, v, dt.float64)                   # numbers all the same
        if steps == 0 or op == "logspace":
            v = start.item() if isinstance(start, Tensor) else start
            return float(v), None
        return _space_end(op, "start", start, _fill_check(d)), None
    return _space_end(op, "start", start, d), _space_end(op, "end", end, d)


def _fill_check(d: dt.DType) -> dt.DType:
    """The dtype torch's fill checks a value against (float16's fill goes through float)."""
    return dt.float32 if d is dt.float16 else d


def _space_end(op: str, name: str, v, d: dt.DType):
    """An end point (a number or a 0-d tensor) as a value of `d`, held in a Python number:
    truncated for an integer dtype, rounded for a float one (via float32, as torch's
    conversion does); out of `d`'s range raises, as torch."""
    if isinstance(v, Tensor):
        v = v.item()
    if not isinstance(v, (numbers.Real, np.generic)) or isinstance(v, (bool, np.bool_)):
        raise DTypeError(f"{op}: {name} must be a real number, got {v!r}")
    if d.is_int:
        if isinstance(v, (numbers.Integral, np.integer)):
            return fit_int(op, v, d)
        info = np.iinfo(d.np)
        v = float(v)
        if not info.min <= v < info.max + 1.0:     # NaN and inf fail too
            raise DTypeError(f"{op}: {name} {v} cannot be converted to {d.name} without "
                             f"overflow ({info.min}..{info.max})")
        return int(v)                              # toward zero
    v = float(v)
    if math.isfinite(v) and abs(v) > float(np.finfo(d.np).max):
        raise DTypeError(f"{op}: {name} {v} cannot be converted to {d.name} without overflow")
    if d is dt.float64:
        return v
    return float(d.np.type(np.float32(v)))


def _fma(a, b, c, acc):
    """`a * b + c` rounded once, in `acc` (float32 or float64), elementwise: torch's kernel
    is compiled with fused multiply-adds. float32 products are exact in float64; float64 ones
    are split exactly (Dekker's product and Knuth's sum of the error terms)."""
    with np.errstate(all="ignore"):
        if acc is np.float32:
            exact = np.float64(a) * np.asarray(b, np.float64) + np.float64(c)
            return exact.astype(np.float32)
        a, b, c = np.float64(a), np.asarray(b, np.float64), np.float64(c)
        p = a * b
        split = 134217729.0                         # 2**27 + 1
        ah = split * a - (split * a - a)
        bh = split * b - (split * b - b)
        al, bl = a - ah, b - bh
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        return np.where(np.isfinite(err), s + (t + err), s)


def _spaced_half(a: float, b: float, steps: int) -> np.ndarray:
    """torch's float16 linspace: every operation rounded to half (its Half arithmetic)."""
    h, f = np.float16, np.float32
    a, b = h(a), h(b)
    step = h(f(h(f(b) - f(a))) / f(h(steps - 1)))
    i = np.arange(steps)
    with np.errstate(all="ignore"):
        up = h(f(a) + f(h(f(step) * f(h(i)))))
        down = h(f(b) - f(h(f(step) * f(h(steps - 1 - i)))))
    return np.where(i < steps // 2, up, down)


def _pow(base: float, e: float) -> float:
    """C's pow (numpy's differs from it in the last bit): NaN for a negative base to a
    fractional power, a signed infinity on overflow."""
    try:
        return math.pow(base, e)
    except ValueError:
        return math.nan
    except OverflowError:
        odd = base < 0 and e == int(e) and int(e) % 2 == 1
        return -math.inf if odd else math.inf


def _spaced_tensor(vals: np.ndarray, d: dt.DType, device, requires_grad: bool) -> Tensor:
    with np.errstate(all="ignore"):
        if d is dt.float16:                       # torch's Half from double goes via float
            vals = vals.astype(np.float32)
        host = np.trunc(vals) if d.is_int and vals.dtype.kind == "f" else vals
        host = host.astype(d.np)
    out = tensor(host, dtype=d, device=device)
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
    """Fill in place with samples of N(mean, std^2), drawn from `generator` (a
    `lazyt.Generator`) or lazyt's (`lazyt.manual_seed`); a leaf that requires grad only under `lazyt.no_grad()`."""
    t = _float_fill("normal_", input)
    if std < 0:
        raise InvalidArgumentError(f"normal_: std must be non-negative, got {std}")
    draw = randn(t.shape, generator=generator, dtype=t.dtype, device=t.device)
    return rebind(t, draw * std + mean, "normal_")


@method(function=False)
def uniform_(input, a: float = 0.0, b: float = 1.0, *,  # noqa: A002 - torch's name
             generator=None) -> Tensor:
    """Fill in place with samples of U(a, b) from lazyt's generator (torch's `from`/`to`)."""
    t = _float_fill("uniform_", input)
    if a > b:
        raise InvalidArgumentError(f"uniform_: expects a <= b, got a={a} and b={b}")
    draw = rand(t.shape, generator=generator, dtype=t.dtype, device=t.device)
    return rebind(t, draw * (b - a) + a, "uniform_")


install_methods(__name__)
