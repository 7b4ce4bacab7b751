"""CubeBackend: the family base of the kernel backends (wgpu, CUDA).

Its primitives are `CubeTensor`s on one runtime client. What does not depend on the kernel
language lives here: dtype support and storage, host transfer, the movement ops that are
metadata only (reshape of a contiguous tensor, permute, expand, slice as strided views), and
the generated kernels (elementwise ops, casts, fused blocks), rendered by the client's
`Renderer` and launched with the same info layouts on every runtime. A runtime backend adds
the hand-written kernels (copies, reductions, indexing, matmul). Extension authors select the
whole family with `Cube`.
"""
from __future__ import annotations

import functools
import math
import struct
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import dtype as dt
from ... import shape as sh
from ...dtype import DType
from ...errors import DeviceError, DTypeError, ShapeError
from ...ops import ARG_REDUCTIONS, BinaryOp, ReduceOp, UnaryOp
from ..base import Backend, binary_out_dtype, reduce_out_dtype
from ..fused import run_generic
from . import replay as _replay
from .client import ComputeClient
from .launch import broadcast_strides, coalesce, info_words, split_block
from .renderer import WG
from .source import DEFAULT_ENTRY, CubeCount, TextKernelSource, elem_storage, filled_kernel
from .tensor import CubeTensor, contiguous_strides

#: Kernels index elements with 32-bit unsigned integers, computed as `block * size + thread`:
#: the last block's threads reach up to one block past the element count, and must not wrap
#: around to a small index (blocks have at most 2^16 threads).
MAX_ELEMENTS = 2 ** 32 - 2 ** 16

#: Reductions over at least this many elements per output use a workgroup per output.
_ROWS_MIN = 64
#: Reductions with fewer outputs than this and at least _SPLIT_MIN elements each are split
#: over several workgroups per output (two passes).
_SPLIT_OUTPUTS = 64
_SPLIT_MIN = 16384
_SPLIT_CHUNK = 8192

#: Invocations per workgroup of the row kernels (softmax, layer_norm): rows are often short.
ROW_WG = 128

_I32 = np.iinfo(np.int32)

#: int64 on a runtime that stores it in 32 bits (WGSL): the ops whose result can leave the
#: 32-bit range, and the condition (over the operands' compute values v0, v1) that it did.
#: Arithmetic wraps in 32 bits, so the checks read the wrapped result.
_I32_MIN = "(-2147483647 - 1)"
_BINARY_OVERFLOW = {
    BinaryOp.ADD: "((v0 ^ (v0 + v1)) & (v1 ^ (v0 + v1))) < 0",
    BinaryOp.SUB: "((v0 ^ v1) & (v0 ^ (v0 - v1))) < 0",
    BinaryOp.MUL: f"(v0 != 0 && (v0 * v1) / v0 != v1) || (v0 == -1 && v1 == {_I32_MIN}) || "
                  f"(v1 == -1 && v0 == {_I32_MIN})",
    BinaryOp.FLOOR_DIV: f"v0 == {_I32_MIN} && v1 == -1",
    BinaryOp.POW: "v1 > 0 && abs({f0}) > 1.0 && {f1} * log2(abs({f0})) >= 30.999",
    # (amounts outside [0, 64) give 0 in int64 too: only [32, 64) always leaves 32 bits)
    BinaryOp.SHL: "v0 != 0 && v1 >= 0 && v1 < 64 && (v1 > 31 || lz_shr(lz_shl(v0, v1), v1) "
                  "!= v0)",
}
_UNARY_OVERFLOW = {UnaryOp.NEG: f"v0 == {_I32_MIN}", UnaryOp.ABS: f"v0 == {_I32_MIN}"}
#: Sums of magnitudes (float32) from which an int64 accumulation may leave 32 bits: 2^31 less
#: a margin for float32 rounding, so a result that does not fit is never missed.
_I32_BOUND = 2.0 ** 31 - 2.0 ** 21
_F32, _F32_BITS = struct.Struct("<f"), struct.Struct("<I")


def _holds(wide: DType, narrow: DType) -> bool:
    """Whether every value of the integer dtype `narrow` is a value of `wide`."""
    a, b = np.iinfo(wide.np), np.iinfo(narrow.np)
    return a.min <= b.min and b.max <= a.max


def attention_layout(d: int, dv: int, threads: int, rows: int, bk: int) -> tuple:
    """The fused attention kernel's shared-memory layout, as the kernels declare it (CUDA's
    kernels/attention.cu, wgpu's `codegen.attention_kernel`): (query rows a block, q/k
    columns padded to float4s, v columns padded to whole float4s for each of the 8 lanes,
    the row strides of q/k and of the probabilities). Rows are 4 * an odd number of floats
    apart, so the float4s that lanes of consecutive rows read at once fall in distinct
    banks."""
    dp = -(-d // 4) * 4
    return (threads // 8 * rows, dp, -(-dv // 32) * 32,
            dp + 4 if (dp // 4) % 2 == 0 else dp, bk + 4 if (bk // 4) % 2 == 0 else bk)


@functools.lru_cache(maxsize=256)
def attention_tile(d: int, dv: int, threads: int, rows: int, bk: int, limit: int,
                   lane_scratch: int = 0) -> int | None:
    """The keys per tile of the fused attention kernel: `bk`, halved (down to 8) while the
    block's shared memory (its query rows, a tile of k, v and probabilities, the mask row,
    `lane_scratch` floats per lane and row) would pass `limit` bytes; None when even 8 keys
    do not fit."""
    bk = max(8, bk // 8 * 8)            # the 8 lanes of a group share a tile's keys
    while True:
        bq, _, dvp, ks, ps = attention_layout(d, dv, threads, rows, bk)
        floats = bq * ks + bk * ks + bk * dvp + bq * ps + bk + lane_scratch * threads * rows
        if 4 * floats <= limit:
            return bk
        if bk <= 8:
            return None
        bk = max(8, bk // 16 * 8)


def _last_index(t: CubeTensor) -> int:
    """The largest element index a view of `t`'s layout reaches in its buffer."""
    return t.offset + sum((size - 1) * st for size, st in zip(t.shape, t.strides))


def into_contiguous(tensor: CubeTensor) -> CubeTensor:
    """`tensor` itself when kernels can index it densely from 0, else a contiguous copy."""
    if tensor.is_contiguous():
        return tensor
    return tensor.client.backend.contiguous(tensor)


class CubeBackend(Backend):
    """A kernel backend on one `ComputeClient` (`client.lang` is its kernel language)."""

    name = "cube"
    #: The folder of the runtime's hand-written kernel templates: `<stem>.<renderer.file_ext>`
    #: (fill, copy, reduce, rows, scan, gather, check_index, scatter_add), each with the same
    #: placeholders and info layout in every language.
    kernels_dir: Path
    #: Re-issue a kernel op's recorded launches instead of re-running its logic (replay.py):
    #: None follows `replay_default()` at each op, True/False override it for this backend.
    replay = None
    #: Start pending work once 4M output elements are queued and an independent op arrives
    #: (see Backend.overlap_elements): a launch is then worth more than the host's next ops.
    overlap_elements = 1 << 22

    def __init__(self, client: ComputeClient, device: str):
        self.client = client
        self.device = device              # "wgpu:0": what CubeTensor.device holds
        self.renderer = client.renderer   # generated kernels in the client's language
        client.backend = self
        self._replays = _replay.new_memo()
        self.replay_hits = 0              # ops served by a replay (for tests and benchmarks)

    # ------------------------------------------------------------------ device graphs
    #: Whether the client records launches into a replayable graph (`begin_graph`): then
    #: `lazyt.compile` replays a recording as one graph (a CUDA graph, or a wgpu dispatch list
    #: with its bind groups made once).
    @property
    def graphs(self) -> bool:
        return hasattr(self.client, "begin_graph")

    def graph_begin(self, reuse=None, fresh=()) -> None:
        if reuse is None:
            self.client.begin_graph()
        else:   # a re-capture over another graph's buffers (clients with `graph_handout`)
            self.client.begin_graph(reuse, fresh)

    @property
    def graph_handout(self) -> bool:
        """Whether a graph's results can be handed out without a copy: the client captures
        again over a graph's buffers (`begin_graph(reuse=...)`) and makes `alias` handles."""
        return getattr(self.client, "graph_handout", False)

    def graph_kept(self, graph) -> list:
        """The buffers `graph` writes, in allocation order (what a re-capture reuses)."""
        return graph.kept

    def graph_alias(self, x: CubeTensor, handle) -> CubeTensor:
        """`x`'s layout on `handle` (an `alias` of x's buffer)."""
        return CubeTensor(self.client, self.device, x.shape, x.strides, handle, x.dtype,
                          x.offset)

    def graph_new_alias(self, x: CubeTensor):
        """A new alias handle on `x`'s buffer."""
        return self.client.alias(x.handle)

    def graph_end(self):
        return self.client.end_graph()

    def graph_abort(self) -> None:
        self.client.abort_graph()

    def graph_buffer_like(self, x: CubeTensor) -> CubeTensor:
        """A tensor with `x`'s layout on a new buffer of the same size (uninitialized)."""
        return CubeTensor(self.client, self.device, x.shape, x.strides,
                          self.client.empty(x.handle.nbytes), x.dtype, x.offset)

    def graph_copy(self, dst: CubeTensor, src: CubeTensor) -> None:
        """Queue a copy of `src`'s whole buffer into `dst`'s (same size and layout)."""
        self.client.copy_buffer(dst.handle, src.handle, src.handle.nbytes)

    def graph_clone(self, x: CubeTensor) -> CubeTensor:
        """A copy of `x` (same layout) on a new buffer, queued."""
        out = self.graph_buffer_like(x)
        self.graph_copy(out, x)
        return out

    def replay_default(self) -> bool:
        """Whether ops replay when `replay` is None (a runtime may read a switch here)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device}: {getattr(self.client, 'description', '')})"

    @property
    def lang(self) -> str:
        return self.client.lang

    # ------------------------------------------------------------------ kernels
    def _template(self, stem: str, values: dict, entry: str | None = None,
                  wg: int = WG) -> TextKernelSource:
        """The runtime's template `stem` filled with `values` (memoized)."""
        r = self.renderer
        return filled_kernel(self.kernels_dir, f"{stem}.{r.file_ext}", r.lang,
                             entry or DEFAULT_ENTRY[r.lang], wg, tuple(sorted(values.items())))

    def reduce_acc(self, dtype: DType) -> DType:
        """The accumulator of reductions over `dtype`: float64 stays float64, other floats
        accumulate in float32, integers and bools in the widest integer the runtime computes
        (int64 where it is 64-bit, else int32)."""
        if dtype is dt.float64:
            return dt.float64
        if dtype.is_float:
            return dt.float32
        wide = self.renderer.type_of(dt.int64)
        return dt.int64 if wide.compute != self.renderer.type_of(dt.int32).compute else dt.int32

    # ------------------------------------------------------------------ dtypes
    def dtypes(self) -> tuple[DType, ...]:
        """The dtypes this device stores (float16 only where the runtime has it)."""
        out = []
        for d in dt.ALL:
            try:
                elem_storage(d, self.lang)
            except DTypeError:
                continue
            if d is dt.float16 and not getattr(self.client, "has_f16", True):
                continue
            out.append(d)
        return tuple(out)

    def check_dtype(self, op: str, dtype: DType) -> None:
        """`DTypeError` naming the device when it cannot hold `dtype`."""
        if dtype not in self.dtypes():
            desc = getattr(self.client, "description", "")
            extra = " (the adapter lacks shader-f16)" if dtype is dt.float16 else ""
            raise DTypeError(f"{op}: {dtype.name} is not supported on {self.device}"
                             f"{' (' + desc + ')' if desc else ''}{extra}; this device has "
                             + ", ".join(d.name for d in self.dtypes())
                             + (" (use float32)" if dtype is dt.float64 else ""))

    def storage_of(self, dtype: DType) -> np.dtype:
        """The host dtype of `dtype`'s device buffers (int64 is 32-bit in WGSL, bool u32)."""
        return elem_storage(dtype, self.lang)

    def nbytes(self, shape: tuple, dtype: DType) -> int:
        n = 1
        for s in shape:
            n *= int(s)
        return n * self.storage_of(dtype).itemsize

    def check_numel(self, op: str, shape: tuple) -> int:
        n = 1
        for s in shape:
            n *= int(s)
        if n > MAX_ELEMENTS:
            raise ShapeError(f"{op}: shape {tuple(shape)} has {n} elements; {self.device} "
                             f"kernels index at most 2^32 - 2^16 (32-bit indices)")
        return n

    def alloc(self, op: str, shape: tuple, dtype: DType) -> CubeTensor:
        """A new contiguous, uninitialized tensor, with the size checks."""
        shape = tuple(map(int, shape))
        n = 1
        for s in shape:
            n *= s
        if n > MAX_ELEMENTS:
            self.check_numel(op, shape)          # raises, naming the op
        nbytes = n * self.storage_of(dtype).itemsize
        client = self.client
        try:
            client.check_size(nbytes)
        except DeviceError:                      # again, with the op's name in the message
            client.check_size(nbytes, f"{op}: a {dtype.name} tensor of shape {shape}")
            raise
        return CubeTensor.new_contiguous(client, self.device, shape, client.empty(nbytes), dtype)

    # ------------------------------------------------------------------ transfer
    def shape_of(self, x: CubeTensor) -> tuple:
        return x.shape

    def dtype_of(self, x: CubeTensor) -> DType:
        return x.dtype

    def from_numpy(self, array: np.ndarray) -> CubeTensor:
        array = np.asarray(array)
        dtype = dt.from_numpy(array.dtype)
        self.check_dtype("from_numpy", dtype)
        storage = self.storage_of(dtype)
        if dtype.is_int and storage.itemsize < dtype.itemsize and array.size:
            lo, hi = array.min(), array.max()
            if lo < _I32.min or hi > _I32.max:
                bad = lo if lo < _I32.min else hi
                raise DTypeError(f"from_numpy: {dtype.name} value {int(bad)} does not fit on "
                                 f"{self.device}, which stores {dtype.name} as 32-bit integers "
                                 f"({_I32.min}..{_I32.max}); shape {array.shape}")
        data = np.ascontiguousarray(array, dtype=storage)
        shape = tuple(array.shape)
        self.check_numel("from_numpy", shape)
        self.client.check_size(data.nbytes, f"from_numpy: a {dtype.name} tensor of shape {shape}")
        handle = self.client.create_from_slice(data)
        return CubeTensor.new_contiguous(self.client, self.device, shape, handle, dtype)

    def to_numpy(self, x: CubeTensor) -> np.ndarray:
        storage = self.storage_of(x.dtype)
        if x.num_elements == 0:
            return np.zeros(x.shape, x.dtype.np)
        x = into_contiguous(x)
        nbytes = x.num_elements * storage.itemsize
        read_array = getattr(self.client, "read_array", None)
        if read_array is not None:   # a fresh writable array: viewed, not copied again
            out = read_array(x.handle, nbytes).view(storage).reshape(x.shape)
            return out if out.dtype == x.dtype.np else out.astype(x.dtype.np)
        raw = self.client.read(x.handle, nbytes)
        out = np.frombuffer(raw, storage, x.num_elements).reshape(x.shape)
        if out.dtype != x.dtype.np:
            out = out.astype(x.dtype.np)
        elif not out.flags.writeable:
            out = out.copy()
        return out

    def empty(self, shape: tuple, dtype: DType) -> CubeTensor:
        self.check_dtype("empty", dtype)
        return self.alloc("empty", shape, dtype)

    def sync(self) -> None:
        self.client.sync()

    # ------------------------------------------------------------------ launch shape
    def groups(self, n_groups: int) -> CubeCount:
        """`n_groups` workgroups laid out within the device's per-dimension limit."""
        top = self.client.limits.max_workgroups_per_dim
        if n_groups <= top:
            return CubeCount(n_groups)
        return CubeCount.split(n_groups, top)

    def groups_for(self, n: int, per_group: int = WG) -> CubeCount:
        return self.groups(-(-n // per_group))

    # ------------------------------------------------------------------ elementwise
    def _scalar_bits(self, op: str, value, dtype: DType) -> np.ndarray:
        """A Python scalar as one element of `dtype`'s device storage."""
        storage = self.storage_of(dtype)
        if dtype is dt.bool_:
            return np.array([bool(value)], storage)
        if not dtype.is_float:
            v = int(value)
            if dtype in dt.SMALL_INTS:   # stored in wider words: the dtype's own range
                lim = np.iinfo(dtype.np)
                if not lim.min <= v <= lim.max:
                    raise DTypeError(f"{op}: the scalar {v} does not fit the tensor's dtype "
                                     f"{dtype.name} ({lim.min}..{lim.max})")
            lim = np.iinfo(storage)
            if not lim.min <= v <= lim.max:
                raise DTypeError(f"{op}: the {dtype.name} scalar {v} does not fit on "
                                 f"{self.device}, which computes {dtype.name} in "
                                 f"{8 * storage.itemsize} bits")
            return np.array([v], storage)
        with np.errstate(over="ignore"):
            return np.array([value], storage)

    def elementwise(self, key: tuple, expr: str, inputs: list, types: list, out_dtype: DType,
                    shape: tuple) -> CubeTensor:
        """Launch the generated elementwise kernel `expr` (over the compute values v0, v1, ...
        of `types`) over `inputs` (CubeTensors or scalars already as one-element storage
        arrays) broadcast to `shape`; `key[0]` names the op (and with `key[1]` the kernel)."""
        name = key[0] if len(key) < 3 or key[0] == "cast" else f"{key[0]}_{key[1]}"
        kernel = self.renderer.elementwise_kernel(name, tuple(types),
                                                  self.renderer.type_of(out_dtype), expr)
        return self._elementwise(key[0], kernel, inputs, out_dtype, shape)

    def _elementwise(self, op: str, kernel, inputs: list, out_dtype: DType,
                     shape: tuple) -> CubeTensor:
        out = self.alloc(op, shape, out_dtype)
        n = out.num_elements
        if n == 0:
            return out
        strides = [[0] * len(shape) if isinstance(x, np.ndarray) else
                   broadcast_strides(x, shape) for x in inputs]
        cshape, cstrides = coalesce(shape, strides)
        dense = contiguous_strides(tuple(cshape))
        head, tails, strided = [], [], 0
        for x, st in zip(inputs, cstrides):
            offset = 0 if isinstance(x, np.ndarray) else x.offset
            if isinstance(x, np.ndarray) or all(s == 0 for s in st):
                head += [offset, 0]
                tails.append([0] * len(cshape))
            elif list(st) == list(dense):
                head += [offset, 1]
                tails.append([0] * len(cshape))
            else:
                head += [offset, 0]
                tails.append(st)
                strided = 1
        info = info_words([n, len(cshape), strided, *head, *cshape,
                           *(v for t in tails for v in t)])
        self.client.launch(kernel, self.groups_for(n), [*inputs, out, info])
        return out

    def unary(self, op: UnaryOp, x: CubeTensor) -> CubeTensor:
        if op in _UNARY_OVERFLOW and self._narrow(x.dtype):
            self._check_flags(op.value, "the result", _UNARY_OVERFLOW[op], [x], x.shape)
        return self._elementwise("unary", self.renderer.unary_kernel(op, x.dtype), [x],
                                 x.dtype, x.shape)

    def _operands(self, op: str, values: list, dtype: DType):
        """Tensors stay, scalars become one-element storage arrays; plus the broadcast shape."""
        shapes = [v.shape for v in values if isinstance(v, CubeTensor)]
        shape = sh.broadcast(op, *shapes) if len(shapes) > 1 else shapes[0]
        ops = [v if isinstance(v, CubeTensor) else self._scalar_bits(op, v, dtype)
               for v in values]
        return ops, tuple(shape)

    def binary(self, op: BinaryOp, lhs, rhs) -> CubeTensor:
        dtype = lhs.dtype if isinstance(lhs, CubeTensor) else rhs.dtype
        kernel = self.renderer.binary_kernel(op, dtype)
        ops, shape = self._operands(op.value, [lhs, rhs], dtype)
        if op in _BINARY_OVERFLOW and self._narrow(dtype):
            f = self.renderer.type_of(dt.float32).compute
            cond = _BINARY_OVERFLOW[op].format(f0=self.renderer.convert(f, "v0"),
                                               f1=self.renderer.convert(f, "v1"))
            self._check_flags(op.value, "the result", cond, ops, shape)
        return self._elementwise("binary", kernel, ops, binary_out_dtype(op, dtype), shape)

    def where(self, cond: CubeTensor, lhs, rhs) -> CubeTensor:
        dtype = lhs.dtype if isinstance(lhs, CubeTensor) else \
            rhs.dtype if isinstance(rhs, CubeTensor) else None
        if dtype is None:
            raise DTypeError("where: expected lhs or rhs to be a tensor")
        kernel = self.renderer.where_kernel(dtype)
        ops, shape = self._operands("where", [cond, lhs, rhs], dtype)
        return self._elementwise("where", kernel, ops, dtype, shape)

    def cast(self, x: CubeTensor, dtype: DType) -> CubeTensor:
        if dtype is x.dtype:
            return x
        self.check_dtype("cast", dtype)
        src, dst = self.renderer.type_of(x.dtype), self.renderer.type_of(dtype)
        if src.storage == dst.storage and src.compute == dst.compute and (
                not dst.bits or (src.bits and _holds(dtype, x.dtype))):
            # the same words hold the same values (int32 <-> int64 in WGSL; uint8 -> int16
            # or int32 there, which needs no wrapping): a view
            return CubeTensor(x.client, x.device, x.shape, x.strides, x.handle, dtype, x.offset)
        if x.dtype in (dt.float32, dt.float64) and self._narrow(dtype):
            self._check_flags("cast", f"a {x.dtype.name} value cast to {dtype.name}",
                              "v0 >= 2147483648.0 || v0 < -2147483648.0", [x], x.shape)
        return self._elementwise("cast", self.renderer.cast_kernel(x.dtype, dtype), [x], dtype,
                                 x.shape)

    # ------------------------------------------------------------------ int64 in 32 bits
    def _narrow(self, dtype: DType) -> bool:
        """Whether `dtype` is int64 stored in fewer bits on this runtime (WGSL's i32)."""
        return dtype is dt.int64 and self.storage_of(dtype).itemsize < 8

    def _needs_int64_checks(self, block) -> bool:
        """Whether a fused block computes int64 values that must be range checked here (such a
        block runs op by op, through the checked primitives)."""
        cached = block.cache.get(("int64_checks", self.lang))
        if cached is None:
            cached = False
            if self.storage_of(dt.int64).itemsize < 8:
                from .renderer import operand_dtype
                for ins in block.instrs:
                    src = operand_dtype(block, ins.operands[0])
                    if ((ins.kind == "binary" and ins.op in _BINARY_OVERFLOW)
                            or (ins.kind == "unary" and ins.op in _UNARY_OVERFLOW)) \
                            and src is dt.int64:
                        cached = True
                    if ins.kind == "cast" and ins.dtype is dt.int64 and src.is_float:
                        cached = True
            block.cache[("int64_checks", self.lang)] = cached
        return cached

    def _overflow_message(self, op: str, what: str, may: bool = False) -> str:
        why = ("; the magnitudes it accumulates reach 2^31 and this device cannot check the "
               "exact value" if may else "")
        return (f"{op}: {what} {'may not fit' if may else 'does not fit'} in int64 on "
                f"{self.device}, which stores int64 in 32 bits ({_I32.min}..{_I32.max}){why}; "
                f"compute it on cpu or cuda (real 64-bit integers), or in float32/float64")

    def _check_flags(self, op: str, what: str, cond: str, ops: list, shape: tuple) -> None:
        """Evaluate `cond` (over the operands' compute values) per element; if it holds for
        any, the next read raises `DTypeError` naming the op."""
        if not shape or math.prod(shape):
            types = tuple(self.renderer.type_of(o.dtype if isinstance(o, CubeTensor) else
                                                dt.int64) for o in ops)
            flags = self.elementwise(("range_check", op, "flags"), self.renderer.as_bool(cond),
                                     ops, list(types), dt.bool_, tuple(shape))
            self._raise_if_any(flags, self._overflow_message(op, what))

    def _check_bound(self, op: str, magnitude: CubeTensor) -> None:
        """`magnitude` bounds (in float32) the absolute values an int64 result computed
        here passes through; the next read raises when one may leave 32 bits."""
        flags = self.binary(BinaryOp.GE, magnitude, _I32_BOUND)
        self._raise_if_any(flags, self._overflow_message(op, "the int64 result", may=True))

    def _magnitude(self, x: CubeTensor) -> CubeTensor:
        """|x| in float32 (exact bounds for 32-bit integers up to float32 rounding)."""
        return self.unary(UnaryOp.ABS, self.cast(x, dt.float32))

    def _raise_if_any(self, flags: CubeTensor, message: str) -> None:
        n = flags.num_elements
        if n == 0:
            return
        flat = self.reshape(self.contiguous(flags), (n,))
        anyf = self.reduce(ReduceOp.MAX, flat, (0,), True)
        view = CubeTensor(anyf.client, anyf.device, (1,), (1,), anyf.handle, dt.int32,
                          anyf.offset)
        slot = self.client.error_slot(lambda v: message, error=DTypeError)
        p = self._template("check_index", {"index": self._index_type(view)})
        self.client.launch(p, self.groups_for(1), [view, self.client.errors_binding,
                                                   info_words([1, 1, view.offset, slot, 1,
                                                               1, 1])])

    # ------------------------------------------------------------------ fused blocks
    def _scalar_words(self, value, dtype: DType) -> tuple:
        """A block scalar as the u32 words of its compute value's bits (one word; two, low
        first, for 64-bit compute types; f16 scalars are rounded to f16, then computed in
        f32)."""
        if dtype is dt.float32:
            try:
                return _F32_BITS.unpack(_F32.pack(value))
            except OverflowError:
                value = math.copysign(math.inf, value)
                return _F32_BITS.unpack(_F32.pack(value))
        if dtype is dt.bool_:
            return (int(bool(value)),)
        if self.renderer.scalar_width(dtype) == 2:
            if dtype.is_float:
                bits = np.array([value], np.float64)
            else:
                bits = self._scalar_bits("fused", value, dtype).astype(np.int64)
            return tuple(int(w) for w in bits.view(np.uint32))
        if not dtype.is_float:   # a 32-bit compute value (uint8/int8/int16 are stored narrower)
            return (int(self._scalar_bits("fused", value, dtype)[0]) & 0xFFFFFFFF,)
        with np.errstate(over="ignore"):
            v = np.float32(np.float16(value))
        return (int(np.array([v], np.float32).view(np.uint32)[0]),)

    @_replay.replayable()
    def run_fused(self, block, inputs: Sequence, scalars: Sequence) -> list:
        """One generated kernel per fused elementwise block (split when it would bind more
        storage buffers than the device allows)."""
        if any(x is None for x in inputs) or self._needs_int64_checks(block):
            return run_generic(self, block, inputs, scalars)
        limit = self.client.limits.max_storage_buffers
        if len(block.inputs) + len(block.outputs) + 1 > limit:
            return self._run_split(block, inputs, scalars, limit)
        outs = [self.alloc("fused", block.shape, block.instrs[v].dtype) for v in block.outputs]
        n = outs[0].num_elements if outs else 0
        if n == 0:
            return outs
        words = [w for v, d in zip(scalars, block.scalars) for w in self._scalar_words(v, d)]
        shape = tuple(block.shape)
        strides = [broadcast_strides(x, shape) for x in inputs]
        cshape, cstrides = coalesce(shape, strides)
        dense = list(contiguous_strides(tuple(cshape)))
        splat = tuple(all(s == 0 for s in st) for st in cstrides)
        linear = tuple(list(st) == dense for st in cstrides)
        vec4 = n % 4 == 0 and self.renderer.can_vectorize(block) and all(
            s or (lin and x.offset % 4 == 0) for x, s, lin in zip(inputs, splat, linear))
        if vec4:
            n4 = n // 4
            info = info_words([n4, *(x.offset for x in inputs), *words])
            self.client.launch(self.renderer.fused_kernel(block, True, splat),
                               self.groups_for(n4, self.renderer.fused_vec_per_thread *
                                               self.renderer.fused_vec_wg),
                               [*inputs, *outs, info])
            return outs
        head, tails, strided = [], [], 0
        for x, st, s, lin in zip(inputs, cstrides, splat, linear):
            head += [x.offset, int(lin and not s)]
            if s or lin:
                tails.append([0] * len(cshape))
            else:
                tails.append(st)
                strided = 1
        info = info_words([n, len(cshape), strided, *head, *words, *cshape,
                           *(v for t in tails for v in t)])
        self.client.launch(self.renderer.fused_kernel(block), self.groups_for(n),
                           [*inputs, *outs, info])
        return outs

    def _run_split(self, block, inputs, scalars, limit: int) -> list:
        values: dict = {}
        for sub, ext, outs in split_block(block, limit):
            got = self.run_fused(sub, [inputs[r.index] if r.kind == "in" else values[r.index]
                                       for r in ext], scalars)
            values.update(zip(outs, got))
        return [values[v] for v in block.outputs]

    # ------------------------------------------------------------------ reductions
    def reduce(self, op: ReduceOp, x: CubeTensor, dims: tuple, keepdim: bool) -> CubeTensor:
        out_dtype = reduce_out_dtype(op, x.dtype)
        if op in (ReduceOp.SUM, ReduceOp.PROD) and self._narrow(out_dtype) and \
                x.dtype is not dt.bool_ and x.num_elements:
            mag = self._magnitude(x)
            if op is ReduceOp.SUM:
                self._check_bound(op.value, self.reduce(ReduceOp.SUM, mag, dims, keepdim))
            else:   # sum of log|x| against 31 ln 2 (a zero gives -inf: no overflow)
                logs = self.reduce(ReduceOp.SUM, self.unary(UnaryOp.LOG, mag), dims, keepdim)
                self._raise_if_any(self.binary(BinaryOp.GE, logs, 21.48),
                                   self._overflow_message(op.value, "the int64 result",
                                                          may=True))
        out_shape = sh.reduce(x.shape, dims, keepdim)
        keep = [d for d in range(x.ndim) if d not in dims]
        n_out = math.prod(x.shape[d] for d in keep)
        r_len = math.prod(x.shape[d] for d in dims)
        self.check_numel(op.value, (r_len,))
        if n_out == 0:
            return self.alloc(op.value, out_shape, out_dtype)
        if r_len == 0:
            if op is ReduceOp.SUM:
                return self.full(out_shape, 0, out_dtype)
            if op is ReduceOp.PROD:
                return self.full(out_shape, 1, out_dtype)
            if op is ReduceOp.MEAN:
                return self.full(out_shape, float("nan"), out_dtype)
            raise ShapeError(f"{op.value}: cannot reduce over zero-size dims {dims} of shape "
                             f"{x.shape}")
        acc_dtype = self.reduce_acc(x.dtype)
        acc = self.renderer.type_of(acc_dtype)
        kshape, (kstrides,) = coalesce([x.shape[d] for d in keep], [[x.strides[d] for d in keep]])
        rshape, (rstrides,) = coalesce([x.shape[d] for d in dims], [[x.strides[d] for d in dims]])
        rows = r_len >= _ROWS_MIN and (rstrides[-1:] == [1] or n_out < 1024)
        splits = 1
        if rows and op not in ARG_REDUCTIONS and n_out < _SPLIT_OUTPUTS and r_len >= _SPLIT_MIN:
            splits = min(-(-r_len // _SPLIT_CHUNK), 1024)
        in_t = self.renderer.type_of(x.dtype)
        out_t = self.renderer.type_of(out_dtype)
        if splits == 1:
            out = self.alloc(op.value, out_shape, out_dtype)
            self._reduce_pass(op, acc, in_t.storage, out_t.storage, False, x, out, n_out, r_len,
                              1, kshape, kstrides, rshape, rstrides, r_len, rows)
            return out
        # pass 1: partial accumulators (n_out x splits); pass 2: reduce them per output
        part = self.alloc(op.value, (n_out, splits), acc_dtype)
        first = ReduceOp.SUM if op is ReduceOp.MEAN else op
        self._reduce_pass(first, acc, in_t.storage, acc.storage, True, x, part, n_out, r_len, splits,
                          kshape, kstrides, rshape, rstrides, r_len, True)
        out = self.alloc(op.value, out_shape, out_dtype)
        self._reduce_pass(op, acc, acc.storage, out_t.storage, False, part, out, n_out, splits, 1,
                          [n_out], [splits], [splits], [1], r_len, True)
        return out

    def _reduce_pass(self, op, acc, in_elem, out_elem, partial, x, out, n_out, r_len, splits,
                     kshape, kstrides, rshape, rstrides, divisor, rows) -> None:
        spec = self.renderer.reduce_spec(op, acc)
        load = "input[at]" if in_elem == acc.compute else self.renderer.convert(acc.compute, "input[at]")
        values = {"enable": self.renderer.prelude(in_elem, out_elem),
                  "in_elem": in_elem, "out_elem": out_elem, "acc": acc.compute,
                  "identity": spec.identity, "combine": spec.combine,
                  "finish": "r.v" if partial else spec.finish, "load": load,
                  "helpers": self.renderer.helpers_for(spec.combine)}
        entry = "reduce_rows" if rows else "reduce_threads"
        p = self._template("reduce", values, entry)
        chunk = -(-r_len // splits)
        info = info_words([n_out, r_len, splits, chunk, len(kshape), len(rshape),
                     getattr(x, "offset", 0), divisor, *kshape, *kstrides, *rshape, *rstrides])
        count = self.groups(n_out * splits) if rows else self.groups_for(n_out)
        self.client.launch(p, count, [x, out, info])

    # ------------------------------------------------------------------ row helpers
    def softmax(self, x: CubeTensor, dim: int) -> CubeTensor:
        """float32 along the last dim: one kernel, a workgroup per row (the `rows` template); other
        cases use the generic helper's primitives."""
        if x.dtype is not dt.float32 or dim != x.ndim - 1 or x.num_elements == 0:
            return super().softmax(x, dim)
        return self._rows("softmax_rows", x, 1, 0.0, None, None)

    def layer_norm(self, x: CubeTensor, n_dims: int, eps: float, weight=None, bias=None):
        """float32: one kernel, a workgroup per row of the trailing `n_dims` dims."""
        if (x.dtype is not dt.float32 or x.num_elements == 0 or not 1 <= n_dims <= x.ndim
                or any(t is not None and t.dtype is not dt.float32 for t in (weight, bias))):
            return super().layer_norm(x, n_dims, eps, weight, bias)
        return self._rows("layer_norm_rows", x, n_dims, eps, weight, bias)

    def rms_norm(self, x: CubeTensor, n_dims: int, eps: float, weight=None):
        """float32: one kernel, a workgroup per row of the trailing `n_dims` dims."""
        if (x.dtype is not dt.float32 or x.num_elements == 0 or not 1 <= n_dims <= x.ndim
                or (weight is not None and weight.dtype is not dt.float32)):
            return super().rms_norm(x, n_dims, eps, weight)
        return self._rows("rms_norm_rows", x, n_dims, eps, weight, None)

    # ------------------------------------------------------------------ attention
    def attention(self, q: CubeTensor, k: CubeTensor, v: CubeTensor, mask=None,
                  scale: float = 1.0) -> CubeTensor:
        """float32 heads of at most ATTENTION_MAX_D columns: one kernel that never writes the
        scores (`_attention_kernel`: kernels/attention.cu on cuda, generated WGSL on wgpu).
        Otherwise three launches (`_attention_launches`)."""
        if self.fused_attention and self._attention_fits(q, k, v, mask):
            return self._fused_attention(q, k, v, mask, float(scale))
        return self._attention_launches(q, k, v, mask, scale)

    #: attention as one kernel where it fits (False: always the three launches).
    fused_attention = True
    #: The widest q/k and v rows the fused kernel takes.
    ATTENTION_MAX_D = 32
    #: The fused kernel's shape: threads per block, query rows per group of 8 lanes (a
    #: block takes THREADS / 8 * ROWS of them), keys per shared-memory tile (halved while
    #: the block's shared memory would pass ATTENTION_SMEM bytes or the device's limit).
    ATTENTION_THREADS = 128
    ATTENTION_ROWS = 4
    ATTENTION_BK = 64
    ATTENTION_SMEM = 48 * 1024
    #: Floats of shared memory the kernel keeps per lane and query row besides its tiles
    #: (where lanes meet in shared memory rather than through shuffles).
    ATTENTION_LANE_SCRATCH = 0
    #: Skip tiles of keys that a mask shared by every query row leaves out entirely (all
    #: below -1e30), once a tile with a key left in has run: the same bits, less work on
    #: batches padded by a tile or more. Off by default: the per-tile vote (one more barrier
    #: a tile) cost more than it saved on MiniLM's b32 s128 batch, whose rows keep 64-128
    #: keys of 128 (64-key tiles, so almost no tile is skipped): attention 44.2 against
    #: 38.8 us a layer on an H100 (CUDA; CUPTI), the compiled forward 2.869 against
    #: 2.838 ms on cuda and 4.881 against 4.855 ms on wgpu.
    ATTENTION_SKIP_MASKED = False

    def _attention_smem(self) -> int:
        return min(self.ATTENTION_SMEM,
                   getattr(self.client.limits, "max_workgroup_storage", self.ATTENTION_SMEM))

    def _attention_bk(self, d: int, dv: int) -> int | None:
        return attention_tile(d, dv, self.ATTENTION_THREADS, self.ATTENTION_ROWS,
                              self.ATTENTION_BK, self._attention_smem(),
                              self.ATTENTION_LANE_SCRATCH)

    def _attention_fits(self, q, k, v, mask) -> bool:
        f32 = dt.float32
        if q.dtype is not f32 or k.dtype is not f32 or v.dtype is not f32 or q.ndim < 2 or \
                (mask is not None and (mask.dtype is not f32 or mask.ndim > q.ndim)):
            return False
        lead = q.shape[:-2]
        if k.shape[:-2] != lead or v.shape[:-2] != lead or k.shape[-2] != v.shape[-2] or \
                k.shape[-1] != q.shape[-1] or 0 in q.shape or 0 in k.shape or 0 in v.shape:
            return False
        if q.shape[-1] > self.ATTENTION_MAX_D or v.shape[-1] > self.ATTENTION_MAX_D or \
                self._attention_bk(q.shape[-1], v.shape[-1]) is None:
            return False
        if mask is not None:   # the mask broadcasts to the scores (the op's rule checks it too)
            full = lead + (q.shape[-2], k.shape[-2])
            if any(m != 1 and m != f for m, f in zip(reversed(mask.shape), reversed(full))):
                return False
        # every stride and index the kernel forms fits its 32-bit info words
        if math.prod(q.shape[:-1]) * v.shape[-1] >= 2 ** 31:   # the output's
            return False
        return all(min(t.strides, default=0) >= 0 and _last_index(t) < 2 ** 31
                   for t in (q, k, v) + (() if mask is None else (mask,)))

    @_replay.replayable(extra=lambda self: (self.ATTENTION_THREADS, self.ATTENTION_ROWS,
                                            self.ATTENTION_BK, self._attention_smem(),
                                            self.ATTENTION_LANE_SCRATCH,
                                            self.ATTENTION_SKIP_MASKED))
    def _fused_attention(self, q, k, v, mask, scale: float) -> CubeTensor:
        lead = q.shape[:-2]
        lq, d = q.shape[-2:]
        lk, dv = v.shape[-2:]
        if len(lead) == 2:   # [b, h, t, d] heads: written as [b, t, h, d], so merging is free
            b, h = lead
            raw = self.alloc("attention", (b, lq, h, dv), dt.float32)
            out = self._view(raw, lead + (lq, dv), (lq * h * dv, dv, h * dv, 1), 0)
        else:
            out = self.alloc("attention", lead + (lq, dv), dt.float32)
        mstrides = [0] * (len(lead) + 2) if mask is None else \
            broadcast_strides(mask, lead + (lq, lk))
        threads, rq = self.ATTENTION_THREADS, self.ATTENTION_ROWS
        bk = self._attention_bk(d, dv)
        tiles = -(-lq // (threads // 8 * rq))
        blocks = math.prod(lead) * tiles
        dims = []
        for i, size in enumerate(lead):
            dims += [size, q.strides[i], k.strides[i], v.strides[i], mstrides[i],
                     out.strides[i]]
        scale_bits = int(np.array(scale, np.float32).view(np.uint32))
        info = info_words([lq, lk, mask is not None, scale_bits, len(lead), tiles,
                           q.offset, q.strides[-2], q.strides[-1],
                           k.offset, k.strides[-2], k.strides[-1],
                           v.offset, v.strides[-2], v.strides[-1],
                           0 if mask is None else mask.offset, mstrides[-2], mstrides[-1],
                           out.offset, out.strides[-2], blocks] + dims)
        # vector loads of q, k and v: dense columns, rows and offsets on 16-byte boundaries
        vec = d % 4 == 0 and dv % 4 == 0 and all(
            t.strides[-1] == 1 and (getattr(t.handle, "ptr", 0) + 4 * t.offset) % 16 == 0 and
            all(s % 4 == 0 for s in t.strides[:-1]) for t in (q, k, v))
        p = self._attention_kernel(d, dv, threads, rq, bk, vec)
        self.client.launch(p, self.groups(blocks),
                           [q, k, v, q if mask is None else mask, out, info])
        return out

    def _attention_kernel(self, d: int, dv: int, threads: int, rows: int, bk: int,
                          vec: bool):
        """The fused attention kernel for these head widths and this blocking (entry
        `attention_fused`; its info words are described in kernels/attention.cu)."""
        return self._template("attention", {"d": d, "dv": dv, "bk": bk, "rq": rows,
                                            "vec": "true" if vec else "false",
                                            "skip": "true" if self.ATTENTION_SKIP_MASKED
                                            else "false"},
                              "attention_fused", wg=threads)

    @_replay.replayable()
    def _attention_launches(self, q: CubeTensor, k: CubeTensor, v: CubeTensor, mask=None,
                            scale: float = 1.0) -> CubeTensor:
        """float32: the scores' matmul, one row kernel for the scale, the mask and the softmax
        (the `rows` template, the mask read through broadcast strides), and the matmul
        with v: three launches. Other dtypes use the generic helper."""
        nd = q.ndim
        if (any(t.dtype is not dt.float32 for t in (q, k, v))
                or (mask is not None and mask.dtype is not dt.float32)
                or not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
                or 0 in q.shape or 0 in k.shape or 0 in v.shape):
            return super().attention(q, k, v, mask, scale)
        scores = self.contiguous(self.matmul(q, self.swap_dims(k, nd - 2, nd - 1)))
        n = scores.shape[-1]
        rows = scores.num_elements // n
        lead = scores.shape[:-1]
        dims = []
        if mask is not None:
            strides = [0 if size == 1 else st for size, st in zip(mask.shape, mask.strides)]
            for size, st in zip(lead, strides[:-1]):
                dims += [size, st]
        scale_bits = int(np.array(scale, np.float32).view(np.uint32))
        info = info_words([rows, n, scores.offset, mask is not None, len(dims) // 2, scale_bits,
                     0 if mask is None else mask.offset, 0 if mask is None else strides[-1]]
                    + dims)
        probs = self.alloc("attention", scores.shape, scores.dtype)
        self._launch_rows("attention_rows", rows, n, info,
                          [scores, probs, scores if mask is None else mask, scores])
        return self._attention_values(probs, v)

    def _attention_values(self, probs: CubeTensor, v: CubeTensor) -> CubeTensor:
        """`probs @ v`, the last step of `attention` (a runtime may lay the result out so
        that merging the heads back is free)."""
        return self.matmul(probs, v)

    @_replay.replayable()
    def _rows(self, entry: str, x: CubeTensor, n_dims: int, eps: float, weight, bias):
        x = self.contiguous(x)
        n = math.prod(x.shape[x.ndim - n_dims:])
        rows = x.num_elements // n
        weight, bias, head = self._norm_info(rows, n, x.offset, eps, weight, bias)
        out = self.alloc(entry, x.shape, x.dtype)
        self._launch_rows(entry, rows, n, info_words(head),
                          [x, out, x if weight is None else weight, x if bias is None else bias])
        return out

    def _norm_info(self, rows: int, n: int, offset: int, eps: float, weight, bias) -> tuple:
        """The row kernels' contiguous weight and bias (or None) and their first info words:
        [n_rows, n, x_offset, has_weight, has_bias, eps (f32 bits), w_offset, b_offset]."""
        weight = None if weight is None else self.contiguous(weight)
        bias = None if bias is None else self.contiguous(bias)
        eps_bits = int(np.array(eps, np.float32).view(np.uint32))
        return weight, bias, [rows, n, offset, weight is not None, bias is not None, eps_bits,
                              0 if weight is None else weight.offset,
                              0 if bias is None else bias.offset]

    #: Elements of a row that each of a row kernel's lanes covers, about (see `_launch_rows`).
    row_elems_per_lane = 4

    def _launch_rows(self, entry: str, rows: int, n: int, info, buffers: list) -> None:
        """One `rows` kernel over `rows` rows of `n`: LANES invocations per row, a power of
        two covering about `row_elems_per_lane` elements each (at most ROW_WG), several short
        rows per group."""
        lanes = self.row_lanes(n)
        p = self._template("rows", {"lanes": lanes}, entry, wg=ROW_WG)
        self.client.launch(p, self.groups(-(-rows // (ROW_WG // lanes))), [*buffers, info])

    def row_lanes(self, n: int) -> int:
        """Invocations of a row kernel that share a row of `n`: a power of two covering about
        `row_elems_per_lane` elements each, at most ROW_WG."""
        return min(ROW_WG, 1 << max(0, (-(-n // self.row_elems_per_lane) - 1).bit_length()))

    # ------------------------------------------------------------------ scans
    #: Rows at most this long are scanned by one invocation each, longer ones by a workgroup.
    SCAN_LINE_MAX = 64

    def cumsum(self, x: CubeTensor, dim: int) -> CubeTensor:
        """Running sums along `dim` (the `scan` template): rows along the last dim of a contiguous
        tensor; another dim is moved last first (a copy) and the result viewed back."""
        nd = x.ndim
        if dim != nd - 1:
            axes = tuple(d for d in range(nd) if d != dim) + (dim,)
            inverse = tuple(axes.index(d) for d in range(nd))
            return self.permute(self.cumsum(self.contiguous(self.permute(x, axes)), nd - 1),
                                inverse)
        if self._narrow(x.dtype) and x.num_elements:
            self._check_bound("cumsum", self.cumsum(self._magnitude(x), dim))
        x = self.contiguous(x)
        out = self.alloc("cumsum", x.shape, x.dtype)
        n = x.shape[-1] if nd else 1
        if out.num_elements == 0:
            return out
        rows = out.num_elements // n
        t = self.renderer.type_of(x.dtype)
        r = self.renderer

        def store(v: str) -> str:
            return f"min({v}, 1u)" if t.kind == "bool" else r.store(t, v)

        values = {"enable": r.prelude(t.storage), "elem": t.storage,
                  "acc": t.compute, "load": r.load(t, "x[base + i]"),
                  "store_acc": store("acc"),
                  **{f"store{k}": store(f"(before + v{k})") for k in range(4)}}
        info = np.array([rows, n, x.offset, 0], np.uint32)
        if n <= self.SCAN_LINE_MAX:
            p = self._template("scan", values, "scan_lines", wg=WG)
            self.client.launch(p, self.groups_for(rows), [x, out, info])
        else:
            p = self._template("scan", values, "scan_rows", wg=WG)
            self.client.launch(p, self.groups(rows), [x, out, info])
        return out

    # ------------------------------------------------------------------ matmul layouts
    @staticmethod
    def batch_layout(lhs: CubeTensor, rhs: CubeTensor, batch: tuple):
        """The batch dims of a matmul's operands broadcast to `batch` and coalesced:
        (shape, lhs strides, rhs strides), in elements (0 on broadcast dims)."""
        def view(x):
            return CubeTensor(x.client, x.device, x.shape[:-2], x.strides[:-2], x.handle,
                              x.dtype, x.offset)
        bshape, (a_bs, b_bs) = coalesce(batch, [broadcast_strides(view(lhs), batch),
                                                broadcast_strides(view(rhs), batch)])
        return bshape, a_bs, b_bs

    # ------------------------------------------------------------------ movement (views)
    def _view(self, x: CubeTensor, shape, strides, offset) -> CubeTensor:
        return CubeTensor(x.client, x.device, tuple(shape), tuple(strides), x.handle, x.dtype,
                          offset)

    def reshape(self, x: CubeTensor, shape: tuple) -> CubeTensor:
        shape = tuple(int(s) for s in shape)
        if x.is_contiguous():
            return self._view(x, shape, contiguous_strides(shape), 0)
        strides = _reshape_strides(x.shape, x.strides, shape)
        if strides is not None:
            return self._view(x, shape, strides, x.offset)
        x = self.contiguous(x)
        return self._view(x, shape, contiguous_strides(shape), 0)

    def permute(self, x: CubeTensor, axes: tuple) -> CubeTensor:
        return self._view(x, [x.shape[a] for a in axes], [x.strides[a] for a in axes], x.offset)

    def expand(self, x: CubeTensor, shape: tuple) -> CubeTensor:
        lead = len(shape) - len(x.shape)
        strides = [0] * lead + [0 if (s == 1 and t != 1) else st
                                for s, t, st in zip(x.shape, shape[lead:], x.strides)]
        return self._view(x, shape, strides, x.offset)

    def slice(self, x: CubeTensor, slices: tuple) -> CubeTensor:
        shape, strides, offset = [], [], x.offset
        for (start, stop, step), stride in zip(slices, x.strides):
            n = sh.slice_len(start, stop, step)
            shape.append(n)
            strides.append(stride * step)
            if n:
                offset += start * stride
        if any(s == 0 for s in shape):
            offset = 0
        return self._view(x, shape, strides, offset)

    def contiguous(self, x: CubeTensor) -> CubeTensor:
        if x.is_contiguous():
            return x
        return self.copy(x)

    # ------------------------------------------------------------------ copies
    def _copy_into(self, x: CubeTensor, out: CubeTensor, out_offset: int,
                   out_strides: Sequence[int]) -> None:
        n = x.num_elements
        if n == 0:
            return
        shape, (src_st, dst_st) = coalesce(x.shape, [x.strides, out_strides])
        p = self._template("copy", self._bits_values(x.dtype))
        info = info_words([n, len(shape), x.offset, out_offset, *shape, *src_st, *dst_st])
        self.client.launch(p, self.groups_for(n), [x, out, info])

    @_replay.replayable()
    def copy(self, x: CubeTensor) -> CubeTensor:
        out = self.alloc("contiguous", x.shape, x.dtype)
        self._copy_into(x, out, 0, out.strides)
        return out

    def cat(self, xs: Sequence[CubeTensor], dim: int) -> CubeTensor:
        out = self.alloc("cat", sh.cat([x.shape for x in xs], dim), xs[0].dtype)
        at = 0
        for x in xs:
            self._copy_into(x, out, at * out.strides[dim], out.strides)
            at += x.shape[dim]
        return out

    # ------------------------------------------------------------------ indexing
    def _bits_values(self, dtype: DType) -> dict:
        """`elem` and `enable` of kernels that only move values: the storage's bits."""
        elem = self.renderer.bits_type(self.storage_of(dtype).itemsize)
        return {"elem": elem, "enable": self.renderer.prelude(elem)}

    def _index_type(self, index: CubeTensor) -> str:
        return self.renderer.type_of(index.dtype).storage

    def _gather(self, op: str, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        out = self.alloc(op, index.shape, x.dtype)
        n = out.num_elements
        if n == 0:
            return out
        size = x.shape[dim]
        slot = self._index_slot(op, x, dim, index)
        p = self._template("gather", {**self._bits_values(x.dtype),
                                      "index": self._index_type(index)})
        info = info_words([n, index.ndim, dim, x.offset, index.offset, slot, size, *index.shape,
                     *x.strides, *index.strides])
        self.client.launch(p, self.groups_for(n), [x, index, out, self.client.errors_binding,
                                                   info])
        return out

    def _index_slot(self, op: str, x: CubeTensor, dim: int, index: CubeTensor) -> int:
        """An error slot that names an index outside dim `dim` of `x` (the gathers')."""
        size = x.shape[dim]
        return self.client.error_slot(
            lambda v: f"{op}: index {v} is out of range for dim {dim} of size {size} (input "
                      f"shape {x.shape}, index shape {index.shape}, on {self.device})")

    def _line_index(self, index: CubeTensor, dim: int, shape: tuple) -> CubeTensor:
        """The 1-D `index` viewed along `dim` of `shape` (stride 0 elsewhere)."""
        view = [1] * len(shape)
        view[dim] = index.shape[0]
        return self.expand(self.reshape(index, tuple(view)), shape)

    def gather(self, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        return self._gather("gather", x, dim, index)

    def index_select(self, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        shape = x.shape[:dim] + (index.shape[0],) + x.shape[dim + 1:]
        if dim == 0 and index.ndim == 1:
            inner = math.prod(x.shape[1:])
            if tuple(x.strides[1:]) == tuple(contiguous_strides(x.shape[1:])) or inner == 0:
                return self._gather_rows(x, index, shape, inner)
        return self._gather("index_select", x, dim, self._line_index(index, dim, shape))

    def _gather_rows(self, x: CubeTensor, index: CubeTensor, shape: tuple,
                     inner: int) -> CubeTensor:
        """`index_select` along dim 0 of rows that are one dense run (an embedding lookup):
        `kernels/gather_rows`, each thread one element, or four where the rows are whole
        aligned 16-byte groups and the runtime vectorizes it (CUDA)."""
        op = "index_select"
        out = self.alloc(op, shape, x.dtype)
        n = out.num_elements
        if n == 0:
            return out
        slot = self._index_slot(op, x, 0, index)
        values = {**self._bits_values(x.dtype), "index": self._index_type(index)}
        row_stride = x.strides[0]
        vec = 1
        if self.renderer.lang == "cuda":
            if self.storage_of(x.dtype).itemsize == 4 and inner % 4 == 0 and \
                    row_stride % 4 == 0 and all(
                        (getattr(t.handle, "ptr", 0) + 4 * t.offset) % 16 == 0 for t in (x, out)):
                vec = 4
            values.update(vec=vec, vec_t="uint4")
        p = self._template("gather_rows", values)
        info = info_words([n // vec, inner // vec, x.offset, row_stride, index.offset,
                           index.strides[0], slot, x.shape[0]])
        self.client.launch(p, self.groups_for(n // vec),
                           [x, index, out, self.client.errors_binding, info])
        return out

    def _check_index(self, op: str, index: CubeTensor, size: int, x_shape: tuple) -> None:
        n = index.num_elements
        if n == 0:
            return
        slot = self.client.error_slot(
            lambda v: f"{op}: index {v} is out of range for dim of size {size} (input shape "
                      f"{x_shape}, index shape {index.shape}, on {self.device})")
        p = self._template("check_index", {"index": self._index_type(index)})
        info = info_words([n, index.ndim, index.offset, slot, size, *index.shape, *index.strides])
        self.client.launch(p, self.groups_for(n), [index, self.client.errors_binding, info])

    def _scatter(self, op: str, x: CubeTensor, dim: int, index: CubeTensor, src: CubeTensor,
                 check: CubeTensor) -> CubeTensor:
        if self._narrow(x.dtype) and x.num_elements:
            self._check_bound(op, self._scatter(op, self._magnitude(x), dim, index,
                                                self._magnitude(src), check))
        self._check_index(op, check, x.shape[dim], x.shape)
        out = self.alloc(op, x.shape, x.dtype)
        n = out.num_elements
        if n == 0:
            return out
        t = self.renderer.type_of(x.dtype)
        store = "min(acc, 1u)" if t.kind == "bool" else self.renderer.store(t, "acc")
        values = {"enable": self.renderer.prelude(t.storage), "elem": t.storage,
                  "index": self._index_type(index),
                  "load_x": self.renderer.load(t, "x[at_x]"),
                  "load_src": self.renderer.load(t, "src[at_src + p * src_step]"),
                  "store": store}
        p = self._template("scatter_add", values)
        info = info_words([n, x.ndim, dim, x.offset, index.offset, src.offset, index.shape[dim],
                     *x.shape, *x.strides, *index.shape, *index.strides, *src.strides])
        self.client.launch(p, self.groups_for(n), [x, index, src, out, info])
        return out

    def scatter_add(self, x: CubeTensor, dim: int, index: CubeTensor,
                    src: CubeTensor) -> CubeTensor:
        return self._scatter("scatter_add", x, dim, index, src, index)

    def index_add(self, x: CubeTensor, dim: int, index: CubeTensor,
                  src: CubeTensor) -> CubeTensor:
        return self._scatter("index_add", x, dim, self._line_index(index, dim, src.shape), src,
                             index)


def _reshape_strides(shape: tuple, strides: tuple, new: tuple) -> tuple | None:
    """Strides viewing `shape`/`strides` as `new` without a copy, or None when the memory
    layout does not allow it (torch's rule: each group of merged dims must be contiguous)."""
    old = [(s, st) for s, st in zip(shape, strides) if s != 1]
    out: list[int] = []
    i = 0
    j = 0
    new = tuple(new)
    while j < len(new):
        if new[j] == 1:
            out.append(0)
            j += 1
            continue
        if i >= len(old):
            return None
        # take old dims until their product covers new dims' product
        size_old = old[i][0]
        chunk = [old[i]]
        i += 1
        size_new = new[j]
        targets = [j]
        j += 1
        while size_old != size_new:
            if size_old < size_new:
                if i >= len(old):
                    return None
                chunk.append(old[i])
                size_old *= old[i][0]
                i += 1
            else:
                while j < len(new) and new[j] == 1:
                    targets.append(j)
                    j += 1
                if j >= len(new):
                    return None
                size_new *= new[j]
                targets.append(j)
                j += 1
        for (s0, st0), (s1, st1) in zip(chunk, chunk[1:]):
            if st0 != st1 * s1:
                return None
        step = chunk[-1][1]
        sub = []
        for t in reversed(targets):
            sub.append(0 if new[t] == 1 else step)
            step *= new[t] if new[t] != 1 else 1
        out.extend(reversed(sub))
    if i != len(old):
        return None
    return tuple(out)
