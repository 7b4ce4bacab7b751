"""The Fusion layer's intermediate representation: what a recorded op looks like.

Every op the layer receives becomes one `OperationIr` whose inputs and outputs are `TensorIr`s
(id, shape, dtype, status). Structural arguments (dims, target shapes, dtypes, which operands are
scalars) live in `args` and are part of the plan-cache key; scalar values and custom-op arguments
live in `scalars` and are not, so the same code run with other values reuses its plan.
"""
from __future__ import annotations

from enum import Enum
from operator import itemgetter

from ..dtype import DType


class TensorStatus(Enum):
    """Burn's tensor status: what the runtime may do with a tensor's buffer."""

    NOT_INIT = "not_init"      # recorded, not computed yet
    READ_ONLY = "read_only"    # materialized; someone may still read it
    READ_WRITE = "read_write"  # materialized, dead after this use: its buffer may be overwritten


class TensorIr(list):
    """One tensor as the IR sees it: `TensorIr((id, shape, dtype, status))`. `status` is
    decided by the optimizer (see TensorStatus).

    A list with named fields rather than a dataclass: one is made per recorded tensor, and a
    list is built in C (0.2 against 0.6 µs a tensor, on the recording hot path). Equality is
    identity, as for the dataclass it replaces."""

    __slots__ = ()
    id = property(itemgetter(0))
    shape = property(itemgetter(1))
    dtype = property(itemgetter(2))

    @property
    def status(self) -> "TensorStatus":
        return self[3]

    @status.setter
    def status(self, value: "TensorStatus") -> None:
        self[3] = value

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def copy(self) -> "TensorIr":
        return TensorIr(self)

    def __repr__(self) -> str:
        return f"t{self[0]}{list(self[1])}:{self[2].name}"


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


class OperationIr(tuple):
    """One recorded op: `OperationIr((kind, op, inputs, outputs, args, scalars, fn,
    location))`, every field given.

    - `kind`: the declared op (`lazyt.ops.OpDef`) or `CUSTOM`; `op`: the op code of a family
      (`UnaryOp`, `BinaryOp`, `ReduceOp`: the declaration's STATIC parameter named `op`), or
      for CUSTOM the op's name.
    - `inputs`, `outputs`: tuples of `TensorIr`.
    - `args`: structural arguments, part of the plan key. For BINARY/WHERE the first arg is the
      operand pattern, e.g. "ts" = tensor op scalar; then dims, shapes, dtypes as the op needs.
    - `scalars`: scalar operands and fill values (BINARY/WHERE/FULL) or the non-tensor arguments
      of a CUSTOM op; not part of the plan key.
    - `fn`: CUSTOM only: `fn(*input_primitives, *scalars)` runs at drain time on the inner
      backend's primitives and returns one primitive or a sequence (one per output).
    - `location`: "file:line" of the user code that recorded the op, kept for ops that can fail
      at drain time (custom, indexing; every op under LAZYT_DEBUG>=1).

    A tuple with named fields rather than a dataclass, for the cost of making one per recorded
    op; equality is identity, as for the dataclass it replaces.
    """

    __slots__ = ()
    kind = property(itemgetter(0))
    op = property(itemgetter(1))
    inputs = property(itemgetter(2))
    outputs = property(itemgetter(3))
    args = property(itemgetter(4))
    scalars = property(itemgetter(5))
    fn = property(itemgetter(6))
    location = property(itemgetter(7))

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other

    __hash__ = object.__hash__

    @property
    def name(self) -> str:
        if self[0] is CUSTOM:
            return str(self[1])
        if self[1] is not None:
            return self[1].value
        return self[0].label

    def __repr__(self) -> str:
        ins = ", ".join(map(repr, self.inputs))
        outs = ", ".join(map(repr, self.outputs))
        extra = f" args={self.args}" if self.args else ""
        sc = f" scalars={self.scalars}" if self.scalars else ""
        return f"{outs} = {self.name}({ins}){extra}{sc}"
