"""Lazy tensors and their liveness: which values the runtime must keep, and which it may drop.

A `FusionTensor` is the Fusion layer's primitive: an id, a shape and a dtype. Its value (an inner
backend primitive, once computed) lives in `Handles`. Every FusionTensor object holds one count
on its id; when the object dies, a weak-reference callback (what `weakref.finalize` is built on)
puts it on a release queue, and the queue is processed only at safe points (around a drain, or
while recording once it is long), never in the middle of a drain; nothing is ever freed from
the callback itself. A tensor that is still counted is alive: the optimizer materializes it, and
its buffer is never overwritten in place. Saved autodiff state holds FusionTensors, so it is
alive by the same rule.
"""
from __future__ import annotations

import itertools
import weakref
from collections import deque

from ..dtype import DType
from ..errors import FusionError

_ids = itertools.count(1)
next_id = _ids.__next__


class FusionTensor:
    """A tensor of the Fusion layer (pending or materialized)."""

    __slots__ = ("id", "shape", "dtype", "__weakref__")

    def __init__(self, id: int, shape: tuple, dtype: DType):
        self.id = id
        self.shape = shape
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"FusionTensor(id={self.id}, shape={self.shape}, dtype={self.dtype.name})"


class Failure:
    """Why a tensor has no value: the op that raised at drain time, and where it was recorded."""

    __slots__ = ("error", "op", "location")

    def __init__(self, error: BaseException, op: str, location: str | None):
        self.error = error
        self.op = op
        self.location = location

    def raise_(self, tensor_id: int):
        """Raise a `FusionError` that is also an instance of the original error's class,
        chained to the original."""
        where = f" recorded at {self.location}" if self.location else ""
        msg = (f"{self.op}{where} failed when the pending ops ran, so tensor {tensor_id} has "
               f"no value: {type(self.error).__name__}: {self.error}")
        raise _fusion_error_class(type(self.error))(msg) from self.error


_ERROR_CLASSES: dict = {}


def _fusion_error_class(cls: type) -> type:
    if issubclass(cls, FusionError):
        return FusionError
    t = _ERROR_CLASSES.get(cls)
    if t is None:
        try:
            t = type(f"Fusion{cls.__name__}", (FusionError, cls), {
                "__module__": "lazyt.errors",
                "__init__": lambda self, msg: Exception.__init__(self, msg),
                "__str__": lambda self: str(self.args[0]) if self.args else ""})
            str(t("probe"))
        except Exception:  # noqa: BLE001 - a class that cannot be mixed in: plain FusionError
            t = FusionError
        _ERROR_CLASSES[cls] = t
    return t


class _Ref(weakref.ref):
    """The weak reference that reports a FusionTensor's death (its callback queues it)."""

    __slots__ = ("tid",)


class Handles:
    """Per-layer table of tensor values, liveness counts and failures.

    Liveness uses the mechanism `weakref.finalize` is built on, a weak reference with a
    callback, without finalize's per-object registry and atexit bookkeeping (measured: 2-3 µs
    per tensor, which is most of an op's recording cost): the callback only appends the dead
    reference to `released`, an O(1) step that is safe at any point, even mid-drain.
    """

    __slots__ = ("counts", "refs", "released", "release", "values", "failed", "reusable")

    def __init__(self):
        self.counts: dict = {}          # id -> holders: live FusionTensor objects, retains
        self.refs: dict = {}            # id -> _Ref, kept alive so the callback fires
        self.released: deque = deque()  # dead _Refs and released ids, processed at safe points
        self.release = self.released.append  # the weakref callback
        self.values: dict = {}          # id -> inner primitive (materialized tensors)
        self.failed: dict = {}          # id -> Failure
        self.reusable: set = set()      # ids whose buffer the runtime owns and nobody else sees

    def new(self, shape: tuple, dtype: DType) -> FusionTensor:
        """A new tracked tensor (count 1, released when the object dies)."""
        tid = next_id()
        t = FusionTensor(tid, shape, dtype)
        self.counts[tid] = 1
        r = _Ref(t, self.release)
        r.tid = tid
        self.refs[tid] = r
        return t

    def retain(self, tid: int) -> None:
        """One more holder of `tid` (give it back with `release(tid)`)."""
        self.counts[tid] = self.counts.get(tid, 0) + 1

    def process(self, pending: dict) -> None:
        """Apply queued releases: a dead id's value is dropped now unless the pending stream
        (`pending`: id -> relative index) still reads it; the drain drops those afterwards."""
        q = self.released
        pop = q.popleft
        counts = self.counts
        values = self.values
        refs_pop = self.refs.pop
        for _ in range(len(q)):  # entries appended meanwhile wait for the next safe point
            item = pop()
            if type(item) is _Ref:
                tid = item.tid
                refs_pop(tid, None)
            else:
                tid = item
            c = counts.pop(tid, 0)
            if c > 1:
                counts[tid] = c - 1
            elif tid not in pending and tid in values:
                del values[tid]
                self.reusable.discard(tid)
            elif tid in self.failed and tid not in pending:
                del self.failed[tid]

    def drop_dead(self, ids) -> None:
        """After a drain: drop the values of ids that died while the stream still read them."""
        counts = self.counts
        for tid in ids:
            if tid not in counts:
                self.values.pop(tid, None)
                self.failed.pop(tid, None)
                self.reusable.discard(tid)
