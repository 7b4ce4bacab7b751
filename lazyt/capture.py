"""`lazyt.compile`: run a whole step from one recording.

A lazy runtime sees a function's ops before it runs them. `lazyt.compile(fn)` records every op
`fn` makes on a call (forward, `backward()`, optimizer updates) into one stream of the device's
Fusion layer, plans it once, and on later calls with the same input signature runs that plan
on the new inputs' buffers without running `fn`'s Python, without recording and without
planning.

Calls for one signature go through three stages:

1. the first call runs `fn` while recording (kernels compile, caches fill);
2. the second call records again and compares: the two recordings must have the same ops,
   read their inputs from the same places and leave the same side effects, else
   `CaptureError` (control flow that depends on values or on Python state cannot be replayed);
3. later calls replay the second recording; on a base backend with device graphs (cuda: a
   CUDA graph; wgpu: a recorded dispatch list) the third replay is captured into one graph
   and later calls launch it (`_GraphRun`).

What a recording reads, and where a replay finds it:

- tensors passed as arguments (anywhere in nested lists, tuples and dicts);
- tensors the function reads without receiving them (a model's weights, an optimizer's
  state): a replay reads their *current* value, so updating them between calls is seen;
- tensors created from host data inside the function (`lazyt.tensor([...])`): constants.

Side effects a replay repeats: tensors rebound in place (`+=`, `copy_`, `opt.step()` on
parameters), `.grad` set by `backward()` or cleared by `zero_grad()`, and optimizer state
entries replaced in `opt.state`. Outputs are fresh tensors on every call, detached from the
autodiff graph (call `backward()` inside the function). Python values a recording bakes in are
guarded where lazyt knows them (an optimizer's learning rate and other hyper-parameters: a
change records again); Python scalars passed as arguments are part of the signature (by value).

On a device made with `fusion=False` (nothing is recorded there) a compiled function is a plain
call, as with `LAZYT_COMPILE=0`.

Refused with `CaptureError`, naming the op: reading a value inside the function (`item()`,
`numpy()`, `print`, `bool(t)`), ops with data-dependent shapes (boolean masks), random numbers
(draw them outside and pass them in), moving tensors between devices, and storing a tensor
computed inside the function anywhere but the places above (`self.x = ...`: update it in
place instead). `LAZYT_COMPILE=0` turns every compiled function into a plain call.
"""
from __future__ import annotations

import functools
import gc
import operator
import threading
import weakref
from collections import OrderedDict, namedtuple
from typing import Any, Callable

from . import capture_state
from .autodiff import is_grad_enabled
from .config import compile_enabled
from .device import devices
from .dispatch import DispatchTensor
from .errors import CaptureError, LazytError
from .fusion import Fusion, FusionTensor
from .tensor import AccumulatedGrad, Tensor, _register_leaf

#: Signatures kept per compiled function (least recently used dropped first).
DEFAULT_CACHE_SIZE = 32

CacheInfo = namedtuple("CacheInfo", "hits misses recordings currsize maxsize")

_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_ONE = ("T", 0)   # the structure of a single tensor output
_LOCK = threading.RLock()   # one capture at a time in a process


# ------------------------------------------------------------------------------ helpers
def _fusion_of(dev) -> Fusion | None:
    """The Fusion layer of a device's stack (None for `fusion=False` devices)."""
    b = dev.backend
    while b is not None:
        if isinstance(b, Fusion):
            return b
        b = getattr(b, "inner", None)
    return None


def _ft(prim) -> FusionTensor:
    """The Fusion-layer value under a stack primitive (unwrapping autodiff tensors)."""
    while type(prim) is not FusionTensor:
        prim = prim.primitive
    return prim


def _flatten(obj, leaves: list, path: str = "") -> Any:
    """The structure of `obj` with tensors replaced by their index in `leaves` (appended);
    raises for values a signature cannot hold."""
    if isinstance(obj, DispatchTensor):
        leaves.append(obj)
        return ("T", len(leaves) - 1)
    if isinstance(obj, (list, tuple)):
        items = tuple(_flatten(o, leaves, f"{path}[{i}]") for i, o in enumerate(obj))
        if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):   # a named tuple
            return ("namedtuple", items, type(obj))
        return ("list" if isinstance(obj, list) else "tuple", items)
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, leaves, f"{path}[{k!r}]"))
                              for k, v in obj.items()))
    if isinstance(obj, _SCALARS):
        return ("v", type(obj).__name__, obj)
    try:
        hash(obj)
    except TypeError:
        raise CaptureError(f"lazyt.compile: argument{path} of type {type(obj).__name__} is "
                           "neither a tensor, a Python scalar, nor a list/tuple/dict of them, "
                           "and cannot be part of a signature") from None
    return ("o", id(obj))   # a module, a function, an optimizer: by identity


def _rebuild(struct, make: Callable[[int], Any]):
    """The inverse of `_flatten`, with tensor leaves from `make(index)`."""
    kind = struct[0]
    if kind == "T":
        return make(struct[1])
    if kind in ("list", "tuple"):
        items = [_rebuild(s, make) for s in struct[1]]
        return items if kind == "list" else tuple(items)
    if kind == "namedtuple":   # max(dim)'s (values, indices), linalg's results, ...
        return struct[2](*(_rebuild(s, make) for s in struct[1]))
    if kind == "dict":
        return {k: _rebuild(s, make) for k, s in struct[1]}
    return struct[2]


# ------------------------------------------------------------------------------ recording
class _Session:
    """What one recording call noted: tensors read or changed that existed before the call,
    tensors created by ops inside it, watched state entries and guarded values."""

    def __init__(self, name: str):
        self.name = name
        self.thread = threading.get_ident()   # the thread whose ops are recorded
        self.objs: dict = {}       # id -> (tensor, primitive, _grad) when first noted
        self.made_ids: dict = {}   # id -> weak reference (an id is reused once freed)
        self.made_refs: list = []  # weak references to tensors made inside the call
        self.watched: dict = {}    # (id(container), key) -> (container, key, first value)
        self.guards: dict = {}     # (id(container), key) -> (container, key, value)
        self.fusions: dict = {}    # id -> Fusion layer of each device seen

    def saw(self, t) -> None:
        k = id(t)
        if k in self.objs or not isinstance(t, Tensor) or \
                threading.get_ident() != self.thread:
            return
        ref = self.made_ids.get(k)
        if ref is not None and ref() is t:
            return
        dev = t.device
        f = self.fusions.get(dev)
        if f is None:
            f = self.fusions[dev] = _fusion_of(dev)
            if f is None:
                raise CaptureError(f"lazyt.compile ({self.name}): {dev} has no Fusion layer "
                                   "(fusion=False); compiled functions run on fused devices")
        ft = _ft(t.primitive)
        if ft.id not in f.handles.values and ft.id in f.stream.seen:
            return   # computed inside the call (a tensor not made through an op entry)
        self.objs[k] = (t, t.primitive, getattr(t, "_grad", None))

    def saw_all(self, ts) -> None:
        for t in ts:
            if isinstance(t, Tensor):
                self.saw(t)

    def made(self, t) -> None:
        if isinstance(t, Tensor) and threading.get_ident() == self.thread:
            ref = weakref.ref(t)
            self.made_ids[id(t)] = ref
            self.made_refs.append(ref)

    def mine(self) -> bool:
        """Whether the calling thread is the one being recorded."""
        return threading.get_ident() == self.thread

    def watch(self, container: dict, key) -> None:
        k = (id(container), key)
        if k not in self.watched:
            self.watched[k] = (container, key, container.get(key))

    def guard(self, container: dict, key) -> None:
        k = (id(container), key)
        if k not in self.guards:
            self.guards[k] = (container, key, container.get(key))


class _Recording:
    """One recorded call, as a replay needs it."""

    __slots__ = ("fusion", "device", "program", "load_src", "load_meta", "results",
                 "result_meta", "out_struct", "out_src", "effects", "guards", "escaped",
                 "initialized", "n_out", "graph", "graph_failed", "replays", "objs",
                 "obj_prims", "last_loads", "other_at", "same_objs")

    def __init__(self):
        self.graph = None          # a _GraphRun once the base backend captured one
        self.graph_failed = False
        self.replays = 0
        # the replay's fast path: the objects whose tensors it loads (parameters, state),
        # their primitives and the loads of the last replay; when no primitive changed
        # (nothing was updated in place) those loads are reused as they are
        self.objs = None
        self.obj_prims = None
        self.last_loads = None
        self.other_at = None
        self.same_objs = False

    def shape_key(self) -> tuple:
        """What two recordings of one signature must share."""
        return (None if self.program is None else self.program.key,
                tuple(s[0] if s[0] != "arg" else s for s in self.load_src),
                self.out_struct, tuple(s[0] for s in self.out_src),
                tuple((e[0], e[-1]) for e in self.effects),
                tuple((id(c), k) for c, k, _ in self.guards))


def _source_of(ft: FusionTensor, arg_ids: dict, program, rel: dict, stored: set,
               loads: dict):
    """Where a replay finds the value that was `ft` at capture: ("out", i) the i-th result
    of the program, ("load", j) the j-th outside input, ("arg", i) argument tensor i, or
    ("const", ft)."""
    r = rel.get(ft.id)
    if r is not None:
        if r in loads:
            return ("load", loads[r])
        if r not in stored:
            raise CaptureError(f"lazyt.compile: tensor {ft.id} {ft.shape} was computed but "
                               "not kept by the plan (an internal error)")
        return ("out", r)
    i = arg_ids.get(ft.id)
    if i is not None:
        return ("arg", i)
    return ("const", ft)


def _record(name: str, fn: Callable, args: tuple, kwargs: dict, leaves: list):
    """Run `fn` once while recording; returns (its outputs, detached, and the recording)."""
    layers = []
    for dev in devices():   # what is pending now is not part of the recording
        if dev._stack is not None:
            f = _fusion_of(dev)
            if f is not None:
                if f.pending:
                    f._drain()
                layers.append(f)
    # other threads' ops wait until the recording ends (they must not join its stream)
    for f in layers:
        f._lock.acquire()
    try:
        return _record_locked(name, fn, args, kwargs, leaves)
    finally:
        for f in layers:
            f._lock.release()


def _record_locked(name: str, fn: Callable, args: tuple, kwargs: dict, leaves: list):
    session = _Session(name)
    arg_fts = []
    for t in leaves:
        f = session.fusions.get(t.device)
        if f is None:
            f = session.fusions[t.device] = _fusion_of(t.device)
            if f is None:
                raise CaptureError(f"lazyt.compile ({name}): {t.device} has no Fusion layer "
                                   "(fusion=False); compiled functions run on fused devices")
        arg_fts.append(_ft(t.primitive))
    capture_state.STATE.session = session
    # A recording keeps every op it makes alive until it ends, so Python's cyclic collector
    # finds ever more objects to walk and none to free: its full passes made recording
    # superlinear (a 16K-op function took 2.3x the time of an 8K-op one, 0.38 of its 0.87 s
    # in 6 full passes). It pauses for the call; cycles made meanwhile wait for the next pass
    # after it (`_finish` collects at once where a tensor may have escaped).
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        try:
            out = fn(*args, **kwargs)
        finally:   # a call that raised leaves what it recorded as plain pending work
            capture_state.STATE.session = None
        return _finish(session, out, arg_fts, leaves)
    finally:
        if paused:
            gc.enable()


class _Arg:
    """An effect on argument tensor `i` (whatever tensor a later call passes there)."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def _finish(session: _Session, out, arg_fts: list, leaves: list):
    out_leaves: list = []
    out_struct = _flatten(out, out_leaves, "(output)")
    for t in out_leaves:
        if not isinstance(t, Tensor):
            raise CaptureError(f"lazyt.compile ({session.name}): outputs must be lazyt "
                               f"Tensors, got {type(t).__name__}")
    # the tensors whose final value a replay must produce
    finals: list = [_ft(t.primitive) for t in out_leaves]
    effects: list = []
    for t, prim, grad in session.objs.values():
        if t.primitive is not prim:
            leaf = t.device.backend.leaf_id(t.primitive) is not None
            effects.append(("rebind", t, leaf, len(finals)))
            finals.append(_ft(t.primitive))
        g = getattr(t, "_grad", None)
        if g is not grad:
            if g is None:
                effects.append(("grad", t, None, -1))
            else:
                effects.append(("grad", t, None, len(finals)))
                finals.append(_ft(g.primitive))
    for container, key, first in session.watched.values():
        now = container.get(key)
        if now is first:
            continue
        if not isinstance(now, Tensor):
            raise CaptureError(f"lazyt.compile ({session.name}): state entry {key!r} became "
                               f"a {type(now).__name__}; recorded state must be tensors")
        effects.append(("dict", container, key, len(finals)))
        finals.append(_ft(now.primitive))
    # tensors made inside the call, still alive, that no output or effect accounts for
    accounted = {id(t) for t in out_leaves}
    accounted.update(id(e[1]) for e in effects)
    accounted.update(id(c[k]) for c, k, _ in session.watched.values() if k in c)
    arg_pos = {id(t): i for i, t in enumerate(leaves)}   # effects on arguments follow them
    effects = [(e[0], _Arg(arg_pos[id(e[1])]), *e[2:]) if e[0] != "dict" and
               id(e[1]) in arg_pos else e for e in effects]
    escaped = [r() for r in session.made_refs]
    escaped = [t for t in escaped if t is not None and id(t) not in accounted]
    if escaped:
        gc.collect()
        escaped = [r() for r in session.made_refs]
        escaped = [t for t in escaped if t is not None and id(t) not in accounted]
    # the one Fusion layer that recorded
    layers = {id(f): f for f in session.fusions.values() if f is not None}
    for dev in devices():
        if dev._stack is not None:
            f = _fusion_of(dev)
            if f is not None and f.pending:
                layers[id(f)] = f
    busy = [f for f in layers.values() if f.pending]
    if len(busy) > 1:
        raise CaptureError(f"lazyt.compile ({session.name}): the function ran ops on "
                           f"{len(busy)} devices; a compiled function runs on one device")
    fusion = busy[0] if busy else next(iter(layers.values()), None)
    rec = _Recording()
    rec.fusion = fusion
    rec.device = out_leaves[0].device if out_leaves else None
    rec.program = fusion.finish_capture() if fusion is not None else None
    rec.escaped = [f"{tuple(t.shape)}:{t.dtype.name}" for t in escaped]
    # state made by this call (an optimizer's first step): the next call records again
    # (or state that still shares one tensor between entries, as Adam's first AMSGrad step
    # leaves it: the next call reads it from two places)
    firsts = [first for _, _, first in session.watched.values() if first is not None]
    rec.initialized = bool(escaped) or len({id(f) for f in firsts}) < len(firsts) or any(
        first is None and isinstance(c.get(k), Tensor) for c, k, first in
        session.watched.values()) or any(   # a first gradient: the next call adds to it
        grad is None and getattr(t, "_grad", None) is not None
        for t, _, grad in session.objs.values())
    rec.n_out = len(out_leaves)
    rec.guards = list(session.guards.values())
    # where each outside input comes from
    arg_ids = {ft.id: i for i, ft in enumerate(arg_fts)}
    first_ids = {}
    for c, k, first in session.watched.values():
        if isinstance(first, Tensor):
            first_ids.setdefault(_ft(first.primitive).id, ("dict", c, k))
    for t, _, grad in session.objs.values():   # a gradient read from `t.grad` as it is then
        if grad is not None:
            first_ids.setdefault(_ft(grad.primitive).id, ("grad", t))
    for t, prim, _ in session.objs.values():
        first_ids.setdefault(_ft(prim).id, ("obj", t))
    program = rec.program
    load_src, load_meta, rel, stored, loads = [], [], {}, set(), {}
    if program is not None:
        rel = {tid: r for r, tid in enumerate(program.ids)}
        stored = set(program.plan.stores)
        for j, r in enumerate(program.plan.loads):
            tid = program.ids[r]
            loads[r] = j
            i = arg_ids.get(tid)
            if i is not None:
                load_src.append(("arg", i))
            elif tid in first_ids:
                load_src.append(first_ids[tid])
            else:
                value = fusion.handles.values.get(tid)
                if value is None:   # a constant made inside the call that died since
                    value = program.ext_values[tid]
                load_src.append(("const", value, tid))
            load_meta.append(program.metas[r])
    sources = [_source_of(ft, arg_ids, program, rel, stored, loads) for ft in finals]
    results = tuple(s[1] for s in sources if s[0] == "out")
    index = {r: k for k, r in enumerate(results)}
    rec.results = results
    rec.result_meta = tuple((ft.shape, ft.dtype) for ft, s in zip(finals, sources)
                            if s[0] == "out")
    rec.out_src = [("out", index[s[1]]) if s[0] == "out" else s for s in sources]
    rec.load_src = load_src
    rec.load_meta = load_meta
    rec.out_struct = out_struct
    rec.effects = effects
    # the caller gets detached outputs (as every replay returns)
    outs = [Tensor(_ft(t.primitive), t.device) for t in out_leaves]
    return _rebuild(out_struct, outs.__getitem__), rec


# ------------------------------------------------------------------------------ replay
def _replay(rec: _Recording, leaves: list):
    """Run a recording on new arguments; None when a guard no longer holds."""
    for container, key, value in rec.guards:
        now = container.get(key)
        if now is not value and (type(now) not in _SCALARS + (tuple,) or now != value):
            return None
    fusion = rec.fusion
    prims = None
    if rec.program is not None:
        values = fusion.handles.values
        if rec.objs is None:
            rec.objs = [src[1] for src in rec.load_src if src[0] == "obj"]
            rec.other_at = [j for j, src in enumerate(rec.load_src) if src[0] != "obj"]
        now = list(map(_PRIMITIVE, rec.objs))
        same = rec.same_objs = rec.last_loads is not None and \
            all(map(operator.is_, now, rec.obj_prims))
        if same:
            loads = list(rec.last_loads)
            order = rec.other_at
        else:
            loads = [None] * len(rec.load_src)
            order = range(len(rec.load_src))
        load_src, load_meta = rec.load_src, rec.load_meta
        for j in order:
            src, meta = load_src[j], load_meta[j]
            kind = src[0]
            if kind == "arg":
                ft = _ft(leaves[src[1]].primitive)
            elif kind == "obj":
                ft = _ft(src[1].primitive)
            elif kind == "dict":
                ft = _ft(src[1][src[2]].primitive)
            elif kind == "grad":
                g = getattr(src[1], "_grad", None)
                if g is None:
                    return None   # the gradient the recording adds to is gone: record again
                ft = _ft(g.primitive)
            else:
                loads[j] = src[1]
                continue
            if meta is not None and (ft.shape != meta[0] or ft.dtype is not meta[1]):
                return None   # a state tensor changed shape or dtype: record again
            v = values.get(ft.id)
            loads[j] = v if v is not None else fusion.materialize(ft)
        if not same:
            rec.obj_prims, rec.last_loads = now, loads
        prims = _run(rec, fusion, loads)
    dev = rec.device
    fts = []
    for src in rec.out_src:
        kind = src[0]
        if kind == "out":
            shape, dtype = rec.result_meta[src[1]]
            fts.append(fusion.wrap(prims[src[1]], shape, dtype))
        elif kind == "load":
            s = rec.load_src[src[1]]
            fts.append(_ft(leaves[s[1]].primitive) if s[0] == "arg" else
                       _ft(s[1].primitive) if s[0] == "obj" else
                       _ft(s[1][s[2]].primitive) if s[0] == "dict" else
                       _ft(s[1]._grad.primitive) if s[0] == "grad" else
                       fusion.wrap(s[1]))
        elif kind == "arg":
            fts.append(_ft(leaves[src[1]].primitive))
        else:
            fts.append(src[1])
    for e in rec.effects:
        kind, obj = e[0], e[1]
        if type(obj) is _Arg:
            obj = leaves[obj.i]
        if kind == "rebind":
            ft = fts[e[3]]
            if e[2]:
                obj.primitive = obj.device.backend.require_grad(ft)
                _register_leaf(obj)
            else:
                obj.primitive = ft
            obj._updates = getattr(obj, "_updates", 0) + 1
        elif kind == "grad":
            obj._grad = None if e[3] < 0 else AccumulatedGrad.of(obj, fts[e[3]], obj.device)
        else:
            e[1][e[2]] = Tensor(fts[e[3]], dev if dev is not None else e[1][e[2]].device)
    return fts[:rec.n_out]


_PRIMITIVE = operator.attrgetter("primitive")


def _run(rec: _Recording, fusion: Fusion, loads: list) -> list:
    """The recording's results on `loads`: through its device graph where the base backend
    has graphs (captured on the second replay, when every kernel is compiled), else by running
    the planned steps."""
    g = rec.graph
    if g is not None:
        prims = g.run(loads)
        if prims is STEPWISE:
            return fusion.run_program(rec.program, loads, rec.results)
        if prims is not None:
            return prims
        rec.graph = None          # a state tensor was replaced or re-laid out: capture again
    rec.replays += 1
    inner = fusion.inner
    if rec.replays > 2 and not rec.graph_failed and getattr(inner, "graphs", False):
        try:
            rec.graph = g = _GraphRun(rec, inner, loads)
        except LazytError:
            rec.graph_failed = True   # (an op that cannot be captured: run step by step)
        else:
            prims = g.run(loads)
            if prims is not None and prims is not STEPWISE:
                return prims
    return fusion.run_program(rec.program, loads, rec.results)


def _same_dense(a, b) -> bool:
    """Two primitives with one dense layout over buffers of one size."""
    return (a.shape == b.shape and a.dtype is b.dtype and a.offset == 0 and b.offset == 0 and
            a.handle.nbytes == b.handle.nbytes and a.is_contiguous() and b.is_contiguous())


#: Result buffer sets a recording's graph hands out (each a graph captured again over the
#: first one's buffers): two serve `y = f(x)` in a loop, where the last output is alive
#: while the next call runs.
HANDOUT_SETS = 2
#: When every result set is held, a graph's results are copied out (device time: their
#: bytes read and written at about COPY_BYTES_PER_US) or the recording's steps run one by
#: one on new buffers (host time: about STEP_HOST_US a step, which the device's work hides);
#: the 5-op chain on 64M floats took 258 µs a call copied out against 130 µs step by step
#: (H200, each result held).
COPY_BYTES_PER_US = 1.5e6
STEP_HOST_US = 20.0
#: `_GraphRun.run`'s answer when the steps are to run one by one this call.
STEPWISE = object()


class _Handout:
    """A graph captured again over the first graph's buffers but writing the handed-out
    results to buffers of its own; a launch returns those buffers (through new alias
    handles) without a copy, when nobody holds the ones it returned last time."""

    __slots__ = ("graph", "results", "groups", "refs")

    def __init__(self, graph, results: list, groups: list):
        self.graph = graph
        self.results = results
        self.groups = groups        # [(result index with the buffer, [result indices])]
        self.refs: list = []        # weak references to the alias handles handed out last

    def free(self) -> bool:
        for r in self.refs:
            if r() is not None:
                return False
        return True


class _GraphRun:
    """A recording replayed as one device graph (a CUDA graph). Arguments are copied into
    buffers the graph reads; state the recording reads and updates (parameters, optimizer
    state) is read where it lives and updated there by the graph, in place.

    Other results must be new tensors on every call, so that a later launch never overwrites
    a tensor the caller holds. Where the backend can (`graph_handout`), the graph is captured
    again, over the same intermediate buffers, into up to `HANDOUT_SETS` graphs that each
    write the results to buffers of their own; a call launches one whose last results
    nobody holds any more (a weak reference to each buffer's alias handle, which every view
    of it shares, says so) and hands its buffers out as they are. When every set is still
    held (or the backend cannot), the first graph runs and its results are copied out to
    new buffers, unless the recording updates no state and its results are large enough
    that the copy costs more than running its steps one by one (`direct`): then the steps
    run, without the graph, on new buffers."""

    def __init__(self, rec: _Recording, inner, loads: list):
        self.inner = inner
        self.rec = rec
        self.kinds = [src[0] for src in rec.load_src]
        static = []
        for kind, v in zip(self.kinds, loads):
            if kind == "arg":
                s = inner.graph_buffer_like(v)
                inner.graph_copy(s, v)
                static.append(s)
            else:
                static.append(v)
        self.static = static
        self.last = list(loads)
        load_of = {}
        for j, src in enumerate(rec.load_src):
            if src[0] == "obj":
                load_of[("obj", id(src[1]))] = j
            elif src[0] == "dict":
                load_of[("dict", id(src[1]), src[2])] = j
        wb = {}   # result index -> the load it updates in place
        for e in rec.effects:
            key = (("obj", id(e[1])) if e[0] == "rebind" else
                   ("dict", id(e[1]), e[2]) if e[0] == "dict" else None)
            j = load_of.get(key) if key is not None else None
            src = rec.out_src[e[3]] if e[3] >= 0 else None
            if j is not None and src is not None and src[0] == "out":
                wb[src[1]] = j
        inner.graph_begin()
        try:
            prims = rec.fusion.run_program(rec.program, static, rec.results)
            for k, j in list(wb.items()):
                if prims[k] is static[j] or not _same_dense(prims[k], static[j]):
                    del wb[k]
                else:
                    inner.graph_copy(static[j], prims[k])
            self.graph = inner.graph_end()
        except BaseException:
            inner.graph_abort()
            raise
        self.results = prims
        self.writeback = wb
        self.sets: list = []
        self.fresh = self._fresh() if getattr(inner, "graph_handout", False) else None
        self.handout_error: str | None = None   # why results are copied out after all
        # copying the results out moves their bytes twice on the device; running the steps
        # one by one costs the host per step (and overlaps the device's work): a recording
        # that updates no state takes the cheaper one when every result set is held
        copied = sum(r.handle.nbytes for k, r in enumerate(prims) if k not in wb)
        self.direct = not wb and copied / COPY_BYTES_PER_US > \
            STEP_HOST_US * max(1, len(rec.program.plan.steps))

    def _fresh(self) -> dict | None:
        """Positions, among the graph's allocations, of the buffers results are handed out
        on (a result on a buffer the graph allocated, not an argument or state): position ->
        the results on it. None when there is none."""
        pos = {id(h): i for i, h in enumerate(self.inner.graph_kept(self.graph))}
        fresh: dict = {}
        for k, r in enumerate(self.results):
            i = pos.get(id(r.handle))
            if k not in self.writeback and i is not None:
                fresh.setdefault(i, []).append(k)
        return fresh or None

    def _new_set(self) -> _Handout | None:
        """Capture the recording again with its handed-out results on new buffers; None
        (and no more tries) when the re-capture does not match the first graph."""
        inner, static, rec = self.inner, self.static, self.rec
        kept = inner.graph_kept(self.graph)
        inner.graph_begin(reuse=kept, fresh=sorted(self.fresh))
        try:
            prims = rec.fusion.run_program(rec.program, static, rec.results)
            for k, j in self.writeback.items():
                inner.graph_copy(static[j], prims[k])
            graph = inner.graph_end()
        except LazytError as e:
            inner.graph_abort()
            self.fresh = None
            self.handout_error = f"{type(e).__name__}: {e}"
            return None
        except BaseException:
            inner.graph_abort()
            raise
        mine = inner.graph_kept(graph)
        groups = []
        for i, ks in self.fresh.items():
            h = mine[i] if i < len(mine) else None
            for k in ks:
                r, r0 = prims[k], self.results[k]
                if r.handle is not h or r.shape != r0.shape or r.strides != r0.strides or \
                        r.offset != r0.offset or r.dtype is not r0.dtype or h is kept[i]:
                    self.fresh = None     # (not the same work: copy results out instead)
                    self.handout_error = f"result {k} is not on a buffer of its own"
                    return None
            groups.append((ks[0], ks))
        return _Handout(graph, prims, groups)

    def run(self, loads: list):
        """Launch on `loads`; None when a state tensor is no longer the one captured, and
        `STEPWISE` when every result set is held and running the steps one by one (results on
        new buffers) is cheaper than copying the results out (`direct`)."""
        static, last, inner = self.static, self.last, self.inner
        kinds = self.kinds
        # (the replay reused the last loads of every object: only the others need a look)
        for j in (self.rec.other_at if self.rec.same_objs else range(len(kinds))):
            kind, v = kinds[j], loads[j]
            if kind == "arg":
                if v is not last[j]:
                    s = static[j]
                    if v.strides != s.strides or v.offset != s.offset or \
                            v.handle.nbytes != s.handle.nbytes:
                        return None
            elif v is not static[j]:
                return None
        wb = self.writeback
        hs = None
        if self.fresh is not None:
            self.rec.fusion.collect()      # (the values of tensors that died let go now)
            for hs in self.sets:
                if hs.free():
                    break
            else:
                hs = self._new_set() if len(self.sets) < HANDOUT_SETS else None
                if hs is not None:
                    self.sets.append(hs)
        if hs is None and self.direct:
            return STEPWISE
        for j, kind in enumerate(kinds):   # the arguments into the buffers the graph reads
            if kind == "arg" and loads[j] is not last[j]:
                inner.graph_copy(static[j], loads[j])
                last[j] = loads[j]
        if hs is not None:
            hs.graph.launch()
            res = hs.results
            out = [static[wb[k]] if k in wb else None for k in range(len(res))]
            refs = []
            for first, ks in hs.groups:
                h = inner.graph_new_alias(res[first])
                refs.append(weakref.ref(h))
                for k in ks:
                    out[k] = inner.graph_alias(res[k], h)
            hs.refs = refs
            for k, r in enumerate(out):
                if r is None:
                    out[k] = inner.graph_clone(res[k])
            return out
        self.graph.launch()
        return [static[wb[k]] if k in wb else inner.graph_clone(r)
                for k, r in enumerate(self.results)]


# ------------------------------------------------------------------------------ the wrapper
class _Entry:
    __slots__ = ("first", "ready", "device")

    def __init__(self, first):
        self.first = first
        self.ready = None


class Compiled:
    """A function compiled with `lazyt.compile`: call it as the function."""

    def __init__(self, fn: Callable, cache_size: int = DEFAULT_CACHE_SIZE):
        if not callable(fn):
            raise CaptureError(f"lazyt.compile: expected a callable, got {type(fn).__name__}")
        if not isinstance(cache_size, int) or cache_size < 1:
            raise CaptureError(f"lazyt.compile: cache_size must be a positive int, got "
                               f"{cache_size!r}")
        self.fn = fn
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()
        self._hits = self._misses = self._recordings = 0
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        functools.update_wrapper(self, fn, updated=())

    def __repr__(self) -> str:
        return f"lazyt.compile({self.__name__})"

    def __getattr__(self, name: str):
        """Anything else is the compiled object's (a compiled module still has
        `.parameters()`, `.eval()`, `.state_dict()`, as torch's compiled modules do)."""
        if name.startswith("__") or name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __get__(self, obj, objtype=None):
        """Used as a method decorator: bind like a function."""
        return self if obj is None else functools.partial(self, obj)

    def cache_info(self) -> CacheInfo:
        """Replays served (`hits`), calls that recorded (`misses`), recordings made, and the
        signatures cached."""
        return CacheInfo(self._hits, self._misses, self._recordings, len(self._cache),
                         self.cache_size)

    def reset(self) -> None:
        """Forget every recording (the next calls record again)."""
        self._cache.clear()

    def __call__(self, *args, **kwargs):
        if not compile_enabled() or capture_state.STATE.session is not None:
            return self.fn(*args, **kwargs)   # LAZYT_COMPILE=0, or nested in a recording
        if not kwargs and all(type(a) is Tensor for a in args):   # the common case, fast
            leaves = args
            struct = len(args)
        else:
            leaves = []
            struct = _flatten((args, kwargs), leaves)
        sig = []
        seen: dict = {}
        for t in leaves:
            dev = t.device
            if not dev.fusion:
                return self.fn(*args, **kwargs)   # a fusion=False device records nothing
            prim = t.primitive
            ft = _ft(prim)
            # (the primitive's type says whether autodiff tracks it: requires_grad; the
            # first position holding the same tensor says which arguments alias)
            sig.append((id(dev), type(prim), ft.shape, id(ft.dtype),
                        seen.setdefault(ft.id, len(seen))))
        key = (struct, is_grad_enabled(), tuple(sig))
        with _LOCK:
            cache = self._cache
            entry = cache.get(key)
            if entry is not None:
                cache.move_to_end(key)
                if entry.ready is not None:
                    rec = entry.ready
                    out = _replay(rec, leaves)
                    if out is not None:
                        self._hits += 1
                        dev = rec.device or leaves[0].device
                        if rec.out_struct == _ONE:
                            return Tensor(out[0], dev)
                        return _rebuild(rec.out_struct, lambda i: Tensor(out[i], dev))
                    del cache[key]    # a guarded value changed: record again
                    entry = None
            self._misses += 1
            self._recordings += 1
            out, rec = _record(self.__name__, self.fn, args, kwargs, leaves)
            if entry is None:
                cache[key] = _Entry(rec)
                while len(cache) > self.cache_size:
                    cache.popitem(last=False)
                return out
            if rec.escaped:
                raise CaptureError(
                    f"lazyt.compile ({self.__name__}): the function stored tensors it computed "
                    f"({', '.join(rec.escaped[:3])}) somewhere other than its outputs, a "
                    "tensor's in-place update or an optimizer's state; a replay could not "
                    "update them. Return them, or update existing tensors in place "
                    "(t.copy_(...), t += ...)")
            if rec.shape_key() != entry.first.shape_key():
                if entry.first.initialized:  # the first call made state: compare again
                    entry.first = rec
                    return out
                del cache[key]
                raise CaptureError(
                    f"lazyt.compile ({self.__name__}): two calls with the same signature "
                    "recorded different ops or side effects; the function's control flow "
                    "depends on tensor values or on Python state, which a replay cannot "
                    "follow")
            entry.ready = rec
            return out


#: torch.compile's modes: lazyt accepts them (a recording always replays whole, with device
#: graphs where the device has them), so code written for torch runs unchanged.
_TORCH_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(fn: Callable | None = None, *, cache_size: int = DEFAULT_CACHE_SIZE,  # noqa: A001
            mode: str | None = None, fullgraph: bool = True, dynamic: bool | None = None,
            disable: bool = False, **torch_options):
    """`lazyt.compile(fn)` or `@lazyt.compile`: a callable that replays `fn`'s recorded ops
    for input signatures it has seen (see the module documentation).

    torch.compile's keywords are accepted so torch code runs unchanged: `mode` (any of
    torch's; every recording replays whole), `fullgraph` (always true here: what cannot be
    recorded raises `CaptureError` instead of breaking the graph; False is accepted),
    `dynamic` (shapes are always part of the signature: a new shape records again; True is
    refused), `disable=True` (plain calls), and `backend` / `options` (ignored)."""
    if mode not in _TORCH_MODES:
        raise CaptureError(f"lazyt.compile: unknown mode {mode!r}; torch's modes are "
                           f"{', '.join(repr(m) for m in _TORCH_MODES[1:])}")
    if dynamic:
        raise CaptureError("lazyt.compile: dynamic=True is not supported: a recording is for "
                           "one set of shapes (each new shape records again); pass "
                           "dynamic=None or False")
    unknown = set(torch_options) - {"backend", "options"}
    if unknown:
        raise CaptureError(f"lazyt.compile: unexpected keyword(s) {', '.join(sorted(unknown))}")

    def make(f):
        if disable:
            if not callable(f):
                raise CaptureError(f"lazyt.compile: expected a callable, got "
                                   f"{type(f).__name__}")
            return f
        return Compiled(f, cache_size)
    return make if fn is None else make(fn)


def capturing() -> bool:
    """True while `lazyt.compile` records a function (lazyt's optimizers ask)."""
    return capture_state.STATE.session is not None


__all__ = ["compile", "Compiled", "CaptureError", "capturing", "CacheInfo"]
