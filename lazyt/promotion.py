"""The promotion policy of the Tensor API: numpy's rules between tensors, weak Python scalars
(NEP 50, except that a float scalar makes an integer tensor float32), and the dtype each binary
op computes in."""
from __future__ import annotations

import numpy as np

from . import dtype as dt
from .errors import DTypeError
from .ops.codes import BinaryOp


#: Logical ops work on bools; ops that reject bool operands (as numpy and torch do).
LOGICAL = frozenset({BinaryOp.AND, BinaryOp.OR})
BOOL_FORBIDDEN = frozenset({BinaryOp.SUB, BinaryOp.POW, BinaryOp.FLOOR_DIV, BinaryOp.MOD})


def operand_dtype(op: BinaryOp, d: dt.DType) -> dt.DType:
    """The dtype both operands of `op` are cast to, given their promoted dtype `d`: bool for
    logical ops, the default float for true division of integers; `DTypeError` for bool
    operands of arithmetic numpy refuses (`-`, `**`, `//`, `%`)."""
    if op in LOGICAL:
        return dt.bool_
    if d.is_float:
        return d
    if op is BinaryOp.DIV:
        return dt.DEFAULT_FLOAT
    if d is dt.bool_ and op in BOOL_FORBIDDEN:
        raise DTypeError(f"{op.value}: not supported for bool tensors; cast with .int() "
                         "or .float() first")
    return d


def int_scalar(op: BinaryOp, s, d: dt.DType, tensor_first: bool) -> int:
    """A Python integer operand of an integer op, checked against the tensor's dtype."""
    s = int(s)
    info = np.iinfo(d.np)
    if not info.min <= s <= info.max:
        raise DTypeError(f"{op.value}: the scalar {s} does not fit the tensor's dtype {d.name}")
    if op is BinaryOp.POW and tensor_first and s < 0:
        raise DTypeError(f"pow: an integer tensor ({d.name}) to a negative integer power; "
                         "cast to float first")
    return s


def where_dtype(x, y, x_tensor: bool, y_tensor: bool) -> dt.DType:
    """The result dtype of `where(cond, x, y)`: tensors promote, scalars are weak."""
    if x_tensor and y_tensor:
        return dt.promote(x.dtype, y.dtype)
    if x_tensor:
        return dt.promote_scalar(x.dtype, dt.scalar_kind(y))
    if y_tensor:
        return dt.promote_scalar(y.dtype, dt.scalar_kind(x))
    kinds = {dt.scalar_kind(x), dt.scalar_kind(y)}
    return dt.DEFAULT_FLOAT if "float" in kinds else dt.DEFAULT_INT if "int" in kinds else dt.bool_
