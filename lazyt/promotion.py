"""The promotion policy of the Tensor API, torch's: categories bool < integer < floating;
between dimensioned tensors the higher category's dtype, within one category the wider;
0-d tensors and Python numbers count by category only (they change the result only when
their category is higher than every dimensioned tensor's). Also the dtype each binary op
computes in."""
from __future__ import annotations

import numpy as np

from . import dtype as dt
from .errors import DTypeError
from .ops.codes import BinaryOp


#: Logical ops work on bools; ops that reject bool operands (as numpy and torch do).
LOGICAL = frozenset({BinaryOp.AND, BinaryOp.OR})
BITWISE = frozenset({BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR, BinaryOp.SHL,
                     BinaryOp.SHR})
SHIFTS = frozenset({BinaryOp.SHL, BinaryOp.SHR})
BOOL_FORBIDDEN = frozenset({BinaryOp.SUB, BinaryOp.POW, BinaryOp.FLOOR_DIV, BinaryOp.MOD})


def operand_dtype(op: BinaryOp, d: dt.DType) -> dt.DType:
    """The dtype both operands of `op` are cast to, given their promoted dtype `d`: bool for
    logical ops, the default float for true division of integers; `DTypeError` for bool
    operands of arithmetic numpy refuses (`-`, `**`, `//`, `%`)."""
    if op in LOGICAL:
        return dt.bool_
    if op in BITWISE and (d.is_float or (d is dt.bool_ and op in SHIFTS)):
        raise DTypeError(f"{op.value}: needs integer{'' if op in SHIFTS else ' or bool'} "
                         f"tensors, got {d.name}")
    if d.is_float:
        return d
    if op is BinaryOp.DIV:
        return dt.DEFAULT_FLOAT
    if d is dt.bool_ and op in BOOL_FORBIDDEN:
        raise DTypeError(f"{op.value}: not supported for bool tensors; cast with .int() "
                         "or .float() first")
    return d


def fit_int(op: str, s, d: dt.DType) -> int:
    """The Python integer `s` as a value of the integer dtype `d`; `DTypeError` when it is
    out of `d`'s range (torch raises for fills, and wraps in arithmetic; lazyt never wraps a
    scalar silently: `uint8_tensor + 300` raises, `uint8_tensor + 200` wraps the result)."""
    s = int(s)
    info = np.iinfo(d.np)
    if not info.min <= s <= info.max:
        raise DTypeError(f"{op}: the scalar {s} does not fit the tensor's dtype {d.name} "
                         f"({info.min}..{info.max})")
    return s


def int_scalar(op: BinaryOp, s, d: dt.DType, tensor_first: bool) -> int:
    """A Python integer operand of an integer op, checked against the tensor's dtype."""
    s = fit_int(op.value, s, d)
    if op is BinaryOp.POW and tensor_first and s < 0:
        raise DTypeError(f"pow: an integer tensor ({d.name}) to a negative integer power; "
                         "cast to float first")
    return s


def combine(higher: dt.DType | None, lower: dt.DType | None) -> dt.DType | None:
    """torch's `combine_categories`: the dtype of the `higher`-priority operands unless the
    `lower`-priority ones are of a higher category, then theirs (None: no such operand)."""
    if higher is None:
        return lower
    if lower is None or higher.category >= lower.category:
        return higher
    return lower


def pair_dtype(a: dt.DType, a_zero_dim: bool, b: dt.DType, b_zero_dim: bool) -> dt.DType:
    """The result dtype of two tensors of dtypes `a`, `b`, each 0-d or not (`binary`'s hot
    path of `result_type`)."""
    if a is b:
        return a
    if a_zero_dim == b_zero_dim:
        return dt.promote(a, b)
    return combine(b, a) if a_zero_dim else combine(a, b)


#: The dtype a Python number takes in promotion (torch: a float is the default float).
_SCALAR_DTYPE = {"bool": dt.bool_, "int": dt.DEFAULT_INT, "float": dt.DEFAULT_FLOAT}


def result_type(*operands) -> dt.DType:
    """torch.result_type of tensors (anything with a lazyt `dtype` and `ndim`) and Python
    numbers: dimensioned tensors first, then 0-d tensors, then numbers, each group counting
    only where its category is higher than the groups before it."""
    dims = zeros = numbers = None
    for o in operands:
        d = getattr(o, "dtype", None)
        if isinstance(d, dt.DType):
            if o.ndim:
                dims = d if dims is None else dt.promote(dims, d)
            else:
                zeros = d if zeros is None else dt.promote(zeros, d)
        else:
            d = _SCALAR_DTYPE[dt.scalar_kind(o)]
            numbers = d if numbers is None else dt.promote(numbers, d)
    out = combine(dims, combine(zeros, numbers))
    if out is None:
        raise DTypeError("result_type: expected at least one tensor or number")
    return out


def where_dtype(x, y) -> dt.DType:
    """The result dtype of `where(cond, x, y)`: `result_type(x, y)` (`cond` takes no part)."""
    return result_type(x, y)
