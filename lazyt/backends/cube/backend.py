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

import math
import struct
from typing import Sequence

import numpy as np

from ... import dtype as dt
from ... import shape as sh
from ...dtype import DType
from ...errors import DTypeError, ShapeError
from ...ops import BinaryOp, UnaryOp
from ..base import Backend, binary_out_dtype
from ..fused import run_generic
from . import replay as _replay
from .client import ComputeClient
from .launch import broadcast_strides, coalesce, info_words, split_block
from .renderer import FUSED_VEC_PER_THREAD, FUSED_VEC_WG, WG
from .source import CubeCount, elem_storage
from .tensor import CubeTensor, contiguous_strides

#: Kernels index elements with 32-bit integers.
MAX_ELEMENTS = 2 ** 32 - 1

_I32 = np.iinfo(np.int32)
_F32, _F32_BITS = struct.Struct("<f"), struct.Struct("<I")


def into_contiguous(tensor: CubeTensor) -> CubeTensor:
    """`tensor` itself when kernels can index it densely from 0, else a contiguous copy."""
    if tensor.is_contiguous():
        return tensor
    return tensor.client.backend.contiguous(tensor)


class CubeBackend(Backend):
    """A kernel backend on one `ComputeClient` (`client.lang` is its kernel language)."""

    name = "cube"
    #: Re-issue a kernel op's recorded launches instead of re-running its logic (replay.py):
    #: None follows `replay_default()` at each op, True/False override it for this backend.
    replay = None

    def __init__(self, client: ComputeClient, device: str):
        self.client = client
        self.device = device              # "wgpu:0": what CubeTensor.device holds
        self.renderer = client.renderer   # generated kernels in the client's language
        client.backend = self
        self._replays = _replay.new_memo()
        self.replay_hits = 0              # ops served by a replay (for tests and benchmarks)

    def replay_default(self) -> bool:
        """Whether ops replay when `replay` is None (a runtime may read a switch here)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device}: {getattr(self.client, 'description', '')})"

    @property
    def lang(self) -> str:
        return self.client.lang

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
                             f"kernels index at most 2^32 - 1")
        return n

    def alloc(self, op: str, shape: tuple, dtype: DType) -> CubeTensor:
        """A new contiguous, uninitialized tensor, with the size checks."""
        shape = tuple(int(s) for s in shape)
        n = self.check_numel(op, shape)
        nbytes = n * self.storage_of(dtype).itemsize
        self.client.check_size(nbytes, f"{op}: a {dtype.name} tensor of shape {shape}")
        return CubeTensor.new_contiguous(self.client, self.device, shape,
                                         self.client.empty(nbytes), dtype)

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
        raw = self.client.read(x.handle, x.num_elements * storage.itemsize)
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
            if not _I32.min <= v <= _I32.max:
                raise DTypeError(f"{op}: the {dtype.name} scalar {v} does not fit on "
                                 f"{self.device}, which computes {dtype.name} in 32 bits")
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
        if src == dst:  # the same storage and compute (int32 <-> int64 in WGSL): a view
            return CubeTensor(x.client, x.device, x.shape, x.strides, x.handle, dtype, x.offset)
        return self._elementwise("cast", self.renderer.cast_kernel(x.dtype, dtype), [x], dtype,
                                 x.shape)

    # ------------------------------------------------------------------ fused blocks
    def _scalar_word(self, value, dtype: DType) -> int:
        """A block scalar as the u32 bits of its compute value (f16 scalars are rounded to
        f16, then computed in f32)."""
        if dtype is dt.float32:
            try:
                return _F32_BITS.unpack(_F32.pack(value))[0]
            except OverflowError:
                value = math.copysign(math.inf, value)
                return _F32_BITS.unpack(_F32.pack(value))[0]
        if dtype is dt.bool_:
            return int(bool(value))
        if not dtype.is_float:
            return int(self._scalar_bits("fused", value, dtype).view(np.uint32)[0])
        with np.errstate(over="ignore"):
            v = np.float32(np.float16(value))
        return int(np.array([v], np.float32).view(np.uint32)[0])

    @_replay.replayable()
    def run_fused(self, block, inputs: Sequence, scalars: Sequence) -> list:
        """One generated kernel per fused elementwise block (split when it would bind more
        storage buffers than the device allows)."""
        if any(x is None for x in inputs):
            return run_generic(self, block, inputs, scalars)
        limit = self.client.limits.max_storage_buffers
        if len(block.inputs) + len(block.outputs) + 1 > limit:
            return self._run_split(block, inputs, scalars, limit)
        outs = [self.alloc("fused", block.shape, block.instrs[v].dtype) for v in block.outputs]
        n = outs[0].num_elements if outs else 0
        if n == 0:
            return outs
        words = [self._scalar_word(v, d) for v, d in zip(scalars, block.scalars)]
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
                               self.groups_for(n4, FUSED_VEC_PER_THREAD * FUSED_VEC_WG),
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

    def copy(self, x: CubeTensor) -> CubeTensor:
        """A contiguous copy of the view `x` (a kernel)."""
        raise NotImplementedError


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
