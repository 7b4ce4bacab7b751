"""The op codes: one enum per elementwise/reduction family, shared by every layer and backend
(each member is one entry of the family's tables: numpy ufunc, kernel expression, gradient)."""
from __future__ import annotations

from enum import Enum


class UnaryOp(Enum):
    NEG = "neg"
    ABS = "abs"
    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    SIN = "sin"
    COS = "cos"
    ERF = "erf"
    RELU = "relu"
    SIGN = "sign"
    FLOOR = "floor"
    CEIL = "ceil"
    RECIPROCAL = "reciprocal"
    NOT = "logical_not"


class BinaryOp(Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "pow"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    FLOOR_DIV = "floor_div"
    MOD = "mod"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "logical_and"
    OR = "logical_or"
    BITAND = "bitwise_and"
    BITOR = "bitwise_or"
    BITXOR = "bitwise_xor"
    SHL = "bitwise_left_shift"
    SHR = "bitwise_right_shift"


class ReduceOp(Enum):
    SUM = "sum"
    MEAN = "mean"
    PROD = "prod"
    MAX = "max"
    MIN = "min"
    ARGMAX = "argmax"
    ARGMIN = "argmin"


COMPARISONS = frozenset({BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT,
                         BinaryOp.GE, BinaryOp.AND, BinaryOp.OR})
# Unary ops defined only on floats (an integer input is cast to the default float first).
FLOAT_UNARY = frozenset({UnaryOp.EXP, UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT, UnaryOp.TANH,
                         UnaryOp.SIGMOID, UnaryOp.SIN, UnaryOp.COS, UnaryOp.ERF,
                         UnaryOp.RECIPROCAL})
ARG_REDUCTIONS = frozenset({ReduceOp.ARGMAX, ReduceOp.ARGMIN})
