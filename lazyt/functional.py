"""Function forms of the Tensor methods: `lazyt.relu(x)`, `lazyt.softmax(x, dim)`, ..."""
from __future__ import annotations

from .tensor import (Tensor, _binary, cat, gather, index_add, index_select, matmul,  # noqa: F401
                     scatter_add, stack, where)
from .ops import BinaryOp


def _method(name: str):
    def fn(x: Tensor, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"`lazyt.{name}(x, ...)` is `x.{name}(...)`."
    return fn


_NAMES = ("relu gelu silu sigmoid tanh exp log sqrt rsqrt sin cos erf abs neg softmax "
          "log_softmax clamp sum mean max min prod argmax argmin var std reshape permute "
          "transpose squeeze unsqueeze flatten chunk split expand").split()
for _n in _NAMES:
    globals()[_n] = _method(_n)
del _n


def maximum(a, b) -> Tensor:
    return _binary(BinaryOp.MAXIMUM, a, b)


def minimum(a, b) -> Tensor:
    return _binary(BinaryOp.MINIMUM, a, b)


def add(a, b) -> Tensor:
    return _binary(BinaryOp.ADD, a, b)


def sub(a, b) -> Tensor:
    return _binary(BinaryOp.SUB, a, b)


def mul(a, b) -> Tensor:
    return _binary(BinaryOp.MUL, a, b)


def div(a, b) -> Tensor:
    return _binary(BinaryOp.DIV, a, b)


def pow(a, b) -> Tensor:
    return _binary(BinaryOp.POW, a, b)


__all__ = list(_NAMES) + ["maximum", "minimum", "add", "sub", "mul", "div", "pow", "cat",
                          "stack", "where", "matmul", "gather", "index_select", "index_add",
                          "scatter_add"]
