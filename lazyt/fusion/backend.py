"""`Fusion(inner)`: the lazy layer (Burn's `burn-fusion`).

Every op records an `OperationIr` and returns a `FusionTensor` at once; its shape and dtype
come from the op's declared rule (`lazyt.ops`), so shape errors are raised here, at record time.
Nothing runs until a read (`to_numpy`), `sync()`, or the stream reaching `max_ops`. Then the
stream's plan is looked up by key (or built by the optimizer on a miss) and run on the inner
backend: fused elementwise blocks through `inner.run_fused`, everything else through its
kernels.

The recorders are generated from the declarations, one rule for every op: elementwise ops
become block instructions, other primitives opaque steps. A composite is recorded as one
opaque op when the inner backend has a kernel for it (a method of the composite's name,
`lazyt.ops.kernel(when=...)` narrowing when), else as its primitives, which fuse.
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from .. import dtype as dt
from .. import ops
from ..backends import selectors
from ..backends.base import Backend, kernel_of, missing_kernel
from ..backends.selectors import register_layer
from ..config import debug_level
from ..dtype import DType
from ..shape import broadcast as _broadcast
from ..capture_state import STATE as _CAPTURE
from ..capture_state import refuse as _refuse
from ..errors import CaptureError, DTypeError, FusionError
from ..ops import BinaryOp, Out, ParamKind, UnaryOp, kernel_when
from .cache import PlanCache
from .extension import run as _run_extension
from .handle import Failure, FusionTensor, Handles
from .inspect import _ACTIVE
from .optimizer import build_plan
from .plan import RUNNERS, Program, check_declared, execute
from .stream import OperationStream, user_location

FT = FusionTensor
_SCALAR_TYPES = (bool, int, float)
_EMPTY = ()

#: Binary and unary ops whose result keeps a float operand's dtype (comparisons give bool):
#: the ones `fast_binary` / `fast_unary` take, keyed by op code.
#: (String keys: hashing an Enum is slow.)
_FAST_BINARY = frozenset(op._value_ for op in (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL,
                                               BinaryOp.DIV, BinaryOp.POW, BinaryOp.MAXIMUM,
                                               BinaryOp.MINIMUM))
_FAST_UNARY = frozenset(op._value_ for op in UnaryOp if op is not UnaryOp.NOT)
_TT, _TS, _ST = ("tt",), ("ts",), ("st",)

#: Process the release queue while recording once it holds this many entries (and at drains).
_RELEASE_BATCH = 256
#: Drain when this many ops are pending (`Fusion(inner, max_ops=...)` changes it).
DEFAULT_MAX_OPS = 32768


def _scalar(op: str, value):
    """`value` as a Python scalar; `op` names the op in the error."""
    if type(value) in _SCALAR_TYPES:
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    raise DTypeError(f"{op}: expected a tensor of this device or a real scalar, got "
                     f"{type(value).__name__}")


def _not_ours(op: str, x) -> DTypeError:
    return DTypeError(f"{op}: tensor inputs must be tensors of this layer, got "
                      f"{type(x).__name__}")


class Fusion(Backend):
    """Records ops lazily on top of `inner` and runs them fused when a value is needed."""

    name = "fusion"
    is_layer = True

    def __init__(self, inner: Backend, *, max_ops: int | None = None,
                 cache_size: int | None = None):
        self.inner = inner
        self.handles = Handles()
        self.stream = OperationStream(self.handles)
        self.cache = PlanCache() if cache_size is None else PlanCache(cache_size)
        self.max_ops = DEFAULT_MAX_OPS if max_ops is None else max_ops
        self._lock = threading.RLock()
        self._draining = False
        self._ending_capture = False    # finish_capture's own drain (allowed while capturing)
        self._trace = debug_level() >= 1
        # a base backend that checks dtypes per device (wgpu: no float64) is asked at record
        # time, for every dtype outside those it says it holds
        self._check_dtype = getattr(inner, "check_dtype", None)
        dtypes = getattr(inner, "dtypes", None)
        self._dtypes_ok = frozenset(dtypes()) if dtypes is not None else None
        # asynchronous base (a GPU queue): start pending work before an independent op
        self._overlap = getattr(inner, "overlap_elements", None)
        self._composite_fns: dict = {}  # (op name, argument layout) -> drain-time function
        self.fast = self                # the front end records common ops here directly
        self._binary_def = ops.lookup("binary")
        self._unary_def = ops.lookup("unary")
        self._extension_runners: dict = {}  # (extension op, argument layout) -> the same
        # declared primitives whose inner kernel takes a fused block in front of its input
        # (ones with operand parameters, whose pattern is part of their arguments, are not
        # supported: `plan._primitive_args` does not unpack them)
        self.prologue_prims = frozenset(
            n for n in getattr(inner, "prologue_ops", ())
            if ops.find(n) is not None and not ops.find(n).is_composite
            and not any(p.kind is ops.ParamKind.OPERAND for p in ops.find(n).params))

    def __repr__(self) -> str:
        return f"Fusion({self.inner!r})"

    # ---------------------------------------------------------------- recording
    def _rec(self, kind, op, args: tuple, inputs: tuple, scalars: tuple, shape: tuple,
             dtype: DType, location: str | None = None) -> FT:
        with self._lock:
            if self._draining:
                raise FusionError(f"{op.value if hasattr(op, 'value') else kind.label}: cannot "
                                  "record ops on a Fusion layer while it runs its pending ops "
                                  "(an impl called the layer instead of its base primitives)")
            if location is None and self._trace:
                location = user_location(3)
            stream = self.stream
            session = _CAPTURE.session
            if session is not None and session.mine():   # lazyt.compile: one stream, uncut
                return stream.record(kind, op, args, inputs, scalars, shape, dtype, location)
            if self._overlap and inputs and stream.ops and stream.independent(inputs) and \
                    stream.work() >= self._overlap:
                self._drain()
            out = stream.record(kind, op, args, inputs, scalars, shape, dtype, location)
            if len(stream.ops) >= self.max_ops:
                self._drain()
            elif len(self.handles.released) >= _RELEASE_BATCH:
                self.handles.process(stream.seen)  # a safe point: free what died
            return out

    # ---------------------------------------------------------------- the front end's fast path
    def fast_binary(self, op: BinaryOp, a, b) -> FT | None:
        """`binary(op, a, b)` for the front end's commonest call, recorded without the generic
        checks: two float tensors of this layer with one dtype (broadcasting), or one such
        tensor and a Python int or float (either side), for an op whose result keeps that
        dtype. None for anything else: the caller then takes the general path, which records
        the same op for these cases (the tests compare both)."""
        if op._value_ not in _FAST_BINARY:
            return None
        ta, tb = type(a), type(b)
        if ta is FT:
            d = a.dtype
            shape = a.shape
            if tb is FT:
                if b.dtype is not d:
                    return None
                if b.shape != shape:    # the shape rule's own broadcast (and its error)
                    shape = _broadcast(op._value_, shape, b.shape)
                pat, ins, sc = _TT, (a, b), _EMPTY
            elif tb is float or tb is int:
                pat, ins, sc = _TS, (a,), (b,)
            else:
                return None
        elif tb is FT and (ta is float or ta is int):
            d = b.dtype
            pat, ins, sc, shape = _ST, (b,), (a,), b.shape
        else:
            return None
        ok = self._dtypes_ok
        if not d.is_float or (ok is not None and d not in ok):
            return None
        return self._rec(self._binary_def, op, pat, ins, sc, shape, d)

    def fast_unary(self, op: UnaryOp, x) -> FT | None:
        """`unary(op, x)` for a float tensor of this layer (every unary op but logical_not
        keeps a float dtype); None for anything else."""
        if type(x) is not FT or op._value_ not in _FAST_UNARY:
            return None
        d = x.dtype
        ok = self._dtypes_ok
        if not d.is_float or (ok is not None and d not in ok):
            return None
        return self._rec(self._unary_def, op, _EMPTY, (x,), _EMPTY, x.shape, d)

    # ---------------------------------------------------------------- creation/transfer
    def from_numpy(self, array: np.ndarray) -> FT:
        d = dt.from_numpy(array.dtype)
        return self.wrap(self.inner.from_numpy(array), tuple(array.shape), d)

    def to_numpy(self, x: FT) -> np.ndarray:
        if _CAPTURE.session is not None:
            _refuse("reading a tensor's values (numpy(), item(), tolist(), print, bool(), "
                    f"float(); shape {x.shape})", "a replay would not see the value; return "
                    "the tensor from the function and read it after the call")
        return self.inner.to_numpy(self.materialize(x))

    def host_value(self, x: FT) -> np.ndarray | None:
        """The inner layer's host array of `x` if `x` already has its value (never drains)."""
        if type(x) is not FT:
            return None
        v = self.handles.values.get(x.id)
        return None if v is None else self.inner.host_value(v)

    def shape_of(self, x: FT) -> tuple:
        return x.shape

    def dtype_of(self, x: FT) -> DType:
        return x.dtype

    def empty(self, shape: tuple, dtype: DType) -> FT:
        return self.full(shape, 0, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> FT:
        return self.full(shape, 0, dtype)

    def run_extension(self, op, args: list, is_tensor: list, declared):
        return _run_extension(self, op, args, is_tensor, declared)

    # ---------------------------------------------------------------- custom ops (extensions)
    def custom(self, name: str, fn: Callable, inputs: Sequence[FT], outputs: Sequence,
               scalars: tuple = (), *, location: str | None = None) -> list:
        """Record an opaque op: at drain time `fn(*input_primitives, *scalars)` runs on the
        inner backend's primitives and returns one primitive per `(shape, dtype)` in
        `outputs` (a sequence of them when there are several). Returns the output tensors.
        `fn` is part of the plan key (use a stable function, not a new closure per call);
        `scalars` are not."""
        for x in inputs:
            if type(x) is not FT:
                raise DTypeError(f"{name}: tensor inputs must be tensors of this layer, got "
                                 f"{type(x).__name__}")
        outputs = [(tuple(int(s) for s in shape), d) for shape, d in outputs]
        if location is None:
            location = user_location(2)
        with self._lock:
            if self._draining:
                raise FusionError(f"{name}: cannot record ops on a Fusion layer while it runs "
                                  "its pending ops")
            stream = self.stream
            capturing = _CAPTURE.session is not None and _CAPTURE.session.mine()
            if not capturing and self._overlap and inputs and stream.ops and \
                    stream.independent(inputs) and stream.work() >= self._overlap:
                self._drain()
            if self.handles.released:
                self.handles.process(self.stream.seen)
            outs = self.stream.record_custom(name, fn, tuple(inputs), outputs, tuple(scalars),
                                             location)
            if not capturing and len(self.stream.ops) >= self.max_ops:
                self._drain()
            return outs

    def eager(self, fn: Callable, inputs: Sequence[FT], scalars: tuple = ()):
        """Run `fn(*input_primitives, *scalars)` now (for ops whose output shape depends on
        the data): drains what is pending, returns the outputs as materialized tensors (one,
        or a list when `fn` returns a list/tuple)."""
        _refuse(f"an op whose output shape depends on the values ({getattr(fn, '__name__', fn)})",
                "a replay could not know the shape; move it out of the compiled function")
        prims = [self.materialize(x) for x in inputs]
        out = fn(*prims, *scalars)
        if isinstance(out, (list, tuple)):
            return [self.wrap(o) for o in out]
        return self.wrap(out)

    def materialize(self, x: FT):
        """The inner primitive holding `x`'s value (runs what is pending if needed). The
        caller may keep it, so the runtime never writes into that buffer again."""
        if type(x) is not FT:
            raise DTypeError(f"expected a tensor of this Fusion layer, got {type(x).__name__}")
        with self._lock:
            h = self.handles
            tid = x.id
            v = h.values.get(tid)
            if v is None:
                if tid in self.stream.seen:
                    self._drain()
                    v = h.values.get(tid)
                if v is None:
                    f = h.failed.get(tid)
                    if f is not None:
                        f.raise_(tid)
                    raise FusionError(f"tensor {tid} {x.shape} {x.dtype.name} has no value in "
                                      "this Fusion layer (a tensor of another device's stack?)")
            h.reusable.discard(tid)
            return v

    def wrap(self, prim, shape: tuple | None = None, dtype: DType | None = None) -> FT:
        """A materialized tensor holding an inner primitive (the runtime never overwrites it)."""
        if shape is None:
            shape = tuple(self.inner.shape_of(prim))
        if dtype is None:
            dtype = self.inner.dtype_of(prim)
        with self._lock:
            t = self.handles.new(shape, dtype)
            self.handles.values[t.id] = prim
            return t

    # ---------------------------------------------------------------- draining
    def sync(self) -> None:
        """Run every pending op, then wait for the inner backend (a GPU queue) to finish."""
        _refuse("lazyt.sync", "the recorded function runs as one piece; sync after the call")
        self._drain()
        self.inner.sync()

    def collect(self) -> None:
        """A safe point: drop the values of tensors that died (a replay that runs no plan
        calls this before it asks whether a buffer it handed out is still held)."""
        h = self.handles
        if h.released:
            with self._lock:
                h.process(self.stream.seen)

    def pending_after_release(self) -> int:
        """Free what died (a safe point), then the number of pending ops."""
        h = self.handles
        if h.released:
            h.process(self.stream.seen)
        return len(self.stream.ops)

    def _drain(self):
        """Run the pending ops; returns the plan that ran (None when nothing was pending)."""
        with self._lock:
            stream, h = self.stream, self.handles
            if not self.pending_after_release():
                return None
            if _CAPTURE.session is not None and not self._ending_capture:
                raise CaptureError(f"a value was needed inside a function compiled with "
                                   f"lazyt.compile ({_CAPTURE.session.name}) while "
                                   f"{len(stream.ops)} ops were pending; a replay runs the "
                                   "function's ops as one piece, without reading values")
            if self._draining:
                raise FusionError("fusion: a drain was requested while the layer was draining")
            self._draining = True
            try:
                reports = _ACTIVE.get()
                key = stream.key(h.counts)
                plan = self.cache.get(key)
                if reports:
                    for rep in reports:
                        rep._drain(plan is not None)
                if plan is None:
                    plan = build_plan(stream, key, self.prologue_prims,
                                      getattr(self.inner, "takes_prologue", None))
                    self.cache.put(key, plan)
                execute(plan, stream, h, self.inner, reports)
                return plan
            except BaseException as e:
                self._fail_pending(e)
                raise
            finally:
                ext_ids = [tid for *_, tid in stream.ext]
                stream.reset()
                self._trace = debug_level() >= 1  # LAZYT_DEBUG, read per stream
                self._draining = False
                h.drop_dead(ext_ids)

    def _fail_pending(self, error: BaseException) -> None:
        """The runtime itself failed mid-drain: pending live tensors without a value fail."""
        h = self.handles
        f = Failure(error, "fusion drain", None)
        for op in self.stream.ops:
            for t in op.outputs:
                if t.id in h.counts and t.id not in h.values:
                    h.failed.setdefault(t.id, f)

    # ---------------------------------------------------------------- capture (lazyt.compile)
    def finish_capture(self) -> Program | None:
        """The end of a function recorded by `lazyt.compile`: plan and run the one stream it
        recorded, and return what a replay needs (None when it recorded nothing here). Outside
        inputs are never written in place, so a replay never touches a caller's buffer."""
        with self._lock:
            stream, h = self.stream, self.handles
            if not self.pending_after_release():
                return None
            ext_values = {}
            for *_, tid in stream.ext:
                h.reusable.discard(tid)
                if tid in h.values:
                    ext_values[tid] = h.values[tid]
            ids = list(stream.seen)
            metas = [(ir.shape, ir.dtype) for ir in stream.irs]
            ops, scalars = stream.ops, stream.scalars
            key = stream.key(h.counts)
            self._ending_capture = True
            try:
                plan = self._drain()
            finally:
                self._ending_capture = False
            return Program(plan, key, ops, scalars, ids, metas, ext_values)

    def run_program(self, program: Program, loads: list, results: Sequence[int]) -> list:
        """Run a captured program on new outside inputs (inner primitives, in
        `program.plan.loads` order); returns the inner primitives at relative numbers
        `results`. Nothing is recorded or planned: the steps run as they were planned."""
        plan = program.plan
        ops, scalars, inner = program.ops, program.scalars, self.inner
        with self._lock:
            if self._draining:
                raise FusionError("a compiled function was called while this layer ran its "
                                  "pending ops")
            h = self.handles
            if len(h.released) >= _RELEASE_BATCH:
                h.process(self.stream.seen)   # free what died (replays never drain)
            self._draining = True
            try:
                env = [None] * plan.size
                for r, v in zip(plan.loads, loads):
                    env[r] = v
                for step in plan.steps:
                    step.run(inner, env, ops, scalars)
                    for r in step.drop:
                        env[r] = None
                return [env[r] for r in results]
            finally:
                self._draining = False

    @property
    def pending(self) -> int:
        """Number of recorded ops not run yet."""
        return len(self.stream.ops)



# ---------------------------------------------------------------------------- generated recorders
def _operand_branches(operands: list, tensors: list, indent: str) -> list:
    """Nested ifs over the OPERAND parameters (tensor or scalar) setting the operand pattern
    (part of the IR's args), the tensor inputs and the scalars, without building strings at
    run time."""
    tensors_before = "".join(f"{t}, " for t in tensors)

    def rec(i, pattern, ins, scs, pad):
        if i == len(operands):
            ins_s = "".join(f"{n}, " for n in ins)
            scs_s = "".join(f"{n}, " for n in scs)
            return [f"{pad}_pat, _ins, _sc = {(pattern,)!r}, ({tensors_before}{ins_s}), "
                    f"({scs_s})"]
        n = operands[i]
        return ([f"{pad}if type({n}) is _FT:"] + rec(i + 1, pattern + "t", ins + [n], scs, pad + "    ")
                + [f"{pad}else:"] + rec(i + 1, pattern + "s", ins, scs + [n], pad + "    "))
    return rec(0, "t" * len(tensors), [], [], indent)


def _recorder_source(op: ops.OpDef) -> str:
    """The generated recorder of a declared primitive."""
    name = op.name
    L = [f"def {name}(self, {op.signature()}):"]
    tensors, operands, statics, values = [], [], [], []
    code = None
    first_tensor = None
    for p in op.params:
        n = p.name
        if p.kind in (ParamKind.TENSOR, ParamKind.INDEX):
            L.append(f"    if type({n}) is not _FT:\n        raise _not_ours(_NAME, {n})")
            tensors.append(n)
        elif p.kind is ParamKind.TENSORS:
            L.append(f"    {n} = tuple({n})")
            L.append(f"    for _t in {n}:\n        if type(_t) is not _FT:\n"
                     f"            raise _not_ours(_NAME, _t)")
            tensors.append(f"*{n}")
        elif p.kind is ParamKind.OPERAND:
            if any(q.kind in (ParamKind.TENSOR, ParamKind.INDEX) for q in
                   op.params[op.params.index(p):]):
                raise FusionError(f"{name}: tensor parameters come before operands")
            L.append(f"    if type({n}) is not _FT and type({n}) not in _SCALARS:\n"
                     f"        {n} = _scalar(_NAME, {n})")
            operands.append(n)
        elif p.kind is ParamKind.VALUE:
            L.append(f"    if type({n}) not in _SCALARS:\n        {n} = _scalar(_NAME, {n})")
            values.append(n)
        elif p.kind is ParamKind.STATIC:
            if n == "op":
                code = n
            else:
                statics.append(n)
        else:
            raise FusionError(f"{name}: a primitive with {p.kind.value} parameters cannot be "
                              "recorded")
        if first_tensor is None and p.kind.is_tensor:
            first_tensor = n
    if not op.elementwise:  # a base backend without the kernel: say so here, not at the drain
        L.append("    if getattr(type(self.inner), _NAME) is _STUB:\n"
                 "        raise _missing(self.inner, _OP)")
    if op.normalizes:
        L.append(f"    _m = _META({op.call_args()})")
        L.append("    if type(_m) is _Out:")
        if first_tensor is not None:
            L.append(f"        if _m.same:\n            return {first_tensor}")
        L.append(f"        if _m.args is not None:\n            {op.call_args()}, = _m.args")
        L.append("        _shape, _dtype = _m.shape, _m.dtype")
        L.append("    else:\n        _shape, _dtype = _m")
    else:
        L.append(f"    _shape, _dtype = _META({op.call_args()})")
    L.append("    _ok = self._dtypes_ok\n    if _ok is not None and _dtype not in _ok:\n"
             "        self._check_dtype(_NAME, _dtype)")
    if any(t.startswith("*") for t in tensors):
        head = "".join(f"{t}, " for t in tensors)
        L.append(f"    _ins = ({head})")
    static_args = "".join(f"{n}, " for n in statics)
    if operands:
        if any(t.startswith("*") for t in tensors):
            raise FusionError(f"{name}: operands and a tensor sequence cannot be mixed")
        L += _operand_branches(operands, tensors, "    ")
        args = f"_pat + ({static_args})" if static_args else "_pat"
        ins, scs = "_ins", f"_sc + ({''.join(f'{n}, ' for n in values)})" if values else "_sc"
    else:
        args = f"({static_args})"
        ins = "_ins" if any(t.startswith("*") for t in tensors) else \
            f"({''.join(f'{t}, ' for t in tensors)})"
        scs = f"({''.join(f'{n}, ' for n in values)})"
    loc = ", _loc(2)" if op.checks_data else ""
    L.append(f"    return self._rec(_OP, {code or 'None'}, {args}, {ins}, {scs}, _shape, _dtype"
             f"{loc})")
    return "\n".join(L) + "\n"


def _runner(op: ops.OpDef) -> Callable:
    """How a plan step runs an opaque primitive: `fn(inner, ir, *inputs)` calls the inner
    backend's kernel with the arguments in the op's parameter order."""
    parts, k_in, k_arg, k_sc = [], 0, 0, 0
    n_in = sum(1 for p in op.params if p.kind in (ParamKind.TENSOR, ParamKind.INDEX))
    for p in op.params:
        if p.kind in (ParamKind.TENSOR, ParamKind.INDEX):
            parts.append(f"_x[{k_in}]")
            k_in += 1
        elif p.kind is ParamKind.TENSORS:
            if n_in:
                raise FusionError(f"{op.name}: a tensor sequence must be the only tensors")
            parts.append("list(_x)")
        elif p.kind is ParamKind.STATIC and p.name == "op":
            parts.append("_ir.op")
        elif p.kind is ParamKind.STATIC:
            parts.append(f"_ir.args[{k_arg}]")
            k_arg += 1
        elif p.kind is ParamKind.VALUE:
            parts.append(f"_ir.scalars[{k_sc}]")
            k_sc += 1
    src = (f"def run_{op.name}(_inner, _ir, *_x):\n"
           f"    return _inner.{op.name}({', '.join(parts)})\n")
    return ops.generate(f"run_{op.name}", src, {}, f"run_{op.name}")


def _composite_source(op: ops.OpDef) -> str:
    return (f"def {op.name}(self, {op.signature()}):\n"
            f"    return _composite(self, _OP, ({op.call_args()},))\n")


def _composite(F: "Fusion", op: ops.OpDef, args: tuple):
    """One opaque op when the inner backend has a kernel for the composite (and its `when`
    holds) and every tensor is this layer's; else the composite's primitives, which fuse."""
    shape, dtype = op.meta(*args)  # the one rule checks the arguments on either path
    method = kernel_of(F.inner, op)
    if method is None:
        return op.decompose(F, *args)
    layout, tensors, values, statics = [], [], [], []
    for kind, a in zip(_kinds(op), args):
        if kind == "t":
            if a is None:
                layout.append("n")
                continue
            if type(a) is not FT:
                return op.decompose(F, *args)
            tensors.append(a)
        else:
            values.append(a)
            if kind == "s":
                statics.append(a)
        layout.append(kind)
    when = kernel_when(method)
    if when is not None and not when(*args):
        return op.decompose(F, *args)
    key = (op, tuple(layout), tuple(statics))
    made = F._composite_fns.get(key)
    if made is None:  # made once per layout: a custom op's function is part of the plan key
        made = F._composite_fns[key] = (_kernel_call(F.inner, op, key[1]),
                                        _record_name(op, key[2]))
        if op.name in F.inner.prologue_ops and key[1][0] == "t":
            # the kernel may compute a fused block in front of its first input (the plan
            # hands it one: `PrologueStep`)
            made[0].prologue = (op.name, key[1])
    if F._overlap is not None:
        out = _run_now(F, made, tensors, values, shape, dtype)
        if out is not None:
            return out
    return F.custom(made[1], made[0], tensors, ((shape, dtype),), tuple(values),
                    location=user_location(2))[0]


def _run_now(F: "Fusion", made: tuple, tensors: list, values: list, shape: tuple,
             dtype: DType) -> FT | None:
    """On an asynchronous base (a GPU queue), a composite kernel whose inputs all have values
    is launched at once instead of recorded: it fuses with nothing, its launch is queued
    behind what ran before it, and recording, planning and running it at the drain would cost
    more host time than the kernel takes on the device (a linear of MiniLM's size runs in
    34 µs). None when it must be recorded: an input is pending or failed, a capture
    (`lazyt.compile`) or an `inspect()` report is open, or LAZYT_DEBUG asks for locations."""
    if F._trace or _CAPTURE.session is not None or _ACTIVE.get():
        return None
    with F._lock:
        if F._draining:
            return None
        h = F.handles
        got = h.values
        prims = []
        for t in tensors:
            v = got.get(t.id)
            if v is None:
                return None
            prims.append(v)
        out = made[0](*prims, *values)
        check_declared(F.inner, made[1], 0, out, shape, dtype)
        for t in tensors:    # the kernel's output may be a view of an input: never reuse one
            h.reusable.discard(t.id)
        res = h.new(shape, dtype)
        got[res.id] = out
        return res


_KINDS: dict = {}


def _kinds(op: ops.OpDef) -> tuple:
    """Per parameter: "t" a tensor (or None), "s" structural, "v" a value."""
    k = _KINDS.get(op)
    if k is None:
        k = _KINDS[op] = tuple("t" if p.kind.is_tensor else "s" if p.kind is ParamKind.STATIC
                               else "v" for p in op.params)
    return k


def _record_name(op: ops.OpDef, statics: tuple) -> str:
    """What reports call the recorded op: `softmax(dim=1)`, `layer_norm(n_dims=1)`."""
    names = [p.name for p in op.params if p.kind is ParamKind.STATIC]
    if not names:
        return op.name
    return f"{op.name}({', '.join(f'{n}={v!r}' for n, v in zip(names, statics))})"


def _kernel_call(inner: Backend, op: ops.OpDef, layout: tuple) -> Callable:
    """The drain-time function of a composite recorded as one kernel: its tensors, then its
    other arguments, back in the op's parameter order (`layout`: "t" tensor, "n" absent
    optional tensor, "s"/"v" argument)."""
    ts = [f"_t{i}" for i in range(layout.count("t"))]
    vs = [f"_v{i}" for i in range(sum(1 for k in layout if k in "sv"))]
    it, iv, call = iter(ts), iter(vs), []
    for k in layout:
        call.append(next(it) if k == "t" else "None" if k == "n" else next(iv))
    src = (f"def kernel_{op.name}({', '.join(ts + vs)}):\n"
           f"    return _run({', '.join(call)})\n")
    return ops.generate(f"kernel_{op.name}", src, {"_run": getattr(inner, op.name)},
                        f"kernel_{op.name}")


def _install(op: ops.OpDef) -> None:
    if op.is_composite:
        ns = {"_OP": op, "_composite": _composite, **op.defaults()}
        src = _composite_source(op)
    else:
        ns = {"_OP": op, "_NAME": op.name, "_META": op.meta, "_FT": FT, "_Out": Out,
              "_SCALARS": _SCALAR_TYPES, "_scalar": _scalar, "_not_ours": _not_ours,
              "_loc": user_location, "_STUB": getattr(Backend, op.name),
              "_missing": missing_kernel, **op.defaults()}
        src = _recorder_source(op)
        if not op.elementwise:
            RUNNERS[op] = _runner(op)
    setattr(Fusion, op.name, ops.generate(op.name, src, ns, f"Fusion.{op.name}", op.doc))


ops.subscribe(_install)
register_layer(selectors.Fusion, Fusion)
