"""The backend-neutral description of a fused elementwise block, and the generic way to run one.

The Fusion layer groups connected elementwise ops into a `FusedBlock` and hands it to the base
backend's `run_fused`. A backend either generates one kernel per block (numpy: a chunked program
without per-op temporaries; wgpu/CUDA: one generated kernel) or falls back to `run_generic`,
which replays the block op by op through the backend's own primitives. The block lives here,
below the layers, because backends never import `lazyt.fusion`.

A block is SSA: instruction `i` defines value `i`. Operands are `Ref`s to a block input (a
tensor broadcast to the block's shape), a scalar (its value is given at run time, so one block
serves every scalar value), or an earlier instruction's value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..config import debug_level
from ..dtype import DType, float32
from ..ops import BinaryOp, UnaryOp
from ..shape import numel


@dataclass(frozen=True, slots=True)
class Ref:
    """An operand: `kind` is "in" (block input), "sc" (scalar) or "v" (instruction value)."""

    kind: str
    index: int

    def __repr__(self) -> str:
        return f"{self.kind}{self.index}"


@dataclass(frozen=True, slots=True, eq=False)
class FusedInstr:
    """`kind` is "unary", "binary", "where" (operands cond, lhs, rhs), "cast" or "full" (one
    scalar operand). `dtype` is the result's dtype."""

    kind: str
    op: UnaryOp | BinaryOp | None
    operands: tuple
    dtype: DType

    @property
    def name(self) -> str:
        return self.op.value if self.op is not None else self.kind

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(map(repr, self.operands))}) -> {self.dtype.name}"


@dataclass(frozen=True, eq=False)
class FusedBlock:
    """A fused elementwise block.

    - `shape`: every instruction's result has this shape; inputs broadcast to it (an input
      may be smaller than the block: it is read as if expanded).
    - `inputs`: (shape, dtype) of each input tensor.
    - `scalars`: the dtype each scalar operand is converted to.
    - `instrs`: the SSA program; `outputs`: the instruction values written out, in order.
    - `inplace`: (output k, input j) pairs: input j is dead after this block and owned by the
      runtime, so output k may be written into its buffer (same shape and dtype).
    - `cache`: per-backend artifacts of the block (numpy keeps its compiled program here; the
      Cube renderers memoize their sources by block instead).
    """

    shape: tuple
    inputs: tuple
    scalars: tuple
    instrs: tuple
    outputs: tuple
    inplace: tuple = ()
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def numel(self) -> int:
        return numel(self.shape)

    def listing(self) -> str:
        """A readable listing of the block's program (what LAZYT_DEBUG=2 prints for backends
        without generated code)."""
        lines = [f"fused block: {len(self.instrs)} ops, shape {self.shape}"]
        for j, (s, d) in enumerate(self.inputs):
            lines.append(f"  in{j}: {s} {d.name}")
        for j, d in enumerate(self.scalars):
            lines.append(f"  sc{j}: scalar {d.name}")
        outs = {v: k for k, v in enumerate(self.outputs)}
        for i, ins in enumerate(self.instrs):
            mark = f"  -> out{outs[i]}" if i in outs else ""
            lines.append(f"  v{i} = {ins!r}{mark}")
        if self.inplace:
            lines.append("  in place: " + ", ".join(f"out{k} into in{j}" for k, j in self.inplace))
        return "\n".join(lines)


def summed_inputs(block: FusedBlock) -> tuple | None:
    """The inputs `block` adds, in the order it adds them, when its one output is
    `x_i + x_j` or `(x_i + x_j) + x_k` of float32 inputs (adds only, no scalars; a sum is
    symmetric, so `x_k + (x_i + x_j)` counts too); else None."""
    instrs = block.instrs
    if len(block.outputs) != 1 or block.scalars or not 1 <= len(instrs) <= 2 or \
            block.outputs[0] != len(instrs) - 1 or \
            any(d is not float32 for _, d in block.inputs):
        return None
    order: list = []
    for n, ins in enumerate(instrs):
        if ins.kind != "binary" or ins.op is not BinaryOp.ADD or ins.dtype is not float32:
            return None
        a, b = ins.operands
        if n == 1 and a.kind == "in":     # x_k + (x_i + x_j): the same sum
            a, b = b, a
        want = ("in", "in") if n == 0 else ("v", "in")
        if (a.kind, b.kind) != want:
            return None
        order += [a.index, b.index] if n == 0 else [b.index]
    return tuple(order)


def run_generic(backend, block: FusedBlock, inputs: Sequence[Any],
                scalars: Sequence[Any]) -> list:
    """Run `block` op by op through `backend`'s primitives (correct on any backend; one
    temporary per op). An input given as None (failed upstream) makes every value that depends
    on it None, so the caller can tell which outputs could not be computed."""
    if not block.cache.get("listed") and debug_level() >= 2:
        print(block.listing(), flush=True)
        block.cache["listed"] = True
    values: list = []

    def get(ref: Ref):
        if ref.kind == "v":
            return values[ref.index]
        if ref.kind == "in":
            return inputs[ref.index]
        return scalars[ref.index]

    for ins in block.instrs:
        ops = [get(r) for r in ins.operands]
        if any(o is None for o in ops):
            values.append(None)
            continue
        if ins.kind == "unary":
            v = backend.unary(ins.op, ops[0])
        elif ins.kind == "binary":
            v = backend.binary(ins.op, ops[0], ops[1])
        elif ins.kind == "where":
            v = backend.where(ops[0], ops[1], ops[2])
        elif ins.kind == "cast":
            v = backend.cast(ops[0], ins.dtype)
        elif ins.kind == "full":
            v = backend.full(block.shape, ops[0], ins.dtype)
        else:  # pragma: no cover - the Fusion layer only builds the kinds above
            raise ValueError(f"fused block: unknown instruction kind {ins.kind!r}")
        values.append(v)
    # inputs may be smaller than the block (broadcast): so may the values computed from them
    return [_to_shape(backend, values[i], block.shape) for i in block.outputs]


def _to_shape(backend, v, shape: tuple):
    if v is None:
        return None
    s = tuple(backend.shape_of(v))
    if s == shape:
        return v
    if len(s) < len(shape):
        v = backend.reshape(v, (1,) * (len(shape) - len(s)) + s)
    return backend.expand(v, shape)
