"""torch.special's orthogonal polynomials: Chebyshev of the four kinds (`chebyshev_polynomial_t
u v w`) and their shifted forms on [0, 1], Hermite (`hermite_polynomial_h`, physicists';
`hermite_polynomial_he`, probabilists'), Laguerre and Legendre, each `f(input, n)`.

Evaluated as torch's kernels evaluate them: the three-term recurrence, with torch's special
values at the ends of the interval and, for the Chebyshev kinds at higher degrees inside it,
the trigonometric closed forms. `n` is a number or a tensor (truncated to an integer per
element; below 0 the value is 0); with a tensor `n` the recurrence runs to its largest degree,
read to the host, and each element keeps its own degree's value.
"""
from __future__ import annotations

import numbers

from . import dtype as dt
from .creation import full
from .errors import DTypeError
from .functional import floating, where
from .mathops import tensor_arg
from .tensor import Tensor

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]


def _args(op: str, input, n) -> tuple:  # noqa: A002 - torch's name
    """(x as a float tensor, n as an int64 tensor or a Python int, the largest degree)."""
    if not isinstance(input, Tensor) and not isinstance(n, Tensor):
        raise DTypeError(f"{op}: input or n must be a lazyt.Tensor")
    like = input if isinstance(input, Tensor) else n
    if isinstance(input, Tensor):
        x = floating(tensor_arg(op, input))
    else:
        d = like.dtype if like.dtype.is_float else dt.DEFAULT_FLOAT
        x = full((), float(input), dtype=d, device=like.device)
    if isinstance(n, Tensor):
        k = n.to(dt.int64) if not n.dtype.is_float else n.trunc().to(dt.int64)
        top = int(k.amax().item()) if k.numel() else 0
        return x, k, top
    if isinstance(n, bool) or not isinstance(n, numbers.Real):
        raise DTypeError(f"{op}: n must be a number or a tensor, got {type(n).__name__}")
    return x, int(n), int(n)


def _by_degree(x: Tensor, n, top: int, first, second, step) -> Tensor:
    """P_n(x) from P_0 = first, P_1 = second and P_{k+1} = step(k, P_k, P_{k-1}), each
    element at its own degree (0 below degree 0)."""
    p0 = first if isinstance(first, Tensor) else x * 0 + first
    if isinstance(n, int):
        if n < 0:
            return x * 0
        if n == 0:
            return p0
        p, q = p0, second
        for k in range(1, n):
            p, q = q, step(k, q, p)
        return q
    out = where(n == 0, p0, x * 0)
    if top >= 1:
        out = where(n == 1, second, out)
        p, q = p0, second
        for k in range(1, top):
            p, q = q, step(k, q, p)
            out = where(n == k + 1, q, out)
    return out


def _parity(n) -> Tensor | bool:
    return n % 2 == 0


def _pick(cond, a, b):
    if isinstance(cond, bool):
        return a if cond else b
    return where(cond, a, b)


def _nf(n, x: Tensor):
    return float(n) if isinstance(n, int) else n.to(x.dtype)


def _safe_acos(y: Tensor, inside: Tensor) -> Tensor:
    return where(inside, y, 0.0).acos()


# ---------------------------------------------------------------------- Chebyshev
def _cheb_t(x: Tensor, n, top: int, y: Tensor, trig_from: int) -> Tensor:
    rec = _by_degree(y, n, top, 1.0, y, lambda k, q, p: (y + y) * q - p)
    inside = y.abs() < 1
    theta = _safe_acos(y, inside)
    trig = (_nf(n, x) * theta).cos()
    return where(inside & _ge_any(n, trig_from), trig, rec)


def _ge_any(n, bound: int):
    return (n > bound) if isinstance(n, Tensor) else bool(n > bound)


def _finish(x: Tensor, n, value: Tensor, ends: list) -> Tensor:
    """`value` with torch's end values (condition, value) laid over it, and 0 for n < 0."""
    for cond, v in reversed(ends):
        value = where(cond, v, value)
    neg = (n < 0) if isinstance(n, Tensor) else n < 0
    return where(neg, 0.0, value) if isinstance(neg, Tensor) else (x * 0 if neg else value)


def chebyshev_polynomial_t(input, n) -> Tensor:  # noqa: A002 - torch's name
    """T_n(x): T_0 = 1, T_1 = x, T_{k+1} = 2x T_k - T_{k-1}; cos(n acos x) inside (-1, 1) for
    n > 6."""
    x, k, top = _args("chebyshev_polynomial_t", input, n)
    value = _cheb_t(x, k, top, x, 6)
    end = _pick(_parity(k), x * 0 + 1, where(x > 0, 1.0, -1.0))
    return _finish(x, k, value, [(x.abs() == 1, where(x > 0, 1.0, end))])


def _cheb_u_value(x: Tensor, k, top: int, y: Tensor, trig_from: int) -> Tensor:
    rec = _by_degree(y, k, top, 1.0, y + y, lambda j, q, p: (y + y) * q - p)
    inside = y.abs() < 1
    theta = _safe_acos(y, inside)
    s = theta.sin()
    nf = _nf(k, x)
    trig = where(s != 0, ((nf + 1) * theta).sin() / where(s != 0, s, 1.0),
                 (nf + 1) * ((nf + 1) * theta).cos() / y)
    return where(inside & _ge_any(k, trig_from), trig, rec)


def chebyshev_polynomial_u(input, n) -> Tensor:  # noqa: A002 - torch's name
    """U_n(x): U_0 = 1, U_1 = 2x, then as T; sin((n+1) t) / sin t (t = acos x) for n > 8."""
    x, k, top = _args("chebyshev_polynomial_u", input, n)
    value = _cheb_u_value(x, k, top, x, 8)
    nf = _nf(k, x)
    end = where((x > 0) | _as_tensor_bool(_parity(k), x), nf + 1, -(nf + 1))
    return _finish(x, k, value, [(x.abs() == 1, end)])


def _as_tensor_bool(v, like: Tensor):
    return v if isinstance(v, Tensor) else (like == like) if v else (like != like) & (like == like)


def _cheb_v_value(x: Tensor, k, top: int, y: Tensor, trig_from: int) -> Tensor:
    rec = _by_degree(y, k, top, 1.0, y + y - 1, lambda j, q, p: (y + y) * q - p)
    inside = y.abs() < 1
    theta = _safe_acos(y, inside)
    nf = _nf(k, x)
    c = (theta / 2).cos()
    odd_end = where(_as_tensor_bool(_parity(k), x), nf + nf + 1, -(nf + nf + 1))
    trig = where((theta / 2).sin() != 1, ((nf + 0.5) * theta).cos() / where(c != 0, c, 1.0),
                 odd_end)
    return where(inside & _ge_any(k, trig_from), trig, rec)


def chebyshev_polynomial_v(input, n) -> Tensor:  # noqa: A002 - torch's name
    """V_n(x): V_0 = 1, V_1 = 2x - 1, then as T; cos((n+1/2) t) / cos(t/2) for n > 8."""
    x, k, top = _args("chebyshev_polynomial_v", input, n)
    value = _cheb_v_value(x, k, top, x, 8)
    nf = _nf(k, x)
    end = where(x > 0, 1.0, where(_as_tensor_bool(_parity(k), x), nf + nf + 1, -(nf + nf + 1)))
    return _finish(x, k, value, [(x.abs() == 1, end)])


def _cheb_w_value(x: Tensor, k, top: int, y: Tensor, trig_from: int) -> Tensor:
    rec = _by_degree(y, k, top, 1.0, y + y + 1, lambda j, q, p: (y + y) * q - p)
    inside = y.abs() < 1
    theta = _safe_acos(y, inside)
    nf = _nf(k, x)
    s = (theta / 2).sin()
    end = where(y > 0, nf + nf + 1, where(_as_tensor_bool(_parity(k), x), 1.0, -1.0))
    trig = where((theta / 2).cos() != 1, ((nf + 0.5) * theta).sin() / where(s != 0, s, 1.0),
                 end)
    return where(inside & _ge_any(k, trig_from), trig, rec)


def chebyshev_polynomial_w(input, n) -> Tensor:  # noqa: A002 - torch's name
    """W_n(x): W_0 = 1, W_1 = 2x + 1, then as T; sin((n+1/2) t) / sin(t/2) for n > 8."""
    x, k, top = _args("chebyshev_polynomial_w", input, n)
    value = _cheb_w_value(x, k, top, x, 8)
    nf = _nf(k, x)
    end = where(x > 0, nf + nf + 1, where(_as_tensor_bool(_parity(k), x), 1.0, -1.0))
    return _finish(x, k, value, [(x.abs() == 1, end)])


def shifted_chebyshev_polynomial_t(input, n) -> Tensor:  # noqa: A002 - torch's name
    """T*_n(x) = T_n(2x - 1), on [0, 1]."""
    x, k, top = _args("shifted_chebyshev_polynomial_t", input, n)
    value = _cheb_t(x, k, top, x + x - 1, 6)
    zero_end = where(_as_tensor_bool(_parity(k), x), 1.0, -1.0)
    return _finish(x, k, value, [(x == 1, x * 0 + 1), (x == 0, zero_end)])


def shifted_chebyshev_polynomial_u(input, n) -> Tensor:  # noqa: A002 - torch's name
    """U*_n(x) = U_n(2x - 1)."""
    x, k, top = _args("shifted_chebyshev_polynomial_u", input, n)
    value = _cheb_u_value(x, k, top, x + x - 1, 6)
    nf = _nf(k, x)
    zero_end = where(_as_tensor_bool(_parity(k), x), nf + 1, -(nf + 1))
    return _finish(x, k, value, [(x == 1, x * 0 + nf + 1), (x == 0, zero_end)])


def shifted_chebyshev_polynomial_v(input, n) -> Tensor:  # noqa: A002 - torch's name
    """V*_n(x) = V_n(2x - 1)."""
    x, k, top = _args("shifted_chebyshev_polynomial_v", input, n)
    value = _cheb_v_value(x, k, top, x + x - 1, 6)
    nf = _nf(k, x)
    zero_end = where(_as_tensor_bool(_parity(k), x), nf + nf + 1, -(nf + nf + 1))
    return _finish(x, k, value, [(x == 1, x * 0 + 1), (x == 0, zero_end)])


def shifted_chebyshev_polynomial_w(input, n) -> Tensor:  # noqa: A002 - torch's name
    """W*_n(x) = W_n(2x - 1)."""
    x, k, top = _args("shifted_chebyshev_polynomial_w", input, n)
    value = _cheb_w_value(x, k, top, x + x - 1, 4)
    nf = _nf(k, x)
    zero_end = where(_as_tensor_bool(_parity(k), x), 1.0, -1.0)
    return _finish(x, k, value, [(x == 1, x * 0 + nf + nf + 1), (x == 0, zero_end)])


# ---------------------------------------------------------------------- Hermite, Laguerre, Legendre
def hermite_polynomial_h(input, n) -> Tensor:  # noqa: A002 - torch's name
    """Physicists' H_n: H_0 = 1, H_1 = 2x, H_{k+1} = 2x H_k - 2k H_{k-1}."""
    x, k, top = _args("hermite_polynomial_h", input, n)
    value = _by_degree(x, k, top, 1.0, x + x, lambda j, q, p: (x + x) * q - (2 * j) * p)
    return _finish(x, k, value, [])


def hermite_polynomial_he(input, n) -> Tensor:  # noqa: A002 - torch's name
    """Probabilists' He_n: He_0 = 1, He_1 = x, He_{k+1} = x He_k - k He_{k-1}."""
    x, k, top = _args("hermite_polynomial_he", input, n)
    value = _by_degree(x, k, top, 1.0, x, lambda j, q, p: x * q - j * p)
    return _finish(x, k, value, [])


def laguerre_polynomial_l(input, n) -> Tensor:  # noqa: A002 - torch's name
    """L_n: L_0 = 1, L_1 = 1 - x, L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)."""
    x, k, top = _args("laguerre_polynomial_l", input, n)
    value = _by_degree(x, k, top, 1.0, 1 - x,
                       lambda j, q, p: (((j + j) + (1 - x)) * q - j * p) / (j + 1))
    return _finish(x, k, value, [(x.abs() == 0, x * 0 + 1)])


def legendre_polynomial_p(input, n) -> Tensor:  # noqa: A002 - torch's name
    """P_n: P_0 = 1, P_1 = x, P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1)."""
    x, k, top = _args("legendre_polynomial_p", input, n)
    value = _by_degree(x, k, top, 1.0, x,
                       lambda j, q, p: ((j + j + 1) * x * q - j * p) / (j + 1))
    nf_even = _as_tensor_bool(_parity(k), x)
    end = where((x > 0) | _as_tensor_bool(k == 0 if isinstance(k, Tensor) else k == 0, x),
                1.0, where(nf_even, 1.0, -1.0))
    return _finish(x, k, value, [(x.abs() == 1, end)])

