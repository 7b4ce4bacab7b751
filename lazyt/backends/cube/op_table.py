"""The op tables of generated Cube kernels, in a neutral C-like form: one expression per
`UnaryOp` / `BinaryOp` and operand kind, `where`, and one `ReduceSpec` recipe per `ReduceOp`.

An expression is a `str` template or a `Select` / `AsBool` node. Templates name the operands
`{x}` (unary), `{a}` `{b}` (binary), `{c}` `{a}` `{b}` (where) and the operand type's literals
`{zero}` `{one}`; what they call is spelled the same in every Cube language (`exp`, `max`, and
the `lz_*` helpers, which each language defines in its helper file). Where the languages differ
(WGSL's `select(f, t, cond)` against C's ternary) the table holds a node, and the `Renderer` of
each language spells it. Values are compute-typed: a "bool" operand is a 0/1 unsigned int.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ...ops import BinaryOp, UnaryOp

#: The operand kinds the tables are keyed by (a dtype's `KernelType.kind`).
KINDS = ("float", "int", "bool")


@dataclass(frozen=True)
class Select:
    """`then` where `cond` holds, else `other`."""

    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True)
class AsBool:
    """A condition as a bool value (1u where it holds, else 0u)."""

    cond: Expr


Expr = Union[str, Select, AsBool]


def _all_kinds(expr: Expr) -> dict[str, Expr]:
    return {k: expr for k in KINDS}


UNARY: dict[UnaryOp, dict[str, Expr]] = {
    UnaryOp.NEG: {"float": "-({x})", "int": "-({x})"},
    UnaryOp.ABS: {"float": "abs({x})", "int": "abs({x})", "bool": "{x}"},
    UnaryOp.EXP: {"float": "exp({x})"},
    UnaryOp.LOG: {"float": "log({x})"},
    UnaryOp.SQRT: {"float": "sqrt({x})"},
    UnaryOp.RSQRT: {"float": "({one} / sqrt({x}))"},
    UnaryOp.TANH: {"float": "lz_tanh({x})"},
    UnaryOp.SIGMOID: {"float": "({one} / ({one} + exp(-({x}))))"},
    UnaryOp.SIN: {"float": "sin({x})"},
    UnaryOp.COS: {"float": "cos({x})"},
    UnaryOp.ERF: {"float": "lz_erf({x})"},
    UnaryOp.RELU: {"float": Select("lz_isnan({x})", "{x}", "max({x}, {zero})"),
                   "int": "max({x}, {zero})", "bool": "{x}"},
    UnaryOp.SIGN: {"float": Select("lz_isnan({x})", "{x}", "sign({x})"),
                   "int": Select("{x} < 0", "-1", Select("{x} > 0", "1", "0"))},
    UnaryOp.FLOOR: {"float": "floor({x})", "int": "{x}"},
    UnaryOp.CEIL: {"float": "ceil({x})", "int": "{x}"},
    UnaryOp.RECIPROCAL: {"float": "({one} / {x})"},
    UnaryOp.NOT: {"bool": AsBool("{x} == 0u")},
}

# Float "not equal" is !(a == b): some drivers compile `!=` as an ordered comparison, which
# makes NaN != NaN false.
BINARY: dict[BinaryOp, dict[str, Expr]] = {
    BinaryOp.ADD: {"float": "({a} + {b})", "int": "({a} + {b})", "bool": "({a} | {b})"},
    BinaryOp.SUB: {"float": "({a} - {b})", "int": "({a} - {b})"},
    BinaryOp.MUL: {"float": "({a} * {b})", "int": "({a} * {b})", "bool": "({a} & {b})"},
    BinaryOp.DIV: {"float": "({a} / {b})", "int": "lz_ifloordiv({a}, {b})"},
    BinaryOp.POW: {"float": "lz_pow({a}, {b})", "int": "lz_ipow({a}, {b})"},
    BinaryOp.MAXIMUM: {"float": "lz_fmax({a}, {b})", "int": "max({a}, {b})",
                       "bool": "max({a}, {b})"},
    BinaryOp.MINIMUM: {"float": "lz_fmin({a}, {b})", "int": "min({a}, {b})",
                       "bool": "min({a}, {b})"},
    BinaryOp.FLOOR_DIV: {"float": "lz_fdivmod({a}, {b}).x", "int": "lz_ifloordiv({a}, {b})"},
    BinaryOp.MOD: {"float": "lz_fdivmod({a}, {b}).y", "int": "lz_imod({a}, {b})"},
    BinaryOp.EQ: _all_kinds(AsBool("{a} == {b}")),
    BinaryOp.NE: _all_kinds(AsBool("!({a} == {b})")),
    BinaryOp.LT: _all_kinds(AsBool("{a} < {b}")),
    BinaryOp.LE: _all_kinds(AsBool("{a} <= {b}")),
    BinaryOp.GT: _all_kinds(AsBool("{a} > {b}")),
    BinaryOp.GE: _all_kinds(AsBool("{a} >= {b}")),
    BinaryOp.AND: {"bool": AsBool("({a} != 0u) && ({b} != 0u)")},
    BinaryOp.OR: {"bool": AsBool("({a} != 0u) || ({b} != 0u)")},
    # bitwise ops on integers and bools (bools are 0u / 1u words); shifts as numpy's: an
    # amount outside [0, bits) shifts everything out (lz_shl / lz_shr in the helpers)
    BinaryOp.BITAND: {"int": "({a} & {b})", "bool": "({a} & {b})"},
    BinaryOp.BITOR: {"int": "({a} | {b})", "bool": "({a} | {b})"},
    BinaryOp.BITXOR: {"int": "({a} ^ {b})", "bool": "({a} ^ {b})"},
    BinaryOp.SHL: {"int": "lz_shl({a}, {b})"},
    BinaryOp.SHR: {"int": "lz_shr({a}, {b})"},
}

#: where(cond, a, b) with `cond` a bool value.
WHERE: Expr = Select("{c} != 0u", "{a}", "{b}")


@dataclass(frozen=True)
class ReduceSpec:
    """One reduction for one accumulator type, as the reduce kernels read it: the accumulator's
    `identity`, the body of `combine(a: Acc, b: Acc) -> Acc` (`.v` the value, `.i` the index of
    arg reductions) and `finish`, the output value of the final accumulator `r`."""

    identity: str
    combine: str
    finish: str


__all__ = ["KINDS", "Select", "AsBool", "Expr", "UNARY", "BINARY", "WHERE", "ReduceSpec"]
