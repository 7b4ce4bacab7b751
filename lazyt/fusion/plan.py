"""An execution plan for a stream, and running it.

A plan refers to tensors by their relative number in the stream and to scalars by their
position, so one plan serves every stream with the same key. Running it touches only the
current stream's ops (for values: scalars, custom-op callables) and the inner backend.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..backends.fused import FusedBlock, run_generic
from ..errors import MetadataMismatchError
from ..ops import ParamKind
from .handle import Failure, Handles
from .ir import CUSTOM


def _custom(b, op, *xs):
    out = op.fn(*xs, *op.scalars)
    n = len(op.outputs)
    if n == 1:
        if isinstance(out, (list, tuple)):
            if len(out) != 1:
                raise MetadataMismatchError(f"{op.name}: returned {len(out)} outputs, its "
                                            "metadata declares 1")
            out = out[0]
        _check_output(b, op, 0, out)
        return out
    if not isinstance(out, (list, tuple)) or len(out) != n:
        got = len(out) if isinstance(out, (list, tuple)) else 1
        raise MetadataMismatchError(f"{op.name}: returned {got} outputs, its metadata "
                                    f"declares {n}")
    for i, o in enumerate(out):
        _check_output(b, op, i, o)
    return tuple(out)


def _check_output(b, op, i: int, out) -> None:
    """A custom op's real output against what its metadata declared when it was recorded
    (a tuple compare: always on; every later op was planned with the declared shape)."""
    ir = op.outputs[i]
    check_declared(b, op.name, i, out, ir.shape, ir.dtype)


def check_declared(b, name: str, i: int, out, shape: tuple, dtype) -> None:
    """`MetadataMismatchError` naming op `name` when its output `i` (a primitive of backend
    `b`) is not of the declared `shape` and `dtype`."""
    got_shape, got_dtype = tuple(b.shape_of(out)), b.dtype_of(out)
    if got_shape != shape or got_dtype is not dtype:
        raise MetadataMismatchError(
            f"{name}: output {i} is {got_shape}:{got_dtype.name} but the metadata declared "
            f"{shape}:{dtype.name}")


# kind -> fn(inner backend, OperationIr, *input primitives) -> output primitive(s); the Fusion
# layer adds one per declared opaque primitive (generated from its declaration).
RUNNERS = {CUSTOM: _custom}


@dataclass(eq=False)
class OpStep:
    """One opaque op, run through the inner backend's primitive."""

    index: int        # position of the op in the stream
    ins: tuple        # relative numbers read
    outs: tuple       # relative numbers written
    name: str
    nbytes: int       # bytes written
    drop: tuple = ()  # relative numbers whose last read is this step

    def run(self, inner, env, ops, scalars):
        op = ops[self.index]
        out = RUNNERS[op.kind](inner, op, *[env[r] for r in self.ins])
        outs = self.outs
        if len(outs) == 1:
            env[outs[0]] = out
        else:
            for r, o in zip(outs, out):
                env[r] = o

    def location(self, ops) -> str | None:
        return ops[self.index].location


@dataclass(eq=False)
class BlockStep:
    """One fused elementwise block, run by the inner backend's `run_fused`."""

    block: FusedBlock
    ins: tuple         # relative numbers of the block inputs
    outs: tuple        # relative numbers of the block outputs
    scalar_idx: tuple  # positions in the stream's scalar list, one per block scalar
    members: tuple     # stream positions of the ops in the block
    op_names: tuple
    nbytes: int
    out_deps: tuple    # per output: the block inputs it depends on
    drop: tuple = ()

    @property
    def name(self) -> str:
        return f"fused[{'+'.join(self.op_names)}]"

    def run(self, inner, env, ops, scalars):
        outs = inner.run_fused(self.block, [env[r] for r in self.ins],
                               [scalars[i] for i in self.scalar_idx])
        for r, o in zip(self.outs, outs):
            env[r] = o

    def location(self, ops) -> str | None:
        for i in self.members:
            if ops[i].location:
                return ops[i].location
        return None


@dataclass(eq=False)
class PrologueStep:
    """A fused elementwise block whose one value only an opaque op reads, run by that op's
    kernel (`Backend.run_prologue`): the kernel computes the block's value where it reads its
    first input, so the value never goes through memory (a residual add inside a layer norm's
    row kernel). A backend that cannot take the block's layouts runs the block, then the op."""

    block: FusedBlock
    ins: tuple         # relative numbers read: the block's inputs, then the op's other tensors
    n_block_ins: int   # how many of `ins` are the block's
    scalar_idx: tuple  # positions in the stream's scalar list, one per block scalar
    members: tuple     # stream positions of the block's ops
    op_names: tuple
    index: int         # stream position of the op
    outs: tuple        # relative numbers the op writes
    op_name: str
    nbytes: int
    drop: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.op_name}[fused[{'+'.join(self.op_names)}]]"

    def run(self, inner, env, ops, scalars):
        op = ops[self.index]
        n = self.n_block_ins
        tensors = iter([env[r] for r in self.ins[n:]])
        if op.kind is CUSTOM:
            name, layout = op.fn.prologue
            values = iter(op.scalars)
            args = tuple(next(tensors) if k == "t" else None if k == "n" else next(values)
                         for k in layout[1:])
        else:  # a declared primitive: its other arguments in parameter order
            name, args = op.kind.name, _primitive_args(op, tensors)
        out = inner.run_prologue(name, self.block, [env[r] for r in self.ins[:n]],
                                 [scalars[i] for i in self.scalar_idx], args)
        _check_output(inner, op, 0, out)
        env[self.outs[0]] = out

    def location(self, ops) -> str | None:
        return ops[self.index].location


def _primitive_args(op, tensors) -> tuple:
    """The arguments of recorded primitive `op` after its first tensor, in parameter order
    (`tensors` yields its other tensor inputs)."""
    out, k_arg, k_sc, first = [], 0, 0, True
    for p in op.kind.params:
        if p.kind.is_tensor:
            if first:
                first = False
            else:
                out.append(next(tensors))
        elif p.kind is ParamKind.STATIC and p.name == "op":
            out.append(op.op)
        elif p.kind is ParamKind.STATIC:
            out.append(op.args[k_arg])
            k_arg += 1
        else:
            out.append(op.scalars[k_sc])
            k_sc += 1
    return tuple(out)


@dataclass(eq=False)
class Plan:
    """What a drain does: load outside inputs, run the steps, keep the live outputs."""

    size: int            # relative numbers in the stream
    loads: tuple         # relative numbers of outside inputs read
    steps: tuple
    stores: tuple        # relative numbers kept after the drain (alive)
    owned: tuple         # stored ones whose buffer the runtime owns (in-place candidates later)
    shared: tuple = ()   # outside inputs an opaque op reads (its output may be a view of them)
    n_blocks: int = 0
    n_fused_ops: int = 0


@dataclass(eq=False)
class Program:
    """A plan captured by `lazyt.compile` with what running it again needs: the ops (custom
    ops' functions and scalars), the scalar list, and the tensor id of each relative number at
    capture (to find the function's inputs and results among them)."""

    plan: Plan
    key: tuple           # the stream's plan-cache key (two captures must agree)
    ops: list
    scalars: list
    ids: list            # relative number -> tensor id when captured
    metas: list          # relative number -> (shape, dtype)
    # tensor id -> value of each outside input when captured: a host constant made inside
    # the function may die (and lose its value) before the capture reads it
    ext_values: dict = field(default_factory=dict)


def execute(plan: Plan, stream, handles: Handles, inner, reports) -> None:
    """Run `plan` for `stream`. An op that raises marks its outputs, and everything computed
    from them, as failed; the other steps still run."""
    ids = list(stream.seen)
    env = [None] * plan.size
    values = handles.values
    failed: dict = {}
    for r in plan.loads:
        tid = ids[r]
        v = values.get(tid)
        if v is None:
            failed[r] = handles.failed[tid]
        env[r] = v
    ops = stream.ops
    scalars = stream.scalars
    for step in plan.steps:
        if failed and any(r in failed for r in step.ins):
            _run_with_failed_inputs(step, env, ops, scalars, inner, failed)
        else:
            try:
                step.run(inner, env, ops, scalars)
            except Exception as e:  # noqa: BLE001 - surfaces on read of the dependents
                f = Failure(e, step.name, step.location(ops))
                for r in step.outs:
                    failed[r] = f
        if reports:
            for rep in reports:
                rep._step(step)
        for r in step.drop:
            env[r] = None
    for r in plan.stores:
        f = failed.get(r)
        if f is None:
            values[ids[r]] = env[r]
        else:
            handles.failed[ids[r]] = f
    reusable = handles.reusable
    for r in plan.owned:
        if r not in failed:
            reusable.add(ids[r])
    for r in plan.shared:
        reusable.discard(ids[r])


def _run_with_failed_inputs(step, env, ops, scalars, inner, failed):
    if not isinstance(step, BlockStep):   # an opaque op (with or without a prologue)
        f = next(failed[r] for r in step.ins if r in failed)
        for r in step.outs:
            failed[r] = f
        return
    ins = [None if r in failed else env[r] for r in step.ins]
    try:
        outs = run_generic(inner, step.block, ins, [scalars[i] for i in step.scalar_idx])
    except Exception as e:  # noqa: BLE001
        f = Failure(e, step.name, step.location(ops))
        outs = [None] * len(step.outs)
        for r in step.outs:
            failed[r] = f
        return
    for k, (r, o) in enumerate(zip(step.outs, outs)):
        if o is None:
            j = next(j for j in step.out_deps[k] if step.ins[j] in failed)
            failed[r] = failed[step.ins[j]]
        else:
            env[r] = o
