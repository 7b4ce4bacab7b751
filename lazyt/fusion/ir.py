"""The Fusion layer's intermediate representation: what a recorded op looks like.

Every op the layer receives becomes one `OperationIr` whose inputs and outputs are `TensorIr`s
(id, shape, dtype, status). Structural arguments (dims, target shapes, dtypes, which operands are
scalars) live in `args` and are part of the plan-cache key; scalar values and custom-op arguments
live in `scalars` and are not, so the same code run with other values reuses its plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from ..dtype import DType


class TensorStatus(Enum):
    """Burn's tensor status: what the runtime may do with a tensor's buffer."""

    NOT_INIT = "not_init"      # recorded, not computed yet
    READ_ONLY = "read_only"    # materialized; someone may still read it
    READ_WRITE = "read_write"  # materialized, dead after this use: its buffer may be overwritten


@dataclass(slots=True, eq=False)
class TensorIr:
    """One tensor as the IR sees it. `status` is decided by the optimizer (see TensorStatus)."""

    id: int
    shape: tuple
    dtype: DType
    status: TensorStatus

    def __repr__(self) -> str:
        return f"t{self.id}{list(self.shape)}:{self.dtype.name}"


class CustomKind:
    """The kind of opaque ops recorded with a function to run at drain time (extension ops,
    composites recorded as one backend kernel). Declared ops are their own kind: their
    `OpDef` (`lazyt.ops`), which has the same `label`/`elementwise`/`absorbable` answers."""

    label = "custom"
    elementwise = False
    absorbable = False
    instr = None

    def __repr__(self) -> str:
        return "CUSTOM"


CUSTOM = CustomKind()


@dataclass(slots=True, eq=False)
class OperationIr:
    """One recorded op.

    - `kind`: the declared op (`lazyt.ops.OpDef`) or `CUSTOM`; `op`: the op code of a family
      (`UnaryOp`, `BinaryOp`, `ReduceOp`: the declaration's STATIC parameter named `op`), or
      for CUSTOM the op's name.
    - `args`: structural arguments, part of the plan key. For BINARY/WHERE the first arg is the
      operand pattern, e.g. "ts" = tensor op scalar; then dims, shapes, dtypes as the op needs.
    - `scalars`: scalar operands and fill values (BINARY/WHERE/FULL) or the non-tensor arguments
      of a CUSTOM op; not part of the plan key.
    - `fn`: CUSTOM only: `fn(*input_primitives, *scalars)` runs at drain time on the inner
      backend's primitives and returns one primitive or a sequence (one per output).
    - `location`: "file:line" of the user code that recorded the op, kept for ops that can fail
      at drain time (custom, indexing; every op under LAZYT_DEBUG>=1).
    """

    kind: Any
    op: Any
    inputs: tuple
    outputs: tuple
    args: tuple = ()
    scalars: tuple = ()
    fn: Callable | None = None
    location: str | None = None

    @property
    def name(self) -> str:
        if self.kind is CUSTOM:
            return str(self.op)
        if self.op is not None:
            return self.op.value
        return self.kind.label

    def __repr__(self) -> str:
        ins = ", ".join(map(repr, self.inputs))
        outs = ", ".join(map(repr, self.outputs))
        extra = f" args={self.args}" if self.args else ""
        sc = f" scalars={self.scalars}" if self.scalars else ""
        return f"{outs} = {self.name}({ins}){extra}{sc}"
