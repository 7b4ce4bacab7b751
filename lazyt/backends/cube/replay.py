"""Replaying a backend op's launches: the host work of a kernel op without its Python logic.

A Cube op (a fused block, a matmul, attention, ...) turns its input layouts into buffers to
allocate and launches to record: which kernel, how many workgroups, which buffers and info
words. That is a pure function of the layouts (shapes, strides, offsets, dtypes, which inputs
share a buffer) and of the op's other arguments. The first call with a given key runs the op
with a `Tape` on the client, which notes every allocation and launch; later calls with the
same key allocate the same sizes and re-issue the same launches on their own buffers. On a
BERT forward this is most of the host time spent between the recorded ops and the device.

An op whose recording touched anything else (an upload, a read, an index range check) is
never replayed. Replay can be turned off per backend (`backend.replay = False`) or by the
backend's default (`replay_default()`; wgpu reads `LAZYT_WGPU_REPLAY`). It needs of a client
only `empty`, `launch` and the recording hooks of `ComputeClient` (`taping`).
"""
from __future__ import annotations

import functools
import struct
import threading
from collections import OrderedDict

import numpy as np

from .tensor import CubeTensor

#: Recordings kept per backend (least recently used dropped first).
MAX_RECORDINGS = 2048


class Tape:
    """What one op did on the client (from the thread recording it): allocations (handles, in
    order) and launches."""

    __slots__ = ("allocs", "launches", "ok")

    def __init__(self):
        self.allocs: list = []
        self.launches: list = []   # (pipeline, cube_count, bindings as given)
        self.ok = True             # False after anything a replay would not redo


class Recording:
    """An op's launches with buffers named by where they come from: ("in", i) the i-th input
    tensor's buffer, ("new", j) the j-th allocation, ("data", bytes) host info words,
    ("keep", handle) a buffer the op found elsewhere (kept alive here)."""

    __slots__ = ("sizes", "launches", "outs", "single")

    def __init__(self, sizes, launches, outs, single):
        self.sizes = sizes
        self.launches = launches
        self.outs = outs
        self.single = single

    @classmethod
    def of(cls, tape: Tape, tensors: list, out) -> Recording | None:
        if not tape.ok:
            return None
        where = {}
        for j, h in enumerate(tape.allocs):
            where[id(h)] = ("new", j)
        for i, t in enumerate(tensors):
            where.setdefault(id(t.handle), ("in", i))
        keep = []

        def ref(h):
            r = where.get(id(h))
            if r is None:
                r = ("keep", h)
                keep.append(h)
            return r

        launches = []
        for p, count, bindings in tape.launches:
            refs = []
            for b in bindings:
                handle = getattr(b, "handle", b)
                if isinstance(b, (bytes, bytearray, memoryview)):  # host data, as launched
                    refs.append(("data", bytes(b)))
                elif hasattr(handle, "buffer"):      # a CubeTensor or a Handle
                    refs.append(ref(handle))
                else:                                # a raw buffer: not ours to reuse
                    return None
            launches.append((p, count, tuple(refs)))
        single = isinstance(out, CubeTensor)
        outs = []
        for t in ([out] if single else out):
            if not isinstance(t, CubeTensor):
                return None
            outs.append((ref(t.handle), t.shape, t.strides, t.offset, t.dtype))
        return cls([h.nbytes for h in tape.allocs], launches, outs, single)

    def replay(self, client, device, tensors: list):
        new = [client.empty(n) for n in self.sizes]

        def buf(r):
            kind, v = r
            if kind == "in":
                return tensors[v].handle
            if kind == "new":
                return new[v]
            return v                                  # "data" bytes or a kept handle

        for p, count, refs in self.launches:
            client.launch(p, count, [buf(r) for r in refs])
        outs = [CubeTensor(client, device, shape, strides, buf(r), dtype, offset)
                for r, shape, strides, offset, dtype in self.outs]
        return outs[0] if self.single else outs


def _arg_key(a, tensors: list, handles: dict):
    """A hashable stand-in for one argument; tensors are listed in `tensors` and keyed by
    layout, by which earlier tensor (if any) shares their buffer and by their buffer's
    alignment (a kernel may read aligned buffers a vector at a time; memory imported from
    other libraries can start anywhere)."""
    if isinstance(a, CubeTensor):
        tensors.append(a)
        first = handles.setdefault(id(a.handle), len(tensors) - 1)
        return (a.shape, a.strides, a.offset, a.dtype, first, getattr(a.handle, "ptr", 0) % 16)
    if isinstance(a, (list, tuple)):
        return tuple(_arg_key(b, tensors, handles) for b in a)
    if isinstance(a, (float, np.floating)):
        return (type(a), struct.pack("<d", a))        # the bits: -0.0 and -nan are their own
    if a is None or isinstance(a, (int, str, bool, np.integer, np.bool_)):
        return (type(a), a)
    try:
        hash(a)
    except TypeError:
        return None
    return ("obj", a)  # blocks (by identity), dtypes, enums (the recording keeps them alive)


def replayable(extra=None):
    """Decorate a backend method whose effect on the client is only allocations and
    launches that depend on its arguments (and on `extra(self)`, e.g. tuning settings)."""
    def wrap(method):
        name = method.__name__

        @functools.wraps(method)
        def op(self, *args, **kwargs):
            client = self.client
            taping = client.taping
            on = self.replay
            if not (self.replay_default() if on is None else on) \
                    or getattr(taping, "tape", None) is not None or kwargs:
                # off, inside a recorded op (runs plainly), or keywords: not keyed
                return method(self, *args, **kwargs)
            tensors: list = []
            handles: dict = {}
            key = [name, extra(self) if extra is not None else None]
            for a in args:
                k = _arg_key(a, tensors, handles)
                if k is None:
                    return method(self, *args)
                key.append(k)
            key = tuple(key)
            memo = self._replays
            with memo.lock:
                rec = memo.get(key)
                if rec is not None:
                    memo.move_to_end(key)
                    self.replay_hits += 1
            if rec is not None:
                return rec.replay(client, self.device, tensors)
            tape = taping.tape = Tape()
            try:
                out = method(self, *args)
            finally:
                taping.tape = None
            rec = Recording.of(tape, tensors, out)
            if rec is not None:
                with memo.lock:
                    memo[key] = rec
                    if len(memo) > MAX_RECORDINGS:
                        memo.popitem(last=False)
            return out
        return op
    return wrap


class Memo(OrderedDict):
    """A backend's recordings by key, least recently used first; `lock` guards lookups and
    updates (threads share a backend)."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


def new_memo() -> Memo:
    return Memo()
