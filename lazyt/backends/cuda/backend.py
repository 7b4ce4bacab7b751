"""CudaBackend: every core primitive on one CUDA device.

Elementwise ops, casts and fused blocks are the Cube family's generated kernels (CubeBackend,
rendered in CUDA C++ by `CudaRenderer`); copies, reductions, row kernels, scans and the gather
family are the family's host code over the `.cu` templates in `kernels/`; matmul goes through
cuBLAS (cuBLASLt for `linear`'s bias and the bias + ReLU epilogue) and falls back to the
register-blocked `kernels/matmul.cu` where cuBLAS is absent or cannot take a layout. Unlike
wgpu, float64 and a real 64-bit int64 are supported.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from ... import dtype as dt
from ... import shape as sh
from ...config import cuda_cublas
from ...errors import ShapeError
from ...ops import BinaryOp, UnaryOp
from ..cube import replay as _replay
from ..cube.backend import ROW_WG, CubeBackend
from ..cube.launch import broadcast_strides, info_words
from ..cube.source import CubeCount, TextKernelSource
from ..cube.tensor import CubeTensor, contiguous_strides

@functools.lru_cache(maxsize=256)
def _batch_offsets(bshape: tuple, a_bs: tuple, b_bs: tuple):
    """Element offsets of every batch's A and B matrix (row-major over `bshape`)."""
    idx = np.indices(bshape).reshape(len(bshape), -1).astype(np.int64)
    a = (np.asarray(a_bs, np.int64)[:, None] * idx).sum(0)
    b = (np.asarray(b_bs, np.int64)[:, None] * idx).sum(0)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


#: The fallback matmul kernel's tile (kernels/matmul.cu).
MATMUL_BM = MATMUL_BN = 64
MATMUL_THREADS = 256


class CudaBackend(CubeBackend):
    """The base backend of `lazyt.device("cuda:N")`."""

    name = "cuda"
    kernels_dir = Path(__file__).resolve().parent / "kernels"
    #: Let cuBLAS use TF32 tensor cores for float32 (off by default, as in torch).
    allow_tf32 = False
    #: Row kernels give each lane about 8 of a row's elements: MiniLM's 13 layer norms over
    #: [4096, 384] took 85.7 µs per forward this way (64 lanes a row) against 118.7 µs with 4
    #: (128 lanes), 100.6 µs with 16 and 162 µs with 32 (H200, CUPTI, one process each).
    row_elems_per_lane = 8

    #: `layer_norm` computes a float32 fused block in front of its input (`run_prologue`).
    prologue_ops = frozenset({"layer_norm"})

    # ------------------------------------------------------------------ prologues
    def run_prologue(self, name, block, inputs, scalars, args):
        """`layer_norm` of a float32 block of up to four float32 inputs, each a whole tensor
        (any offset), a row broadcast over the leading dims, or one element: one row kernel
        (`layer_norm_block_rows`) that computes the block where it reads the row. Anything
        else runs the block, then the op."""
        if name == "layer_norm":
            n_dims, eps, weight, bias = args
            modes = self._block_row_modes(block, inputs, n_dims, weight, bias)
            if modes is not None:
                return self._layer_norm_block(block, modes, list(inputs), list(scalars), *args)
        return super().run_prologue(name, block, inputs, scalars, args)

    def _block_row_modes(self, block, inputs, n_dims: int, weight=None, bias=None):
        """Per input of `block`, how `layer_norm_block_rows` reads it (1 whole, 0 a row, 2
        one element, -P a whole tensor of P elements repeated over the outer dims), or None
        when the kernel cannot take the block."""
        shape = tuple(block.shape)
        nd = len(shape)
        if (len(block.outputs) != 1 or not 1 <= n_dims <= nd or not 1 <= len(inputs) <= 4
                or math.prod(shape) == 0 or math.prod(shape[nd - n_dims:]) == 0
                or any(d is not dt.float32 for _, d in block.inputs)
                or any(ins.dtype is not dt.float32 for ins in block.instrs)
                or any(t is not None and t.dtype is not dt.float32 for t in (weight, bias))):
            return None
        dense = contiguous_strides(shape)
        lead = nd - n_dims
        modes = []
        for x in inputs:
            if not isinstance(x, CubeTensor) or x.dtype is not dt.float32:
                return None
            live = [(d, st, ds) for d, (size, st, ds) in
                    enumerate(zip(shape, broadcast_strides(x, shape), dense)) if size != 1]
            if all(st == 0 for _, st, _ in live):
                modes.append(2)
                continue
            # the dims from d0 on are dense, those before it broadcast (d0 = 0: whole)
            d0 = max([d + 1 for d, st, _ in live if st == 0], default=0)
            if any(st != (ds if d >= d0 else 0) for d, st, ds in live):
                return None
            if d0 == 0:
                modes.append(1)
            elif d0 >= lead:
                modes.append(0)
            else:   # position embeddings over a batch: the rows repeat every -mode elements
                modes.append(-math.prod(shape[d0:]))
        return tuple(modes)

    @_replay.replayable()
    def _layer_norm_block(self, block, modes: tuple, inputs: list, scalars: list, n_dims: int,
                          eps: float, weight=None, bias=None) -> CubeTensor:
        shape = tuple(block.shape)
        n = math.prod(shape[len(shape) - n_dims:])
        rows = math.prod(shape) // n
        weight, bias, head = self._norm_info(rows, n, 0, eps, weight, bias)
        out = self.alloc("layer_norm", shape, dt.float32)
        words = [w for v, d in zip(scalars, block.scalars) for w in self._scalar_words(v, d)]
        info = info_words([*head, *(x.offset for x in inputs), *words])
        lanes = self.row_lanes(n)
        x0 = inputs[0]
        ins = inputs + [x0] * (4 - len(inputs))
        self.client.launch(self._layer_norm_block_kernel(block, modes, lanes),
                           self.groups(-(-rows // (ROW_WG // lanes))),
                           [*ins, out, x0 if weight is None else weight,
                            x0 if bias is None else bias, info])
        return out

    @functools.lru_cache(maxsize=1024)
    def _layer_norm_block_kernel(self, block, modes: tuple, lanes: int) -> TextKernelSource:
        """`kernels/rows.cu`'s `layer_norm_block_rows` with `lz_block` for `block` in front
        (memoized per block object, input layout and lanes)."""
        r = self.renderer
        program = r.program(block)
        used = sorted({o.index for ins in block.instrs for o in ins.operands if o.kind == "in"})
        at = {1: " + at + i", 0: " + i", 2: ""}
        body = [f"const float x{k} = in{k}[info[{8 + k}u]"
                f"{at[modes[k]] if modes[k] >= 0 else f' + at % {-modes[k]}u + i'}];"
                for k in used]
        body += r.scalar_lines(block.scalars, 8 + len(modes))
        body += program
        params = ", ".join(f"const float* __restrict__ in{k}" for k in range(4))
        fn = ([r.helpers_for(*program),
               "__device__ __forceinline__ float lz_block(" + params +
               ", const unsigned int* __restrict__ info, unsigned int at, unsigned int i) {"]
              + ["    " + line for line in body]
              + [f"    return v{block.outputs[0]};", "}", ""])
        rows = self._template("rows", {"lanes": lanes}, "layer_norm_block_rows", wg=ROW_WG)
        text = "#define LZ_BLOCK\n" + "\n".join(fn) + rows.text
        return TextKernelSource("layer_norm_block", "cuda", text, "layer_norm_block_rows",
                                rows.cube_dim)

    # ------------------------------------------------------------------ creation
    def full(self, shape: tuple, value, dtype) -> CubeTensor:
        self.check_dtype("full", dtype)
        out = self.alloc("full", shape, dtype)
        n = out.num_elements
        if n:
            bits = self._scalar_bits("full", value, dtype)
            word = int(bits.view({1: np.uint8, 2: np.uint16, 4: np.uint32,
                                  8: np.uint64}[bits.itemsize])[0])
            p = self._template("fill", {"elem": self._bits_values(dtype)["elem"]})
            self.client.launch(p, self.groups_for(n),
                               [out, info_words([n, word & 0xFFFFFFFF, word >> 32])])
        return out

    def zeros(self, shape: tuple, dtype) -> CubeTensor:
        return self.full(shape, 0, dtype)

    # ------------------------------------------------------------------ matmul
    def linear(self, x: CubeTensor, weight: CubeTensor, bias=None) -> CubeTensor:
        """`x @ weight^T (+ bias)`: one cuBLAS(Lt) call on a transposed view of the weight, the
        bias added by the epilogue."""
        if x.ndim < 2 or (bias is not None and bias.shape != (weight.shape[0],)):
            return super().linear(x, weight, bias)
        out = self._dense_linear(x, weight, bias)
        if out is not None:
            return out
        wt = self.permute(weight, (1, 0))
        wt = self.reshape(wt, (1,) * (x.ndim - 2) + wt.shape)
        return self._matmul(x, wt, None if bias is None else self.contiguous(bias), False)

    def _dense_linear(self, x: CubeTensor, weight: CubeTensor, bias) -> CubeTensor | None:
        """The common case with no view work: contiguous input, weight and bias of one float
        dtype go straight to one cuBLAS(Lt) call with the rows of x folded into one product
        (the host time of a small linear is most of its cost). None when that does not apply."""
        dtype = x.dtype
        n, k = weight.shape
        if weight.dtype is not dtype or x.shape[-1] != k or not self._use_blas(dtype) or \
                not (x.is_contiguous() and weight.is_contiguous()) or \
                (bias is not None and (bias.dtype is not dtype or not bias.is_contiguous())):
            return None
        m = x.num_elements // k if k else 0
        if m == 0 or n == 0:
            return None
        self.client._untaped()   # a library call: the op is not replayed launch by launch
        out = self.alloc("linear", x.shape[:-1] + (n,), dtype)
        size = self.storage_of(dtype).itemsize
        ok = self.client.blas.gemm(
            dtype.name, m, n, k, x.handle.ptr + x.offset * size, k, 1,
            weight.handle.ptr + weight.offset * size, 1, k, out.handle.ptr,
            bias=None if bias is None else bias.handle.ptr + bias.offset * size,
            tf32=self.allow_tf32)
        return out if ok else None

    def matmul(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        return self._matmul(lhs, rhs, None, False)

    def matmul_bias_relu(self, lhs: CubeTensor, rhs: CubeTensor, bias: CubeTensor) -> CubeTensor:
        """relu(lhs @ rhs + bias) with a bias of the output's last dim: one cuBLASLt call with
        the RELU_BIAS epilogue (the seed example's fused op)."""
        return self._matmul(lhs, rhs, self.contiguous(bias), True)

    def _matmul(self, lhs: CubeTensor, rhs: CubeTensor, bias, relu: bool) -> CubeTensor:
        out_shape = sh.matmul(lhs.shape, rhs.shape)
        m, k = lhs.shape[-2:]
        n = rhs.shape[-1]
        dtype = lhs.dtype
        if k == 0 or 0 in out_shape:
            out = self.zeros(out_shape, dtype)
            if bias is not None and out.num_elements:
                out = self.binary(BinaryOp.ADD, out, bias)
                if relu:
                    out = self.unary(UnaryOp.RELU, out)
            return out
        if bias is not None and tuple(bias.shape) != (n,):   # not a per-column bias
            out = self.binary(BinaryOp.ADD, self._matmul(lhs, rhs, None, False), bias)
            return self.unary(UnaryOp.RELU, out) if relu else out
        batch = out_shape[:-2]
        if self._use_blas(dtype):
            done = self._blas_matmul(lhs, rhs, bias, relu, out_shape, batch, m, n, k)
            if done is not None:
                return done
        return self._kernel_matmul(lhs, rhs, bias, relu, out_shape, batch, m, n, k)

    def _use_blas(self, dtype) -> bool:
        return dtype in (dt.float32, dt.float64, dt.float16) and cuda_cublas() and \
            self.client.blas is not None

    def _dense_batches(self, lhs, rhs, batch):
        """Both operands as contiguous [*batch, rows, cols] tensors (one stride per batch)."""
        return (self.contiguous(self.expand(lhs, batch + lhs.shape[-2:])),
                self.contiguous(self.expand(rhs, batch + rhs.shape[-2:])))

    def _blas_matmul(self, lhs, rhs, bias, relu, out_shape, batch, m, n, k):
        """The product through cuBLAS(Lt), or None when it cannot take these layouts."""
        self.client._untaped()   # a library call: the op is not replayed launch by launch
        batches = math.prod(batch)
        bshape, a_bs, b_bs = self.batch_layout(lhs, rhs, batch)
        dense = len(bshape) > 1  # batch dims that no single stride walks
        if dense and bias is None:   # each batch's matrices through pointer arrays, no copies
            out = self._pointer_matmul(lhs, rhs, out_shape, bshape, a_bs, b_bs, m, n, k)
            if out is not None:
                return out
        if dense:                    # else make them dense
            lhs, rhs = self._dense_batches(lhs, rhs, batch)
        a_bstride = m * k if dense and batch else (a_bs[0] if a_bs else 0)
        b_bstride = k * n if dense and batch else (b_bs[0] if b_bs else 0)
        out = self.alloc("matmul", out_shape, lhs.dtype)
        size = self.storage_of(lhs.dtype).itemsize
        blas = self.client.blas
        while True:
            ok = blas.gemm(lhs.dtype.name, m, n, k,
                           lhs.handle.ptr + lhs.offset * size, lhs.strides[-2], lhs.strides[-1],
                           rhs.handle.ptr + rhs.offset * size, rhs.strides[-2], rhs.strides[-1],
                           out.handle.ptr, batches, a_bstride, b_bstride,
                           bias=None if bias is None else bias.handle.ptr + bias.offset * size,
                           relu=relu, tf32=self.allow_tf32)
            if ok:
                return out
            if bias is not None:   # no epilogue for this case: plain product, then the bias
                plain = self._blas_matmul(lhs, rhs, None, False, out_shape, batch, m, n, k)
                if plain is None:
                    return None
                out = self.binary(BinaryOp.ADD, plain, bias)
                return self.unary(UnaryOp.RELU, out) if relu else out
            if dense:              # dense copies did not help either
                return None
            lhs, rhs = self._dense_batches(lhs, rhs, batch)   # a layout cuBLAS refuses: once
            dense = True
            a_bstride, b_bstride = (m * k, k * n) if batch else (0, 0)

    def _pointer_matmul(self, lhs, rhs, out_shape, bshape, a_bs, b_bs, m, n, k,
                        heads_last: bool = False):
        """A batched product whose batch dims need several strides (heads split out of a
        sequence by a permute): one cuBLAS call over per-batch pointer arrays, or None.
        `heads_last` (a [b, h, m, n] product): the result is laid out as [b, m, h, n] in
        memory and returned as the [b, h, m, n] view of it, so merging the heads back is a
        free reshape."""
        size = self.storage_of(lhs.dtype).itemsize
        a_off, b_off = _batch_offsets(tuple(bshape), tuple(a_bs), tuple(b_bs))
        batches = len(a_off)
        if heads_last:
            b, h = out_shape[0], out_shape[1]
            out = self.alloc("matmul", (b, m, h, n), lhs.dtype)
            view = self._view(out, out_shape, (m * h * n, n, h * n, 1), 0)
            i = np.arange(batches, dtype=np.int64)
            c_off = (i // h) * (m * h * n) + (i % h) * n
            c_rs = h * n
        else:
            out = view = self.alloc("matmul", out_shape, lhs.dtype)
            c_off = np.arange(batches, dtype=np.int64) * (m * n)
            c_rs = None
        words = np.empty(3 * batches, np.int64)   # device addresses (below 2**63)
        words[:batches] = a_off * size + (lhs.handle.ptr + lhs.offset * size)
        words[batches:2 * batches] = b_off * size + (rhs.handle.ptr + rhs.offset * size)
        words[2 * batches:] = c_off * size + out.handle.ptr
        base = self.client.host_data(words)
        ok = self.client.blas.gemm_pointers(
            lhs.dtype.name, m, n, k, base, lhs.strides[-2], lhs.strides[-1],
            base + 8 * batches, rhs.strides[-2], rhs.strides[-1], base + 16 * batches,
            batches, tf32=self.allow_tf32, c_rs=c_rs)
        return view if ok else None

    # ------------------------------------------------------------------ attention
    #: The fused attention kernel is kernels/attention.cu (the family's `attention` takes it
    #: where it fits; see CubeBackend.ATTENTION_*). On MiniLM's heads (H200, CUPTI, one
    #: process): 128 threads / 4 rows / 64 keys took 38-41 µs; 256 / 2 / 64 46; 128 / 2 / 64
    #: 45; 128 / 8 / 32 61 (it spills); 64 / 4 / 64 64; capping registers for a fifth block
    #: a multiprocessor 47. The previous kernel (a query row per thread) took 44 µs, the
    #: three launches 58 µs and torch's SDPA 57 µs. At 64 columns (BERT-base's b32 s128
    #: heads) the three launches were the faster: 81 µs against 97 µs, so ATTENTION_MAX_D
    #: stays 32.

    def _attention_values(self, probs: CubeTensor, v: CubeTensor) -> CubeTensor:
        """`probs @ v` for [b, h, t, d] heads: written as [b, t, h, d] (see _pointer_matmul)
        so the caller's merge of the heads needs no copy."""
        if probs.ndim == 4 and v.ndim == 4 and self._use_blas(probs.dtype) and \
                probs.dtype is v.dtype and probs.shape[:2] == v.shape[:2] and \
                probs.shape[-1] == v.shape[-2] and 0 not in probs.shape and 0 not in v.shape:
            self.client._untaped()
            m, k = probs.shape[-2:]
            n = v.shape[-1]
            batch = probs.shape[:2]
            bshape, a_bs, b_bs = self.batch_layout(probs, v, batch)   # row-major batches
            out = self._pointer_matmul(probs, v, batch + (m, n), bshape, a_bs, b_bs, m, n, k,
                                       heads_last=True)
            if out is not None:
                return out
        return self.matmul(probs, v)

    @_replay.replayable()
    def _kernel_matmul(self, lhs, rhs, bias, relu, out_shape, batch, m, n, k) -> CubeTensor:
        """The register-blocked fallback kernel (kernels/matmul.cu)."""
        out = self.alloc("matmul", out_shape, lhs.dtype)
        bshape, a_bs, b_bs = self.batch_layout(lhs, rhs, batch)
        batches = math.prod(batch)
        a_rs, a_ks = lhs.strides[-2:]
        b_ks, b_cs = rhs.strides[-2:]
        t = self.renderer.type_of(lhs.dtype)
        acc = t.compute if t.kind == "float" else "long long"
        values = {"enable": self.renderer.prelude(t.storage), "elem": t.storage, "acc": acc,
                  "relu": int(relu)}
        has_bias = bias is not None
        entry = "matmul_bias" if has_bias else "matmul"
        p = self._template("matmul", values, entry, wg=MATMUL_THREADS)
        gx, gy = -(-n // MATMUL_BN), -(-m // MATMUL_BM)
        top = self.client.limits.max_workgroups_per_dim
        if gy > top:
            raise ShapeError(f"matmul: output {out_shape} needs {gy} row tiles; {self.device} "
                             f"allows {top}")
        info = info_words([m, n, k, lhs.offset, a_rs, a_ks, rhs.offset, b_ks, b_cs, batches,
                           len(bshape), *bshape, *a_bs, *b_bs] +
                          ([bias.offset] if has_bias else []))
        count = CubeCount(gx, gy, min(batches, top))
        self.client.launch(p, count, [lhs, rhs, out, bias, info] if has_bias else
                           [lhs, rhs, out, info])
        return out
