"""`Fusion(inner)`: the lazy layer (Burn's `burn-fusion`).

Every primitive records an `OperationIr` and returns a `FusionTensor` at once; its shape and
dtype come from the shape rules, so shape errors are raised here, at record time. Nothing runs
until a read (`to_numpy`), `sync()`, or the stream reaching `max_ops`. Then the stream's plan
is looked up by key (or built by the optimizer on a miss) and run on the inner backend: fused
elementwise blocks through `inner.run_fused`, everything else through its primitives.
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from .. import dtype as dt
from .. import shape as sh
from ..backends.base import Backend, reduce_out_dtype
from ..config import debug_level
from ..dtype import DType
from ..errors import DTypeError, FusionError, IndexOutOfRangeError, ShapeError
from ..ops import ARG_REDUCTIONS, COMPARISONS, BinaryOp, ReduceOp, UnaryOp
from .cache import PlanCache
from .handle import Failure, FusionTensor, Handles
from .inspect import _ACTIVE
from .ir import OpKind
from .optimizer import build_plan
from .plan import execute
from .stream import OperationStream, user_location

K = OpKind
FT = FusionTensor
_BOOL = dt.bool_
_SCALAR_TYPES = (bool, int, float)
_CMP = frozenset(o._value_ for o in COMPARISONS)  # str keys: hashing an Enum is slow
_TT, _TS, _ST = ("tt",), ("ts",), ("st",)
_EMPTY = ()

#: Process the release queue while recording once it holds this many entries (and at drains).
_RELEASE_BATCH = 256
#: Drain when this many ops are pending (`Fusion(inner, max_ops=...)` changes it).
DEFAULT_MAX_OPS = 32768


def _scalar(op, value):
    """`value` as a Python scalar; `op` (a name or an op enum) names the op in the error."""
    if type(value) in _SCALAR_TYPES:
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    name = op if isinstance(op, str) else op.value
    raise DTypeError(f"{name}: expected a tensor of this device or a real scalar, got "
                     f"{type(value).__name__}")


def _same_dtype(op: str, a: FT, b: FT) -> None:
    if a.dtype is not b.dtype:
        raise DTypeError(f"{op}: operands must have one dtype, got {a.dtype.name} {a.shape} "
                         f"and {b.dtype.name} {b.shape}")


def _check_dims(op: str, shape: tuple, dims) -> tuple:
    dims = tuple(dims)
    nd = len(shape)
    for d in dims:
        if not isinstance(d, int) or not 0 <= d < max(nd, 1):
            raise IndexOutOfRangeError(f"{op}: dim {d!r} is out of range for shape {shape}")
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: repeated dim in {dims} for shape {shape}")
    return dims


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
        self._trace = debug_level() >= 1
        # a base backend that checks dtypes per device (wgpu: no float64) is asked at record time
        self._check_dtype = getattr(inner, "check_dtype", None)

    def __repr__(self) -> str:
        return f"Fusion({self.inner!r})"

    # ---------------------------------------------------------------- recording
    def _rec(self, kind: OpKind, op, args: tuple, inputs: tuple, scalars: tuple, shape: tuple,
             dtype: DType, location: str | None = None) -> FT:
        with self._lock:
            if self._draining:
                raise FusionError(f"{op.value if hasattr(op, 'value') else kind.label}: cannot "
                                  "record ops on a Fusion layer while it runs its pending ops "
                                  "(an impl called the layer instead of its base primitives)")
            if location is None and self._trace:
                location = user_location(3)
            stream = self.stream
            out = stream.record(kind, op, args, inputs, scalars, shape, dtype, location)
            if len(stream.ops) >= self.max_ops:
                self._drain()
            elif len(self.handles.released) >= _RELEASE_BATCH:
                self.handles.process(stream.seen)  # a safe point: free what died
            return out

    # ---------------------------------------------------------------- creation/transfer
    def from_numpy(self, array: np.ndarray) -> FT:
        d = dt.from_numpy(array.dtype)
        return self.wrap(self.inner.from_numpy(array), tuple(array.shape), d)

    def to_numpy(self, x: FT) -> np.ndarray:
        return self.inner.to_numpy(self.materialize(x))

    def shape_of(self, x: FT) -> tuple:
        return x.shape

    def dtype_of(self, x: FT) -> DType:
        return x.dtype

    def full(self, shape: tuple, value, dtype: DType) -> FT:
        try:
            shape = tuple(int(s) for s in shape)
        except TypeError:
            raise ShapeError(f"full: expected a shape of ints, got {shape!r}") from None
        if any(s < 0 for s in shape):
            raise ShapeError(f"full: negative size in shape {shape}")
        if self._check_dtype is not None:
            self._check_dtype("full", dtype)
        return self._rec(K.FULL, None, (shape, dtype), _EMPTY, (_scalar("full", value),),
                         shape, dtype)

    def empty(self, shape: tuple, dtype: DType) -> FT:
        return self.full(shape, 0, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> FT:
        return self.full(shape, 0, dtype)

    # ---------------------------------------------------------------- elementwise
    def unary(self, op: UnaryOp, x: FT) -> FT:
        return self._rec(K.UNARY, op, _EMPTY, (x,), _EMPTY, x.shape, x.dtype)

    def binary(self, op: BinaryOp, lhs, rhs) -> FT:
        if type(lhs) is FT:
            d = lhs.dtype
            out_dtype = _BOOL if op._value_ in _CMP else d
            if type(rhs) is FT:
                ls, rs = lhs.shape, rhs.shape
                shape = ls if ls == rs else sh.broadcast(op.value, ls, rs)
                if rhs.dtype is not d:
                    _same_dtype(op.value, lhs, rhs)
                return self._rec(K.BINARY, op, _TT, (lhs, rhs), _EMPTY, shape, out_dtype)
            if type(rhs) not in _SCALAR_TYPES:
                rhs = _scalar(op, rhs)
            return self._rec(K.BINARY, op, _TS, (lhs,), (rhs,), lhs.shape, out_dtype)
        if type(rhs) is FT:
            if type(lhs) not in _SCALAR_TYPES:
                lhs = _scalar(op, lhs)
            return self._rec(K.BINARY, op, _ST, (rhs,), (lhs,), rhs.shape,
                             _BOOL if op._value_ in _CMP else rhs.dtype)
        raise DTypeError(f"{op.value}: expected at least one tensor operand, got "
                         f"{type(lhs).__name__} and {type(rhs).__name__}")

    def where(self, cond: FT, lhs, rhs) -> FT:
        if type(cond) is not FT:
            raise DTypeError(f"where: the condition must be a tensor, got {type(cond).__name__}")
        if cond.dtype is not _BOOL:
            raise DTypeError(f"where: the condition must be bool, got {cond.dtype.name} "
                             f"{cond.shape}")
        tl, tr = type(lhs) is FT, type(rhs) is FT
        if not tl and not tr:  # numpy's result dtype of two scalars, at cond's shape
            lhs, rhs = _scalar("where", lhs), _scalar("where", rhs)
            lhs = self.full(cond.shape, lhs, dt.from_numpy(np.result_type(lhs, rhs)))
            tl = True
        tensors = [cond]
        scalars = []
        pattern = "t"
        for v, t in ((lhs, tl), (rhs, tr)):
            if t:
                tensors.append(v)
                pattern += "t"
            else:
                scalars.append(_scalar("where", v))
                pattern += "s"
        if tl and tr:
            _same_dtype("where", lhs, rhs)
        dtype = lhs.dtype if tl else rhs.dtype
        shape = sh.broadcast("where", *(t.shape for t in tensors))
        return self._rec(K.WHERE, None, (pattern,), tuple(tensors), tuple(scalars), shape, dtype)

    def cast(self, x: FT, dtype: DType) -> FT:
        if x.dtype is dtype:
            return x
        if self._check_dtype is not None:
            self._check_dtype("cast", dtype)
        return self._rec(K.CAST, None, (dtype,), (x,), _EMPTY, x.shape, dtype)

    # ---------------------------------------------------------------- reductions, matmul
    def reduce(self, op: ReduceOp, x: FT, dims: tuple, keepdim: bool) -> FT:
        dims = _check_dims(op.value, x.shape, dims)
        if op in ARG_REDUCTIONS and len(dims) != 1:
            raise ShapeError(f"{op.value}: expects exactly one dim, got {dims} for shape "
                             f"{x.shape}")
        keepdim = bool(keepdim)
        return self._rec(K.REDUCE, op, (dims, keepdim), (x,), _EMPTY,
                         sh.reduce(x.shape, dims, keepdim), reduce_out_dtype(op, x.dtype))

    def matmul(self, lhs: FT, rhs: FT) -> FT:
        shape = sh.matmul(lhs.shape, rhs.shape)
        _same_dtype("matmul", lhs, rhs)
        return self._rec(K.MATMUL, None, _EMPTY, (lhs, rhs), _EMPTY, shape, lhs.dtype)

    # ---------------------------------------------------------------- movement
    def reshape(self, x: FT, shape: tuple) -> FT:
        new = sh.reshape(x.shape, shape)
        if new == x.shape:
            return x
        return self._rec(K.RESHAPE, None, (new,), (x,), _EMPTY, new, x.dtype)

    def permute(self, x: FT, axes: tuple) -> FT:
        axes = sh.permute(x.shape, axes)
        if axes == tuple(range(len(axes))):
            return x
        return self._rec(K.PERMUTE, None, (axes,), (x,), _EMPTY,
                         tuple(x.shape[a] for a in axes), x.dtype)

    def expand(self, x: FT, shape: tuple) -> FT:
        new = sh.expand(x.shape, shape)
        if new == x.shape:
            return x
        return self._rec(K.EXPAND, None, (new,), (x,), _EMPTY, new, x.dtype)

    def slice(self, x: FT, slices: tuple) -> FT:
        slices = tuple(tuple(int(v) for v in s) for s in slices)
        if len(slices) != len(x.shape) or any(len(s) != 3 for s in slices):
            raise ShapeError(f"slice: expected one (start, stop, step) per dim of {x.shape}, "
                             f"got {slices}")
        out = []
        for (a, b, c), n in zip(slices, x.shape):
            if c == 0:
                raise ShapeError(f"slice: step 0 in {slices} for shape {x.shape}")
            out.append(len(range(n)[slice(a, b if b >= 0 or c > 0 else None, c)]))
        out = tuple(out)
        if all(s == (0, n, 1) for s, n in zip(slices, x.shape)):
            return x
        return self._rec(K.SLICE, None, (slices,), (x,), _EMPTY, out, x.dtype)

    def cat(self, xs: Sequence[FT], dim: int) -> FT:
        xs = tuple(xs)
        if not xs:
            raise ShapeError("cat: expected at least one tensor")
        for x in xs[1:]:
            _same_dtype("cat", xs[0], x)
        if not 0 <= dim < max(len(xs[0].shape), 1):
            raise IndexOutOfRangeError(f"cat: dim {dim} is out of range for shape "
                                       f"{xs[0].shape}")
        shape = sh.cat([x.shape for x in xs], dim)
        if len(xs) == 1:
            return xs[0]
        return self._rec(K.CAT, None, (dim,), xs, _EMPTY, shape, xs[0].dtype)

    def contiguous(self, x: FT) -> FT:
        return self._rec(K.CONTIGUOUS, None, _EMPTY, (x,), _EMPTY, x.shape, x.dtype)

    # ---------------------------------------------------------------- indexing
    def _index(self, op: str, index: FT, rank: int | None = None) -> None:
        if index.dtype is not dt.int64:
            raise DTypeError(f"{op}: index must be int64, got {index.dtype.name} {index.shape}")
        if rank is not None and len(index.shape) != rank:
            raise ShapeError(f"{op}: index must be {rank}-D, got shape {index.shape}")

    def gather(self, x: FT, dim: int, index: FT) -> FT:
        self._index("gather", index)
        _check_dims("gather", x.shape, (dim,))
        shape = sh.gather("gather", x.shape, dim, index.shape)
        return self._rec(K.GATHER, None, (dim,), (x, index), _EMPTY, shape, x.dtype,
                         user_location(2))

    def scatter_add(self, x: FT, dim: int, index: FT, src: FT) -> FT:
        self._index("scatter_add", index)
        _check_dims("scatter_add", x.shape, (dim,))
        _same_dtype("scatter_add", x, src)
        sh.gather("scatter_add", x.shape, dim, index.shape)
        if len(src.shape) != len(index.shape) or any(
                a > b for a, b in zip(index.shape, src.shape)):
            raise ShapeError(f"scatter_add: index shape {index.shape} exceeds src shape "
                             f"{src.shape}")
        return self._rec(K.SCATTER_ADD, None, (dim,), (x, index, src), _EMPTY, x.shape,
                         x.dtype, user_location(2))

    def index_select(self, x: FT, dim: int, index: FT) -> FT:
        self._index("index_select", index, 1)
        _check_dims("index_select", x.shape, (dim,))
        shape = x.shape[:dim] + index.shape + x.shape[dim + 1:]
        return self._rec(K.INDEX_SELECT, None, (dim,), (x, index), _EMPTY, shape, x.dtype,
                         user_location(2))

    def index_add(self, x: FT, dim: int, index: FT, src: FT) -> FT:
        self._index("index_add", index, 1)
        _check_dims("index_add", x.shape, (dim,))
        _same_dtype("index_add", x, src)
        want = x.shape[:dim] + index.shape + x.shape[dim + 1:]
        if src.shape != want:
            raise ShapeError(f"index_add: src shape {src.shape} should be {want} for x "
                             f"{x.shape}, dim {dim} and {index.shape[0]} indices")
        return self._rec(K.INDEX_ADD, None, (dim,), (x, index, src), _EMPTY, x.shape,
                         x.dtype, user_location(2))

    # ---------------------------------------------------------------- helpers
    def softmax(self, x: FT, dim: int) -> FT:
        """One opaque op when the inner backend has its own softmax (numpy's runs row blocks
        in cache); else the generic helper's primitives, which fuse with their neighbours."""
        if type(self.inner).softmax is Backend.softmax or type(x) is not FT:
            return Backend.softmax(self, x, dim)
        _check_dims("softmax", x.shape, (dim,))
        return self.custom(f"softmax(dim={dim})", self.inner.softmax, (x,),
                           ((x.shape, x.dtype),), (dim,), location=user_location(2))[0]

    def linear(self, x: FT, weight: FT, bias=None) -> FT:
        """One opaque op (the inner backend's `linear`: a matmul with a transposed view)
        instead of a permute, a reshape and a matmul. The bias is part of the op where the
        inner backend adds it in the kernel (wgpu); else it is an add of its own, which fuses
        with what follows (numpy)."""
        if type(x) is not FT or type(weight) is not FT or (bias is not None
                                                           and type(bias) is not FT):
            return Backend.linear(self, x, weight, bias)
        if not x.shape or len(weight.shape) != 2 or x.shape[-1] != weight.shape[1]:
            raise ShapeError(f"linear: input {x.shape} does not end with the weight's "
                             f"in_features ({weight.shape} is [out, in])")
        _same_dtype("linear", x, weight)
        out = ((x.shape[:-1] + weight.shape[:1], x.dtype),)
        if bias is not None:
            if bias.shape != weight.shape[:1]:
                raise ShapeError(f"linear: bias of shape {bias.shape} should be "
                                 f"{weight.shape[:1]} for the weight {weight.shape}")
            _same_dtype("linear", x, bias)
            if self.inner.linear_bias_in_kernel and len(x.shape) >= 2:
                fn = self.__dict__.get("_linear_bias_fn")
                if fn is None:  # made once: a custom op's function is part of the plan key
                    inner = self.inner
                    fn = self.__dict__["_linear_bias_fn"] = \
                        lambda x, w, b: inner.linear(x, w, b)
                return self.custom("linear+bias", fn, (x, weight, bias), out,
                                   location=user_location(2))[0]
        y = self.custom("linear", self.inner.linear, (x, weight), out,
                        location=user_location(2))[0]
        return y if bias is None else self.binary(BinaryOp.ADD, y, bias)

    def layer_norm(self, x: FT, n_dims: int, eps: float, weight=None, bias=None) -> FT:
        """One opaque op when the inner backend has its own layer_norm, as softmax."""
        tensors = [t for t in (weight, bias) if t is not None]
        if (type(self.inner).layer_norm is Backend.layer_norm or type(x) is not FT
                or any(type(t) is not FT for t in tensors) or not x.dtype.is_float
                or n_dims == 0):
            return Backend.layer_norm(self, x, n_dims, eps, weight, bias)
        inner_shape = x.shape[len(x.shape) - n_dims:]
        if not 1 <= n_dims <= len(x.shape):
            raise ShapeError(f"layer_norm: cannot normalize {n_dims} trailing dims of shape "
                             f"{x.shape}")
        for name, t in (("weight", weight), ("bias", bias)):
            if t is not None:
                if t.shape != inner_shape:
                    raise ShapeError(f"layer_norm: {name} of shape {t.shape} should be "
                                     f"{inner_shape} for input {x.shape}")
                _same_dtype("layer_norm", x, t)
        fns = self.__dict__.get("_layer_norm_fns")
        if fns is None:
            fns = self.__dict__["_layer_norm_fns"] = _layer_norm_fns(self.inner)
        fn = fns[(weight is not None, bias is not None)]
        return self.custom(f"layer_norm(n_dims={n_dims})", fn, (x, *tensors),
                           ((x.shape, x.dtype),), (n_dims, float(eps)),
                           location=user_location(2))[0]

    def attention(self, q: FT, k: FT, v: FT, mask=None, scale: float = 1.0) -> FT:
        """One opaque op when the inner backend has its own attention (numpy's never holds
        the whole batch's scores); else the generic helper's primitives."""
        tensors = (q, k, v) if mask is None else (q, k, v, mask)
        if (type(self.inner).attention is Backend.attention
                or any(type(t) is not FT for t in tensors)):
            return Backend.attention(self, q, k, v, mask, scale)
        scores = sh.matmul(q.shape, k.shape[:-2] + k.shape[:-3:-1])
        shape = sh.matmul(scores, v.shape)
        if mask is not None and sh.broadcast("attention", scores, mask.shape) != scores:
            raise ShapeError(f"attention: mask of shape {mask.shape} does not broadcast to "
                             f"the scores {scores}")
        for t in tensors[1:]:
            _same_dtype("attention", q, t)
        fns = self.__dict__.get("_attention_fns")
        if fns is None:  # made once: a custom op's function is part of the plan key
            inner = self.inner
            fns = self.__dict__["_attention_fns"] = (
                lambda q, k, v, scale: inner.attention(q, k, v, None, scale),
                lambda q, k, v, mask, scale: inner.attention(q, k, v, mask, scale))
        return self.custom("attention", fns[mask is not None], tensors, ((shape, q.dtype),),
                           (float(scale),), location=user_location(2))[0]

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
            if self.handles.released:
                self.handles.process(self.stream.seen)
            outs = self.stream.record_custom(name, fn, tuple(inputs), outputs, tuple(scalars),
                                             location)
            if len(self.stream.ops) >= self.max_ops:
                self._drain()
            return outs

    def eager(self, fn: Callable, inputs: Sequence[FT], scalars: tuple = ()):
        """Run `fn(*input_primitives, *scalars)` now (for ops whose output shape depends on
        the data): drains what is pending, returns the outputs as materialized tensors (one,
        or a list when `fn` returns a list/tuple)."""
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
        self._drain()
        self.inner.sync()

    def _drain(self) -> None:
        with self._lock:
            stream = self.stream
            h = self.handles
            if h.released:
                h.process(stream.seen)
            if not stream.ops:
                return
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
                    plan = build_plan(stream, key)
                    self.cache.put(key, plan)
                execute(plan, stream, h, self.inner, reports)
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

    @property
    def pending(self) -> int:
        """Number of recorded ops not run yet."""
        return len(self.stream.ops)



def _layer_norm_fns(inner: Backend) -> dict:
    """(has weight, has bias) -> the custom-op function calling `inner.layer_norm` (made once
    per layer: the same functions keep plans shareable)."""
    return {
        (True, True): lambda x, w, b, n, eps: inner.layer_norm(x, n, eps, w, b),
        (True, False): lambda x, w, n, eps: inner.layer_norm(x, n, eps, w, None),
        (False, True): lambda x, b, n, eps: inner.layer_norm(x, n, eps, None, b),
        (False, False): lambda x, n, eps: inner.layer_norm(x, n, eps, None, None),
    }
