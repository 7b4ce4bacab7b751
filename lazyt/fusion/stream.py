"""The pending op stream: recording ops and building the plan-cache key as they arrive.

Tensors get relative numbers in order of first appearance in the stream (outputs when recorded,
outside inputs when first read), so the same code recorded again, with other tensor ids, other
values and other scalars, yields the same key. The key is built op by op at record time, so a
drain looks its plan up without any graph analysis.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

from ..dtype import DType
from ..errors import FusionError
from .handle import FusionTensor, Handles, _Ref, next_id
from .ir import CUSTOM, OperationIr, TensorIr, TensorStatus

_NOT_INIT = TensorStatus.NOT_INIT
_READ_ONLY = TensorStatus.READ_ONLY
_CUSTOM = CUSTOM
_new = tuple.__new__   # OperationIr((...)) without a Python-level constructor call

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_location(depth: int = 1) -> str | None:
    """"file:line" of the innermost caller outside the lazyt package and its generated code
    (where the user recorded the op)."""
    f = sys._getframe(depth)
    ours = _OURS
    while f is not None:
        code = f.f_code
        inside = ours.get(code)
        if inside is None:
            name = code.co_filename
            inside = ours[code] = name.startswith(_PKG_DIR) or name.startswith("<lazyt ")
        if not inside:
            return f"{code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return None


_OURS: dict = {}  # code object -> whether it is lazyt's (the walk runs once per op)


class OperationStream:
    """Pending ops of one Fusion layer, in record order (a topological order)."""

    __slots__ = ("handles", "ops", "keys", "seen", "irs", "ext", "scalars", "_work",
                 "_work_upto")

    def __init__(self, handles: Handles):
        self.handles = handles
        self.reset()

    def reset(self) -> None:
        self.ops: list = []      # OperationIr, in record order
        self.keys: list = []     # one structural key per op (relative tensor numbers)
        self.seen: dict = {}     # tensor id -> relative number
        self.irs: list = []      # relative number -> TensorIr
        self.ext: list = []      # (relative number, shape, dtype name, id) of outside inputs
        self.scalars: list = []  # scalar operands of elementwise ops, in record order
        self._work = 0           # output elements of ops[:_work_upto] (see `work`)
        self._work_upto = 0

    def __len__(self) -> int:
        return len(self.ops)

    def _external(self, x: FusionTensor) -> int:
        """First read of a tensor computed before this stream: give it a relative number."""
        h = self.handles
        tid = x.id
        if tid not in h.values and tid not in h.failed:
            raise FusionError(f"tensor {tid} {x.shape} {x.dtype.name} does not belong to this "
                              "Fusion layer (a tensor of another device's stack?)")
        r = len(self.irs)
        self.seen[tid] = r
        self.irs.append(TensorIr((tid, x.shape, x.dtype, _READ_ONLY)))
        self.ext.append((r, x.shape, x.dtype.name, tid))
        return r

    def _rels(self, inputs: Sequence[FusionTensor]) -> list:
        """The relative numbers of `inputs` (outside ones numbered on first read)."""
        seen = self.seen
        rels = []
        for x in inputs:
            r = seen.get(x.id)
            rels.append(self._external(x) if r is None else r)
        return rels

    def record(self, kind, op, args: tuple, inputs: Sequence[FusionTensor],
               scalars: tuple, shape: tuple, dtype: DType,
               location: str | None = None) -> FusionTensor:
        """Record a one-output op; returns its (pending) output tensor. The hot path of the
        layer: every elementwise op goes through here once."""
        seen = self.seen
        irs = self.irs
        label = kind.label
        opv = None if op is None else op._value_
        n = len(inputs)
        if n == 1:   # the common arities without the generic loop
            r = seen.get(inputs[0].id)
            if r is None:
                r = self._external(inputs[0])
            in_irs = (irs[r],)
            key = (label, opv, args, r)
        elif n == 2:
            r = seen.get(inputs[0].id)
            if r is None:
                r = self._external(inputs[0])
            r2 = seen.get(inputs[1].id)
            if r2 is None:
                r2 = self._external(inputs[1])
            in_irs = (irs[r], irs[r2])
            key = (label, opv, args, r, r2)
        else:
            rels = self._rels(inputs)
            in_irs = tuple([irs[r] for r in rels])
            key = (label, opv, args, *rels)
        if scalars:
            key += tuple(map(type, scalars))
            self.scalars.extend(scalars)
        h = self.handles
        tid = next_id()
        out = FusionTensor(tid, shape, dtype)
        h.counts[tid] = 1
        ref = _Ref(out, h.release)
        ref.tid = tid
        h.refs[tid] = ref
        ir = TensorIr((tid, shape, dtype, _NOT_INIT))
        seen[tid] = len(irs)
        irs.append(ir)
        self.ops.append(_new(OperationIr, (kind, op, in_irs, (ir,), args, scalars, None,
                                           location)))
        self.keys.append(key)
        return out

    def record_custom(self, name: str, fn, inputs: Sequence[FusionTensor], outputs: Sequence,
                      scalars: tuple, location: str | None) -> list:
        """Record an opaque custom op with outputs described by (shape, dtype) pairs."""
        seen = self.seen
        irs = self.irs
        rels = self._rels(inputs)
        in_irs = [irs[r] for r in rels]
        outs = []
        out_irs = []
        for shape, dtype in outputs:
            t = self.handles.new(tuple(shape), dtype)
            ir = TensorIr((t.id, t.shape, dtype, _NOT_INIT))
            seen[t.id] = len(irs)
            irs.append(ir)
            outs.append(t)
            out_irs.append(ir)
        metas = tuple((t.shape, t.dtype.name) for t in outs)
        self.ops.append(_new(OperationIr, (_CUSTOM, name, tuple(in_irs), tuple(out_irs), (),
                                           scalars, fn, location)))
        self.keys.append((_CUSTOM, name, fn, metas, *rels))
        return outs

    def independent(self, inputs) -> bool:
        """Whether none of `inputs` is the result of a pending op (all were computed before
        this stream, or are read by it from outside)."""
        seen = self.seen
        irs = self.irs
        for x in inputs:
            r = seen.get(x.id)
            if r is not None and irs[r].status is not _READ_ONLY:
                return False
        return True

    def work(self) -> int:
        """Output elements of the pending ops (counted incrementally: amortized O(1))."""
        ops = self.ops
        n = self._work
        for op in ops[self._work_upto:]:
            for t in op.outputs:
                size = 1
                for d in t.shape:
                    size *= d
                n += size
        self._work = n
        self._work_upto = len(ops)
        return n

    def key(self, counts: dict) -> tuple:
        """The plan-cache key: op structure; outside inputs' shapes, dtypes and whether the
        runtime may overwrite their buffers (asked now, at the drain: a read since the first
        use forbids it); and which tensors are alive (so must be materialized)."""
        reusable = self.handles.reusable
        ext = tuple((r, s, d, tid in reusable) for r, s, d, tid in self.ext)
        return (tuple(self.keys), ext, tuple(map(counts.__contains__, self.seen)))
