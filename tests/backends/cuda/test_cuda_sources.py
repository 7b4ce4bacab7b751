"""Every CUDA kernel the cuda backend can launch compiles for sm_90, without a GPU.

A `CudaBackend` runs on a recording client that keeps each launched kernel instead of running
it; the ops are driven through their host code (so each template is filled exactly as on the
GPU), for every dtype the backend stores, and every distinct source is compiled by nvcc to a
cubin for sm_90 (the H200's architecture), in one nvcc call per source."""
from __future__ import annotations

import math
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.client import ComputeClient, CubeLimits
from lazyt.backends.cube.tensor import CubeTensor
from lazyt.backends.cuda.backend import CudaBackend
from lazyt.backends.cuda.client import CudaKernel, kernel_params
from lazyt.backends.cuda.renderer import CUDA
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref
from lazyt.errors import KernelCompileError
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp
from lazyt.ops.codes import COMPARISONS

NVCC = shutil.which("nvcc")
DTYPES = (dt.float32, dt.float16, dt.float64, dt.int32, dt.int64, dt.bool_, dt.uint8, dt.int8,
          dt.int16)
FLOATS = (dt.float32, dt.float16, dt.float64)


class FakeHandle:
    def __init__(self, nbytes, ptr=1 << 20):
        self.nbytes = nbytes
        self.buffer = None
        self.ptr = ptr


class RecordingClient(ComputeClient):
    """A cuda client that records launched kernel sources instead of running them."""

    lang = "cuda"
    runtime = "cuda"
    renderer = CUDA
    compiled_type = CudaKernel
    has_f16 = True
    limits = CubeLimits(max_workgroups_per_dim=65535, max_storage_buffers=1 << 16)
    blas = None

    def __init__(self):
        super().__init__("cuda:0", "recording")
        self.sources: dict = {}
        self._err = FakeHandle(2048)

    def check_size(self, nbytes, what="a buffer"):
        pass

    def empty(self, nbytes):
        return FakeHandle(nbytes)

    def create_from_slice(self, data):
        return FakeHandle(len(memoryview(data).cast("B")))

    def read(self, handle, nbytes=None, offset=0):
        raise AssertionError("no reads on the recording client")

    def launch(self, kernel, cube_count, bindings):
        src = kernel.for_lang("cuda")
        text = src.complete() if hasattr(src, "complete") else src.source().complete()
        params = kernel_params(src.name, text, src.entry)
        assert len(params) == len(bindings), (src.name, params, len(bindings))
        self.sources[src.id()] = (src.name, src.entry, text)

    def _build(self, name, kid, text, entry):
        raise AssertionError("nothing is compiled on the recording client")

    def flush(self):
        pass

    def sync(self):
        pass

    @property
    def errors_binding(self):
        return self._err

    def _reset_errors(self, n):
        pass


@pytest.fixture(scope="module")
def recorded():
    client = RecordingClient()
    b = CudaBackend(client, "cuda:0")
    b.replay = False

    def t(shape, dtype, strides=None, offset=0):
        shape = tuple(shape)
        strides = strides or tuple(int(math.prod(shape[i + 1:])) for i in range(len(shape)))
        return CubeTensor(client, "cuda:0", shape, tuple(strides), FakeHandle(1 << 20), dtype,
                          offset)

    for d in DTYPES:
        x = t((4, 8), d)
        b.full((4, 8), 1, d)
        b.copy(t((4, 8), d, (1, 4)))
        b.unary(UnaryOp.ABS, x)
        for op in BinaryOp:
            try:
                b.binary(op, x, t((8,), d))
                b.binary(op, x, 2)
            except lazyt_dtype_error():
                pass
        b.where(t((4, 8), dt.bool_), x, t((4, 1), d))
        for other in DTYPES:
            b.cast(x, other)
        for op in ReduceOp:
            try:
                b.reduce(op, x, (1,), False)                  # one thread per output
                b.reduce(op, t((4, 4096), d), (1,), False)    # a block per output
                b.reduce(op, t((2, 40000), d), (1,), True)    # split in two passes
            except lazyt_dtype_error():
                pass
        b.cumsum(x, 1)
        b.cumsum(t((4, 1000), d), 1)
        idx = t((4, 8), dt.int64)
        b.gather(x, 1, idx)
        b.gather(x, 1, t((4, 8), dt.int32))
        b.index_select(x, 0, t((5,), dt.int64))                 # rows: gather_rows.cu
        b.index_select(t((4, 2), d), 0, t((3,), dt.int32))      # rows of 2: one a thread
        b.index_select(x, 1, t((5,), dt.int64))                 # the generic gather
        b.scatter_add(x, 1, idx, t((4, 8), d))
    for d in (dt.float32,):
        x = t((4, 64), d)
        b.softmax(x, 1)
        b.layer_norm(x, 1, 1e-5, t((64,), d), t((64,), d))
        b.rms_norm(x, 1, 1e-5, t((64,), d))
        b.attention(t((2, 4, 16, 8), d), t((2, 4, 16, 8), d), t((2, 4, 16, 8), d),
                    t((2, 1, 1, 16), d), 0.5)                      # fused (attention.cu)
        b.attention(t((3, 40, 7), d), t((3, 9, 7), d), t((3, 9, 24), d), None, 0.5)
        b.ATTENTION_ROWS, b.ATTENTION_MAX_D = 2, 64   # other rows per lane group, 64-wide heads
        b.attention(t((2, 4, 16, 64), d), t((2, 4, 16, 64), d), t((2, 4, 16, 64), d),
                    t((2, 4, 16, 16), d), 0.5)
        del b.ATTENTION_ROWS, b.ATTENTION_MAX_D
        b.attention(t((2, 4, 16, 80), d), t((2, 4, 16, 80), d), t((2, 4, 16, 80), d),
                    t((2, 1, 1, 16), d), 0.5)                      # too wide: three launches
        # a fused block inside the layer norm: whole, row and one-element inputs, a scalar
        # and a helper function (erf)
        f = dt.float32
        blk = FusedBlock((4, 64), (((4, 64), f), ((64,), f), ((1,), f)), (f,), (
            FusedInstr("binary", BinaryOp.MUL, (Ref("in", 0), Ref("sc", 0)), f),
            FusedInstr("unary", UnaryOp.ERF, (Ref("v", 0),), f),
            FusedInstr("binary", BinaryOp.ADD, (Ref("v", 1), Ref("in", 1)), f),
            FusedInstr("binary", BinaryOp.ADD, (Ref("v", 2), Ref("in", 2)), f)), (3,))
        ins = [t((4, 64), f), t((64,), f), t((1,), f)]
        assert b._block_row_modes(blk, ins, 1) == (1, 0, 2)
        b.run_prologue("layer_norm", blk, ins, [0.5], (1, 1e-5, t((64,), f), None))
        b.run_prologue("layer_norm", blk, ins, [0.5], (2, 1e-5, None, t((4, 64), f)))
        b.run_prologue("layer_norm", blk, ins, [0.5], (1, 1e-5, None, None))
        # BERT's embeddings: words, positions repeated over the batch, the token-type row
        emb = FusedBlock((2, 4, 64), (((2, 4, 64), f), ((1, 4, 64), f), ((64,), f)), (), (
            FusedInstr("binary", BinaryOp.ADD, (Ref("in", 0), Ref("in", 1)), f),
            FusedInstr("binary", BinaryOp.ADD, (Ref("v", 0), Ref("in", 2)), f)), (1,))
        ins = [t((2, 4, 64), f), t((4, 64), f), t((64,), f)]
        assert b._block_row_modes(emb, ins, 1) == (1, -256, 0)
        b.run_prologue("layer_norm", emb, ins, [], (1, 1e-5, t((64,), f), t((64,), f)))
    for d in (dt.float32, dt.float64, dt.float16, dt.int32, dt.int64):
        b._kernel_matmul(t((3, 5), d), t((5, 7), d), None, False, (3, 7), (), 3, 7, 5)
        b._kernel_matmul(t((2, 3, 5), d), t((5, 7), d), t((7,), d), True, (2, 3, 7), (2,), 3,
                         7, 5)
    for block in fused_blocks():
        b.run_fused(block, [t(s, d) for s, d in block.inputs],
                    [1.5 if sd.is_float else 2 for sd in block.scalars])
        b.run_fused(block, [t(s, d, tuple(reversed(range(1, len(s) + 1)))) for s, d in
                            block.inputs], [0.5 if sd.is_float else 1 for sd in block.scalars])
    return client.sources


def lazyt_dtype_error():
    from lazyt.errors import DTypeError
    return DTypeError


def fused_blocks() -> list:
    """A fused block per dtype applying every table op of its kind, with where, casts and a
    scalar (one of the dtype's own, so 64-bit scalars take two info words)."""
    from lazyt.backends.cube.op_table import BINARY, UNARY
    out = []
    for d in DTYPES:
        kind = "float" if d.is_float else "bool" if d is dt.bool_ else "int"
        ins = []
        for op, kinds in UNARY.items():
            if kind in kinds:
                ins.append(FusedInstr("unary", op, (Ref("in", 0),), d))
        for op, kinds in BINARY.items():
            if kind in kinds:
                ins.append(FusedInstr("binary", op, (Ref("in", 0), Ref("in", 1)),
                                      dt.bool_ if op in COMPARISONS or kind == "bool" else d))
        ins.append(FusedInstr("binary", BinaryOp.LT, (Ref("in", 0), Ref("sc", 0)), dt.bool_))
        ins.append(FusedInstr("where", None, (Ref("v", len(ins) - 1), Ref("in", 0),
                                              Ref("in", 1)), d))
        for target in DTYPES:
            if target is not d:
                ins.append(FusedInstr("cast", None, (Ref("in", 0),), target))
        ins.append(FusedInstr("full", None, (Ref("sc", 0),), d))
        out.append(FusedBlock((4, 8), (((4, 8), d), ((4, 8), d)), (d,), tuple(ins),
                              tuple(range(len(ins)))))
    return out


def test_every_template_and_generated_kind_is_launched(recorded):
    names = {(name, entry) for name, entry, _ in recorded.values()}
    for want in [("fill", "kernel"), ("copy", "kernel"), ("reduce", "reduce_rows"),
                 ("reduce", "reduce_threads"), ("scan", "scan_rows"), ("scan", "scan_lines"),
                 ("gather", "kernel"), ("check_index", "kernel"), ("scatter_add", "kernel"),
                 ("rows", "softmax_rows"), ("rows", "layer_norm_rows"), ("rows", "rms_norm_rows"),
                 ("rows", "attention_rows"), ("attention", "attention_fused"),
                 ("layer_norm_block", "layer_norm_block_rows"),
                 ("matmul", "matmul"), ("matmul", "matmul_bias"),
                 ("fused", "kernel"), ("cast", "kernel"), ("where", "kernel")]:
        assert want in names, want


def _nvcc(job):
    i, (name, entry, text), folder = job
    src = folder / f"k{i}_{name}.cu"
    src.write_text(text)
    proc = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++17", "-w", "-o",
                           str(folder / f"k{i}.cubin"), str(src)],
                          capture_output=True, text=True, timeout=300)
    return name, entry, proc.returncode, proc.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH (the CUDA toolkit compiles the "
                                         "sources here; on the GPU machine NVRTC does)")
def test_nvcc_compiles_every_recorded_kernel_for_sm90(recorded, tmp_path):
    jobs = [(i, v, tmp_path) for i, v in enumerate(recorded.values())]
    with ThreadPoolExecutor(2) as pool:
        failed = [(n, e, err) for n, e, rc, err in pool.map(_nvcc, jobs) if rc]
    assert not failed, "\n\n".join(f"{n}:{e}\n{err}" for n, e, err in failed[:3])
    assert len(jobs) > 100


def test_kernel_params_reads_the_entry_signature():
    text = ('// a comment (x, y)\nextern "C" __global__ void __launch_bounds__(256)\n'
            'kernel(const float* __restrict__ a, float* b, const unsigned int* info) {}')
    assert kernel_params("k", text, "kernel") == ["const float* __restrict__ a", "float* b",
                                                  "const unsigned int* info"]
    with pytest.raises(KernelCompileError, match="no `extern"):
        kernel_params("k", text, "main")


def test_64_bit_scalars_take_two_info_words():
    block = fused_blocks()[2]              # float64
    text = CUDA.fused(block)
    assert "__longlong_as_double" in text
    b = CudaBackend(RecordingClient(), "cuda:0")
    lo, hi = b._scalar_words(1.5, dt.float64)
    assert np.array([lo, hi], np.uint32).view(np.float64)[0] == 1.5
    lo, hi = b._scalar_words(-(2 ** 40), dt.int64)
    assert np.array([lo, hi], np.uint32).view(np.int64)[0] == -(2 ** 40)
    assert b._scalar_words(1.5, dt.float32) == (int(np.float32(1.5).view(np.uint32)),)


def test_element_counts_leave_room_for_32_bit_thread_indices():
    from lazyt.errors import ShapeError
    b = CudaBackend(RecordingClient(), "cuda:0")
    b.check_numel("add", (2 ** 16, 2 ** 16 - 1))              # 2^32 - 2^16 elements: fine
    with pytest.raises(ShapeError, match=r"add: shape .*32-bit"):
        b.alloc("add", (2 ** 32 - 2 ** 8,), dt.float32)      # the last block would wrap


def test_small_ints_are_real_narrow_types_computed_in_int():
    """uint8/int8/int16 are `unsigned char`/`signed char`/`short` in buffers and `int` in
    registers; converting back to the narrow type wraps, and fused intermediates are wrapped
    the same way. Fused blocks with 1- or 2-byte integers never take the vec4 path (no
    float4/int4 loads over byte buffers)."""
    u8, i8, i16 = (CUDA.type_of(d) for d in (dt.uint8, dt.int8, dt.int16))
    assert (u8.storage, u8.compute, u8.bits, u8.unsigned) == ("unsigned char", "int", 8, True)
    assert (i8.storage, i16.storage) == ("signed char", "short")
    assert CUDA.wrap(u8, "x") == "((int)(((unsigned char)(x))))"
    assert CUDA.store(i16, "x") == "((short)(x))"
    assert "out[i] = ((unsigned char)((v0 + v1)));" in \
        CUDA.binary_kernel(BinaryOp.ADD, dt.uint8).text
    blocks = {b.inputs[0][1]: b for b in fused_blocks()}
    for d in (dt.uint8, dt.int8, dt.int16):
        assert not CUDA.can_vectorize(blocks[d])
        assert "((int)(((" in CUDA.fused(blocks[d])
    assert CUDA.bits_type(1) == "unsigned char"
    b = CudaBackend(RecordingClient(), "cuda:0")
    assert b._scalar_words(-5, dt.int8) == (0xFFFFFFFB,)
    assert b._scalar_words(200, dt.uint8) == (200,)


def test_vec4_fused_kernel_shape_is_the_renderers():
    """The vec4 fused kernel's shape belongs to the renderer: CUDA runs one float4 per thread
    in 256-thread blocks, WGSL keeps two per invocation in 128; the launch's grid follows."""
    from lazyt.backends.wgpu.renderer import WgslRenderer
    f32 = dt.float32
    block = FusedBlock(shape=(1 << 20,), inputs=(((1 << 20,), f32),), scalars=(f32,),
                       instrs=(FusedInstr("binary", BinaryOp.MUL, (Ref("in", 0), Ref("sc", 0)),
                                          f32),), outputs=(0,))
    assert (CUDA.fused_vec_per_thread, CUDA.fused_vec_wg) == (1, 256)
    assert (WgslRenderer.fused_vec_per_thread, WgslRenderer.fused_vec_wg) == (2, 128)
    text = CUDA.fused(block, True, (False,))
    assert text.count("q = first + ") == 1 and "* 256u + lid" in text
    wgsl = WgslRenderer().fused(block, True, (False,))
    assert wgsl.count("q = first + ") == 2 and "@workgroup_size(128" in wgsl
    client = RecordingClient()
    grids = []
    launch = client.launch
    client.launch = lambda kernel, count, bindings: (grids.append(count),
                                                     launch(kernel, count, bindings))
    b = CudaBackend(client, "cuda:0")
    b.replay = False
    x = CubeTensor(client, "cuda:0", (1 << 20,), (1,), FakeHandle(4 << 20), f32, 0)
    b.run_fused(block, [x], [2.0])
    assert [(g.x * g.y * g.z) for g in grids] == [(1 << 18) // 256]
