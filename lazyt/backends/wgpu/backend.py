"""WgpuBackend: every core primitive as a WGSL kernel on one wgpu device.

Elementwise ops, casts and matmul are generated from the op tables in `codegen.py`; copies,
fills, reductions and the gather family are the `.wgsl` templates in `kernels/`. All kernels read
shapes/strides/scalars from an info buffer, so one pipeline serves every shape of an op and dtype.
"""
from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import dtype as dt
from ... import shape as sh
from ...config import wgpu_replay
from ...dtype import DType
from ...errors import DTypeError, ShapeError
from ...ops import ARG_REDUCTIONS, BinaryOp, ReduceOp, UnaryOp
from ..base import binary_out_dtype, reduce_out_dtype
from ..cube import replay as _replay
from ..cube.backend import CubeBackend
from ..cube.renderer import FUSED_VEC_PER_THREAD, FUSED_VEC_WG, WG
from ..cube.source import CubeCount, CubeDim, FileKernelSource, SourceKernel, TextKernelSource
from ..cube.tensor import CubeTensor, contiguous_strides
from . import codegen as cg
from .client import Pipeline, WgpuClient
from .renderer import WGSL as R

_KERNELS = Path(__file__).resolve().parent / "kernels"
_F32, _F32_BITS = struct.Struct("<f"), struct.Struct("<I")
_I32 = np.iinfo(np.int32)

#: Reductions over at least this many elements per output use a workgroup per output.
_ROWS_MIN = 64
#: Reductions with fewer outputs than this and at least _SPLIT_MIN elements each are split
#: over several workgroups per output (two passes).
_SPLIT_OUTPUTS = 64
_SPLIT_MIN = 16384
_SPLIT_CHUNK = 8192


def _u32(values) -> np.ndarray:
    """Info words; negative strides wrap to their two's complement (kernels use wrapping u32
    arithmetic, so offset + coord * stride still lands on the right element)."""
    return np.array(values, dtype=np.int64).astype(np.uint32)


def coalesce(shape: Sequence[int], strides: Sequence[Sequence[int]]):
    """Drop size-1 dims and merge neighbours that every operand steps through contiguously;
    returns (shape, [strides per operand]). Fewer dims = less index math per element."""
    dims = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        sts = [st[d] for st in strides]
        if dims:
            psize, psts = dims[-1]
            if all(p == s * size for p, s in zip(psts, sts)):
                dims[-1] = (psize * size, sts)
                continue
        dims.append((size, sts))
    out_shape = [d[0] for d in dims]
    return out_shape, [[d[1][k] for d in dims] for k in range(len(strides))]


def _broadcast_strides(x: CubeTensor, shape: tuple) -> list[int]:
    lead = len(shape) - len(x.shape)
    return [0] * lead + [0 if (s == 1 and t != 1) else st
                         for s, t, st in zip(x.shape, shape[lead:], x.strides)]



#: Matmuls with fewer big tiles than this use `matmul_config_small` (where there is one),
#: and `matmul_config_narrow` when their outputs have at most NARROW_N columns.
SMALL_GRID = 1024
NARROW_N = 32

#: Invocations per workgroup of the row kernels (softmax, layer_norm): rows are often short.
ROW_WG = 128

class WgpuBackend(CubeBackend):
    """The wgpu base backend of `lazyt.device("wgpu:N")`."""

    name = "wgpu"

    def __init__(self, client: WgpuClient, device: str, adapter_kind: str = ""):
        super().__init__(client, device)
        self._kernels: dict[tuple, Pipeline] = {}
        # CPU adapters (lavapipe) run small tiles faster; GPUs want big register blocks.
        if adapter_kind == "CPU":
            self.matmul_config = cg.MatmulConfig(bm=32, bn=32, bk=8, tm=4, tn=4)
            self.matmul_config_small = self.matmul_config_narrow = None
        else:
            # 29 TFLOP/s at 4096^3 fp32 on an H200 through Vulkan (128x64/8x4: 27)
            self.matmul_config = cg.MatmulConfig(bm=128, bn=128, bk=8, tm=8, tn=8,
                                                 prefetch=False)
            # Products that make fewer than SMALL_GRID big tiles leave much of a large GPU
            # idle or make short K loops. BERT's linears (4096 x 384 x 384, x 1536 and
            # 1536 x 384) on an H200: 49, 179 and 185 us with 64x64x16 tiles, against 70, 232
            # and 255 us with 128x128x8 (and 71, 195, 265 with 128x64x8).
            self.matmul_config_small = cg.MatmulConfig(bm=64, bn=64, bk=16, tm=8, tn=4)
            # attention's probabilities @ v (N = head size 32): 23 us instead of 39
            self.matmul_config_narrow = cg.MatmulConfig(bm=64, bn=32, bk=16, tm=4, tn=4)

    # ------------------------------------------------------------------ kernels
    def _generated(self, key: tuple, name: str, make) -> Pipeline:
        p = self._kernels.get(key)
        if p is None:
            p = self.client.compile(TextKernelSource(name, "wgsl", make()))
            self._kernels[key] = p
        return p

    def _template(self, file: str, values: dict, entry: str = "main",
                  wg: int = WG) -> Pipeline:
        key = (file, entry, wg, tuple(sorted(values.items())))
        p = self._kernels.get(key)
        if p is None:
            source = FileKernelSource(Path(file).stem, "wgsl", _KERNELS / file, entry)
            p = self.client.compile(SourceKernel(source, CubeDim(wg), values=values))
            self._kernels[key] = p
        return p

    def groups(self, n_groups: int) -> CubeCount:
        """`n_groups` workgroups laid out within the adapter's per-dimension limit."""
        top = self.client.limits.max_workgroups_per_dim
        if n_groups <= top:
            return CubeCount(n_groups)
        return CubeCount.split(n_groups, top)

    def groups_for(self, n: int, per_group: int = WG) -> CubeCount:
        return self.groups(-(-n // per_group))

    def replay_default(self) -> bool:
        """`LAZYT_WGPU_REPLAY` (on unless set to 0), read at each op."""
        return wgpu_replay()

    # ------------------------------------------------------------------ creation
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

    def full(self, shape: tuple, value, dtype: DType) -> CubeTensor:
        self.check_dtype("full", dtype)
        out = self.alloc("full", shape, dtype)
        n = out.num_elements
        if n:
            bits = self._scalar_bits("full", value, dtype)
            if bits.itemsize == 2:
                half = int(bits.view(np.uint16)[0])
                pattern = half | (half << 16)
            else:
                pattern = int(bits.view(np.uint32)[0])
            words = -(-n * bits.itemsize // 4)
            p = self._template("fill.wgsl", {})
            self.client.launch(p, self.groups_for(words), [out, _u32([words, pattern])])
        return out

    def zeros(self, shape: tuple, dtype: DType) -> CubeTensor:
        return self.full(shape, 0, dtype)

    # ------------------------------------------------------------------ elementwise
    def elementwise(self, key: tuple, expr: str, inputs: list, types: list, out_dtype: DType,
            shape: tuple) -> CubeTensor:
        """Launch the generated elementwise kernel `expr` over `inputs` (CubeTensors or
        scalars already as one-element storage arrays) broadcast to `shape`."""
        out = self.alloc(key[0], shape, out_dtype)
        n = out.num_elements
        if n == 0:
            return out
        out_t = R.type_of(out_dtype)
        p = self._kernels.get(key)
        if p is None:
            p = self._generated(key, key[0] if len(key) < 3 or key[0] == "cast"
                                else f"{key[0]}_{key[1]}",
                                lambda: R.elementwise(types, out_t, expr))
        strides = [[0] * len(shape) if isinstance(x, np.ndarray) else
                   _broadcast_strides(x, shape) for x in inputs]
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
        info = _u32([n, len(cshape), strided, *head, *cshape, *(v for t in tails for v in t)])
        self.client.launch(p, self.groups_for(n), [*inputs, out, info])
        return out

    def unary(self, op: UnaryOp, x: CubeTensor) -> CubeTensor:
        t = R.type_of(x.dtype)
        expr = R.unary_expr(op, t, "v0")
        return self.elementwise(("unary", op.value, x.dtype.name), expr, [x], [t], x.dtype,
                                x.shape)

    def _operands(self, op: str, values: list, dtype: DType):
        """Tensors stay, scalars become one-element storage arrays; plus the broadcast shape."""
        shapes = [v.shape for v in values if isinstance(v, CubeTensor)]
        shape = sh.broadcast(op, *shapes) if len(shapes) > 1 else shapes[0]
        ops = [v if isinstance(v, CubeTensor) else self._scalar_bits(op, v, dtype)
               for v in values]
        return ops, tuple(shape)

    def binary(self, op: BinaryOp, lhs, rhs) -> CubeTensor:
        dtype = lhs.dtype if isinstance(lhs, CubeTensor) else rhs.dtype
        t = R.type_of(dtype)
        expr = R.binary_expr(op, t, "v0", "v1")
        ops, shape = self._operands(op.value, [lhs, rhs], dtype)
        return self.elementwise(("binary", op.value, dtype.name), expr, ops, [t, t],
                        binary_out_dtype(op, dtype), shape)

    def where(self, cond: CubeTensor, lhs, rhs) -> CubeTensor:
        dtype = lhs.dtype if isinstance(lhs, CubeTensor) else \
            rhs.dtype if isinstance(rhs, CubeTensor) else None
        if dtype is None:
            raise DTypeError("where: expected lhs or rhs to be a tensor")
        t = R.type_of(dtype)
        b = R.type_of(dt.bool_)
        ops, shape = self._operands("where", [cond, lhs, rhs], dtype)
        expr = R.where_expr("v0", "v1", "v2")
        return self.elementwise(("where", dtype.name), expr, ops, [b, t, t], dtype, shape)

    def cast(self, x: CubeTensor, dtype: DType) -> CubeTensor:
        if dtype is x.dtype:
            return x
        self.check_dtype("cast", dtype)
        src, dst = R.type_of(x.dtype), R.type_of(dtype)
        if src == dst:  # int32 <-> int64: the same 32-bit storage
            return CubeTensor(x.client, x.device, x.shape, x.strides, x.handle, dtype, x.offset)
        expr = R.cast_expr(src, dst, "v0")
        return self.elementwise(("cast", x.dtype.name, dtype.name), expr, [x], [src], dtype,
                                x.shape)

    # ------------------------------------------------------------------ reductions
    def reduce(self, op: ReduceOp, x: CubeTensor, dims: tuple, keepdim: bool) -> CubeTensor:
        out_dtype = reduce_out_dtype(op, x.dtype)
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
        acc = R.type_of(dt.float32 if x.dtype.is_float else dt.int32)
        kshape, (kstrides,) = coalesce([x.shape[d] for d in keep], [[x.strides[d] for d in keep]])
        rshape, (rstrides,) = coalesce([x.shape[d] for d in dims], [[x.strides[d] for d in dims]])
        rows = r_len >= _ROWS_MIN and (rstrides[-1:] == [1] or n_out < 1024)
        splits = 1
        if rows and op not in ARG_REDUCTIONS and n_out < _SPLIT_OUTPUTS and r_len >= _SPLIT_MIN:
            splits = min(-(-r_len // _SPLIT_CHUNK), 1024)
        in_t = R.type_of(x.dtype)
        out_t = R.type_of(out_dtype)
        if splits == 1:
            out = self.alloc(op.value, out_shape, out_dtype)
            self._reduce_pass(op, acc, in_t.storage, out_t.storage, False, x, out, n_out, r_len,
                              1, kshape, kstrides, rshape, rstrides, r_len, rows)
            return out
        # pass 1: partial accumulators (n_out x splits); pass 2: reduce them per output
        part_dtype = dt.float32 if acc.kind == "float" else dt.int32
        part = self.alloc(op.value, (n_out, splits), part_dtype)
        first = ReduceOp.SUM if op is ReduceOp.MEAN else op
        self._reduce_pass(first, acc, in_t.storage, acc.storage, True, x, part, n_out, r_len, splits,
                          kshape, kstrides, rshape, rstrides, r_len, True)
        out = self.alloc(op.value, out_shape, out_dtype)
        self._reduce_pass(op, acc, acc.storage, out_t.storage, False, part, out, n_out, splits, 1,
                          [n_out], [splits], [splits], [1], r_len, True)
        return out

    def _reduce_pass(self, op, acc, in_elem, out_elem, partial, x, out, n_out, r_len, splits,
                     kshape, kstrides, rshape, rstrides, divisor, rows) -> None:
        spec = R.reduce_spec(op, acc)
        load = "input[at]" if in_elem == acc.compute else R.convert(acc.compute, "input[at]")
        values = {"enable": "enable f16;" if "f16" in (in_elem, out_elem) else "",
                  "in_elem": in_elem, "out_elem": out_elem, "acc": acc.compute,
                  "identity": spec.identity, "combine": spec.combine,
                  "finish": "r.v" if partial else spec.finish, "load": load,
                  "helpers": R.helpers_for(spec.combine)}
        entry = "reduce_rows" if rows else "reduce_threads"
        p = self._template("reduce.wgsl", values, entry)
        chunk = -(-r_len // splits)
        info = _u32([n_out, r_len, splits, chunk, len(kshape), len(rshape),
                     getattr(x, "offset", 0), divisor, *kshape, *kstrides, *rshape, *rstrides])
        count = self.groups(n_out * splits) if rows else self.groups_for(n_out)
        self.client.launch(p, count, [x, out, info])

    # ------------------------------------------------------------------ row helpers
    def softmax(self, x: CubeTensor, dim: int) -> CubeTensor:
        """float32 along the last dim: one kernel, a workgroup per row (rows.wgsl); other
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

    @_replay.replayable()
    def attention(self, q: CubeTensor, k: CubeTensor, v: CubeTensor, mask=None,
                  scale: float = 1.0) -> CubeTensor:
        """float32: the scores' matmul, one row kernel for the scale, the mask and the softmax
        (rows.wgsl, the mask read through broadcast strides), and the matmul
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
        info = _u32([rows, n, scores.offset, mask is not None, len(dims) // 2, scale_bits,
                     0 if mask is None else mask.offset, 0 if mask is None else strides[-1]]
                    + dims)
        probs = self.alloc("attention", scores.shape, scores.dtype)
        self._launch_rows("attention_rows", rows, n, info,
                          [scores, probs, scores if mask is None else mask, scores])
        return self.matmul(probs, v)

    @_replay.replayable()
    def _rows(self, entry: str, x: CubeTensor, n_dims: int, eps: float, weight, bias):
        x = self.contiguous(x)
        n = math.prod(x.shape[x.ndim - n_dims:])
        rows = x.num_elements // n
        weight = None if weight is None else self.contiguous(weight)
        bias = None if bias is None else self.contiguous(bias)
        out = self.alloc(entry, x.shape, x.dtype)
        eps_bits = int(np.array(eps, np.float32).view(np.uint32))
        info = _u32([rows, n, x.offset, weight is not None, bias is not None, eps_bits,
                     0 if weight is None else weight.offset,
                     0 if bias is None else bias.offset])
        self._launch_rows(entry, rows, n, info, [x, out, x if weight is None else weight,
                                                 x if bias is None else bias])
        return out

    def _launch_rows(self, entry: str, rows: int, n: int, info, buffers: list) -> None:
        """One rows.wgsl kernel over `rows` rows of `n`: LANES invocations per row, a power of
        two covering about 4 elements each (at most ROW_WG), several short rows per group."""
        lanes = min(ROW_WG, 1 << max(0, (-(-n // 4) - 1).bit_length()))
        p = self._template("rows.wgsl", {"lanes": lanes}, entry, wg=ROW_WG)
        self.client.launch(p, self.groups(-(-rows // (ROW_WG // lanes))), [*buffers, info])

    # ------------------------------------------------------------------ matmul
    #: `linear` adds its bias in the matmul kernel (the Fusion layer records it in the op).
    linear_bias_in_kernel = True

    def linear(self, x: CubeTensor, weight: CubeTensor, bias=None) -> CubeTensor:
        """`x @ weight^T (+ bias)`: one matmul with a transposed view of the weight, the bias
        added as the output is stored."""
        if x.ndim < 2 or bias is None:
            return super().linear(x, weight, bias)
        wt = self.permute(weight, (1, 0))
        wt = self.reshape(wt, (1,) * (x.ndim - 2) + wt.shape)
        return self._matmul(x, wt, self.contiguous(bias))

    def matmul(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        return self._matmul(lhs, rhs, None)

    @_replay.replayable(extra=lambda self: (self.matmul_config, self.matmul_config_small,
                                            self.matmul_config_narrow))
    def _matmul(self, lhs: CubeTensor, rhs: CubeTensor, bias) -> CubeTensor:
        out_shape = sh.matmul(lhs.shape, rhs.shape)
        m, k = lhs.shape[-2:]
        n = rhs.shape[-1]
        dtype = lhs.dtype
        if k == 0:
            out = self.zeros(out_shape, dtype)
            return out if bias is None else self.binary(BinaryOp.ADD, out, bias)
        out = self.alloc("matmul", out_shape, dtype)
        if out.num_elements == 0:
            return out
        batch = out_shape[:-2]
        a_b = _broadcast_strides(self._batch_view(lhs), batch)
        b_b = _broadcast_strides(self._batch_view(rhs), batch)
        bshape, (a_bs, b_bs) = coalesce(batch, [a_b, b_b])
        batches = math.prod(batch)
        a_rs, a_ks = lhs.strides[-2:]
        b_ks, b_cs = rhs.strides[-2:]
        if m == 1:
            a_rs = 0   # a size-1 dim's stride is never used; keep it from blocking vec4
        vec4 = a_ks == 1 and k % 4 == 0 and n % 4 == 0 and \
            all(v % 4 == 0 for v in (a_rs, lhs.offset, rhs.offset, *a_bs, *b_bs))
        # rhs contiguous along N (vec4 loads along N), or along K: a transposed weight (vec4
        # loads along K; the scalar path took 1.7-2x as long for BERT's linears on an H200)
        b_trans = vec4 and b_cs != 1 and b_ks == 1 and b_cs % 4 == 0
        vec4 = vec4 and (b_trans or (b_cs == 1 and b_ks % 4 == 0))
        cfg = self.matmul_config
        small = self.matmul_config_small
        if small is not None and \
                -(-n // cfg.bn) * -(-m // cfg.bm) * math.prod(batch) < SMALL_GRID:
            narrow = self.matmul_config_narrow
            cfg = narrow if narrow is not None and n <= NARROW_N else small
        t = R.type_of(dtype)
        has_bias = bias is not None
        p = self._generated(("matmul", dtype.name, vec4, cfg, has_bias, b_trans), "matmul",
                            lambda: cg.matmul_kernel(t, cfg, vec4, has_bias, b_trans))
        top = self.client.limits.max_workgroups_per_dim
        gx, gy = -(-n // cfg.bn), -(-m // cfg.bm)
        if gx > top or gy > top:
            raise ShapeError(f"matmul: output {out_shape} needs {gy} x {gx} tiles; "
                             f"{self.device} allows {top} per dimension")
        info = _u32([m, n, k, lhs.offset, a_rs, a_ks, rhs.offset, b_ks, b_cs, batches,
                     len(bshape), *bshape, *a_bs, *b_bs] + ([bias.offset] if has_bias else []))
        self.client.launch(p, CubeCount(gx, gy, min(batches, top)),
                           [lhs, rhs, out, bias, info] if has_bias else [lhs, rhs, out, info])
        return out

    @staticmethod
    def _batch_view(x: CubeTensor) -> CubeTensor:
        return CubeTensor(x.client, x.device, x.shape[:-2], x.strides[:-2], x.handle, x.dtype,
                          x.offset)

    # ------------------------------------------------------------------ movement
    def _copy_into(self, x: CubeTensor, out: CubeTensor, out_offset: int,
                   out_strides: Sequence[int]) -> None:
        n = x.num_elements
        if n == 0:
            return
        shape, (src_st, dst_st) = coalesce(x.shape, [x.strides, out_strides])
        elem = "f16" if self.storage_of(x.dtype).itemsize == 2 else "u32"
        p = self._template("copy.wgsl", {"elem": elem,
                                         "enable": "enable f16;" if elem == "f16" else ""})
        info = _u32([n, len(shape), x.offset, out_offset, *shape, *src_st, *dst_st])
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
    def _elem32(self, dtype: DType) -> tuple[str, str]:
        """(elem, enable) for kernels that only move values: bits as u32, or f16."""
        if self.storage_of(dtype).itemsize == 2:
            return "f16", "enable f16;"
        return "u32", ""

    def _gather(self, op: str, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        out = self.alloc(op, index.shape, x.dtype)
        n = out.num_elements
        if n == 0:
            return out
        size = x.shape[dim]
        slot = self.client.error_slot(
            lambda v: f"{op}: index {v} is out of range for dim {dim} of size {size} (input "
                      f"shape {x.shape}, index shape {index.shape}, on {self.device})")
        elem, enable = self._elem32(x.dtype)
        p = self._template("gather.wgsl", {"elem": elem, "enable": enable})
        info = _u32([n, index.ndim, dim, x.offset, index.offset, slot, size, *index.shape,
                     *x.strides, *index.strides])
        self.client.launch(p, self.groups_for(n), [x, index, out, self.client.errors_binding,
                                                   info])
        return out

    def _line_index(self, index: CubeTensor, dim: int, shape: tuple) -> CubeTensor:
        """The 1-D `index` viewed along `dim` of `shape` (stride 0 elsewhere)."""
        view = [1] * len(shape)
        view[dim] = index.shape[0]
        return self.expand(self.reshape(index, tuple(view)), shape)

    def gather(self, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        return self._gather("gather", x, dim, index)

    def index_select(self, x: CubeTensor, dim: int, index: CubeTensor) -> CubeTensor:
        shape = x.shape[:dim] + (index.shape[0],) + x.shape[dim + 1:]
        return self._gather("index_select", x, dim, self._line_index(index, dim, shape))

    def _check_index(self, op: str, index: CubeTensor, size: int, x_shape: tuple) -> None:
        n = index.num_elements
        if n == 0:
            return
        slot = self.client.error_slot(
            lambda v: f"{op}: index {v} is out of range for dim of size {size} (input shape "
                      f"{x_shape}, index shape {index.shape}, on {self.device})")
        p = self._template("check_index.wgsl", {})
        info = _u32([n, index.ndim, index.offset, slot, size, *index.shape, *index.strides])
        self.client.launch(p, self.groups_for(n), [index, self.client.errors_binding, info])

    def _scatter(self, op: str, x: CubeTensor, dim: int, index: CubeTensor, src: CubeTensor,
                 check: CubeTensor) -> CubeTensor:
        self._check_index(op, check, x.shape[dim], x.shape)
        out = self.alloc(op, x.shape, x.dtype)
        n = out.num_elements
        if n == 0:
            return out
        t = R.type_of(x.dtype)
        store = "min(acc, 1u)" if t.kind == "bool" else R.store(t, "acc")
        values = {"enable": "enable f16;" if t.storage == "f16" else "", "elem": t.storage,
                  "load_x": R.load(t, "x[at_x]"),
                  "load_src": R.load(t, "src[at_src + p * src_step]"),
                  "store": store}
        p = self._template("scatter_add.wgsl", values)
        info = _u32([n, x.ndim, dim, x.offset, index.offset, src.offset, index.shape[dim],
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
        storage buffers than the adapter allows)."""
        if any(x is None for x in inputs):
            from ..fused import run_generic
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
        strides = [_broadcast_strides(x, shape) for x in inputs]
        cshape, cstrides = coalesce(shape, strides)
        dense = list(contiguous_strides(tuple(cshape)))
        splat = tuple(all(s == 0 for s in st) for st in cstrides)
        linear = tuple(list(st) == dense for st in cstrides)
        vec4 = n % 4 == 0 and all(
            s or (lin and x.offset % 4 == 0) for x, s, lin in zip(inputs, splat, linear))
        if vec4:
            key = ("wgpu-fused", self.device, "vec4", splat)
            p = block.cache.get(key)
            if p is None:
                p = block.cache[key] = self.client.compile(TextKernelSource(
                    "fused", "wgsl", R.fused(block, True, splat)))
            n4 = n // 4
            info = _u32([n4, *(x.offset for x in inputs), *words])
            per = FUSED_VEC_PER_THREAD * FUSED_VEC_WG
            self.client.launch(p, self.groups_for(n4, per), [*inputs, *outs, info])
            return outs
        key = ("wgpu-fused", self.device, "strided")
        p = block.cache.get(key)
        if p is None:
            p = block.cache[key] = self.client.compile(TextKernelSource(
                "fused", "wgsl", R.fused(block)))
        head, tails, strided = [], [], 0
        for x, st, s, lin in zip(inputs, cstrides, splat, linear):
            head += [x.offset, int(lin and not s)]
            if s or lin:
                tails.append([0] * len(cshape))
            else:
                tails.append(st)
                strided = 1
        info = _u32([n, len(cshape), strided, *head, *words, *cshape,
                     *(v for t in tails for v in t)])
        self.client.launch(p, self.groups_for(n), [*inputs, *outs, info])
        return outs

    def _run_split(self, block, inputs, scalars, limit: int) -> list:
        parts = block.cache.get(("wgpu-split", limit))
        if parts is None:
            parts = block.cache[("wgpu-split", limit)] = _split_block(block, limit)
        values: dict = {}
        for sub, ext, outs in parts:
            got = self.run_fused(sub, [inputs[r.index] if r.kind == "in" else values[r.index]
                                       for r in ext], scalars)
            values.update(zip(outs, got))
        return [values[v] for v in block.outputs]


def _split_block(block, limit: int) -> list:
    """Cut a block's program into consecutive parts that each bind at most `limit` buffers
    (inputs + outputs + info); values crossing a cut become outputs of one part and inputs of
    the next. Returns (sub-block, external refs, instruction indices of its outputs) per part."""
    from ..fused import FusedBlock, FusedInstr, Ref
    instrs = block.instrs
    last_use = {}
    for i, ins in enumerate(instrs):
        for r in ins.operands:
            if r.kind == "v":
                last_use[r.index] = i
    for v in block.outputs:
        last_use[v] = len(instrs)

    def ext_refs(group):
        inside = set(group)
        refs = []
        for i in group:
            for r in instrs[i].operands:
                if r.kind == "in" or (r.kind == "v" and r.index not in inside):
                    if r not in refs:
                        refs.append(r)
        return refs

    def outs_of(group):
        return [v for v in group if last_use.get(v, -1) > group[-1]]

    groups, cur = [], []
    for i in range(len(instrs)):
        trial = cur + [i]
        if cur and len(ext_refs(trial)) + len(outs_of(trial)) + 1 > limit:
            groups.append(cur)
            cur = [i]
        else:
            cur = trial
    groups.append(cur)
    parts = []
    for group in groups:
        ext = ext_refs(group)
        pos = {i: n for n, i in enumerate(group)}
        in_pos = {r: n for n, r in enumerate(ext)}

        def remap(r):
            if r.kind == "sc":
                return r
            if r.kind == "v" and r.index in pos:
                return Ref("v", pos[r.index])
            return Ref("in", in_pos[r])

        sub_instrs = tuple(FusedInstr(instrs[i].kind, instrs[i].op,
                                      tuple(remap(r) for r in instrs[i].operands),
                                      instrs[i].dtype) for i in group)
        sub_inputs = tuple(block.inputs[r.index] if r.kind == "in" else
                           (block.shape, instrs[r.index].dtype) for r in ext)
        outs = outs_of(group)
        sub = FusedBlock(shape=block.shape, inputs=sub_inputs, scalars=block.scalars,
                         instrs=sub_instrs, outputs=tuple(pos[v] for v in outs))
        parts.append((sub, ext, outs))
    return parts
