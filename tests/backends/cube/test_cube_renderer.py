"""The Cube renderer base is language-neutral: the CUDA renderer is a small subclass (it
overrides `lang`, `runtime`, `compute_types`, `helper_file`, `prelude`, `kernel` and one op
table entry), its kernels spell C (ternaries, `__uint_as_float`, `0.0f`, `make_float4`), and
nvcc compiles them: every op of the tables in fused blocks of each kind, the vec4 form, plain
elementwise kernels and the reduction recipes. No GPU is needed (PTX only)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.op_table import BINARY, KINDS, UNARY, Select
from lazyt.backends.cube.renderer import HelperError, Renderer, _helper_defs
from lazyt.backends.cuda.renderer import CUDA
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp

NVCC = shutil.which("nvcc")
IN, SC, V = (lambda i: Ref("in", i)), (lambda i: Ref("sc", i)), (lambda i: Ref("v", i))

@pytest.fixture(scope="module")
def cuda():
    """The CUDA renderer: a subclass of the base that overrides only spellings."""
    return CUDA


def every_op_block(dtype) -> FusedBlock:
    """One fused block applying every table op defined for `dtype`'s kind to its two inputs,
    plus where, casts and a constant; every value is an output."""
    kind = "float" if dtype.is_float else "bool" if dtype is dt.bool_ else "int"
    instrs = []
    for op, kinds in UNARY.items():
        if kind in kinds:
            instrs.append(FusedInstr("unary", op, (IN(0),), dtype))
    for op, kinds in BINARY.items():
        if kind in kinds:
            out = dt.bool_ if op.value in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                           "logical_or") else dtype
            instrs.append(FusedInstr("binary", op, (IN(0), IN(1)), out))
    instrs.append(FusedInstr("binary", BinaryOp.LT, (IN(0), SC(0)), dt.bool_))
    instrs.append(FusedInstr("where", None, (V(len(instrs) - 1), IN(0), IN(1)), dtype))
    for target in (dt.bool_, dt.int32, dt.float32):
        if target is not dtype:
            instrs.append(FusedInstr("cast", None, (IN(0),), target))
    instrs.append(FusedInstr("full", None, (SC(0),), dtype))
    return FusedBlock((4, 8), (((4, 8), dtype), ((8,), dtype)), (dtype,), tuple(instrs),
                      tuple(range(len(instrs))))


def _nvcc(tmp_path, text: str, name: str = "kernel") -> str:
    src = tmp_path / f"{name}.cu"
    src.write_text(text)
    proc = subprocess.run([NVCC, "--ptx", "-o", str(tmp_path / f"{name}.ptx"), str(src)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + "\n" + text
    return (tmp_path / f"{name}.ptx").read_text()


def test_op_tables_cover_every_op_with_known_kinds():
    assert set(UNARY) == set(UnaryOp) and set(BINARY) == set(BinaryOp)
    assert all(set(kinds) <= set(KINDS) for t in (UNARY, BINARY) for kinds in t.values())


def test_c_spellings(cuda):
    f32 = cuda.type_of(dt.float32)
    assert cuda.unary_expr(UnaryOp.RELU, f32, "x") == "((lz_isnan(x)) ? (x) : (max(x, 0.0f)))"
    assert cuda.unary_expr(UnaryOp.RSQRT, f32, "x") == "(1.0f / sqrt(x))"
    assert cuda.where_expr("c", "a", "b") == "((c != 0u) ? (a) : (b))"
    assert cuda.cast_expr(f32, cuda.type_of(dt.bool_), "x") == "((!(x == 0.0f)) ? (1u) : (0u))"
    assert cuda.cast_expr(f32, cuda.type_of(dt.int32), "x") == "((int)(x))"
    assert cuda.type_of(dt.float16) == type(f32)("__half", "float", "float")
    assert cuda.type_of(dt.int64).compute == "long long"
    spec = cuda.reduce_spec(ReduceOp.MAX, f32)
    assert spec.identity == "-__uint_as_float(0x7f800000u)"
    assert spec.combine.endswith("return Acc{max(a.v, b.v), 0u};")
    assert cuda.reduce_spec(ReduceOp.MEAN, f32).finish == "r.v / ((float)(info[7]))"
    text = cuda.fused(every_op_block(dt.float32))
    assert "select(" not in text and "bitcast<" not in text and "let " not in text
    assert "const auto s0 = __uint_as_float(info[7u]);" in text
    assert "auto i0 = info[3u] + info[4u] * i;" in text


def test_vec4_form_needs_a_vector_type(cuda):
    assert cuda.can_vectorize(every_op_block(dt.float32))
    assert not cuda.can_vectorize(every_op_block(dt.float16))     # no 4-vector of __half


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.int32, dt.bool_, dt.uint8,
                                   dt.int8, dt.int16], ids=str)
def test_nvcc_compiles_fused_blocks_of_every_op(cuda, tmp_path, dtype):
    block = every_op_block(dtype)
    ptx = _nvcc(tmp_path, cuda.fused_kernel(block).text)
    assert re.search(r"\.entry kernel\(", ptx)
    if dtype is dt.float32:
        _nvcc(tmp_path, cuda.fused_kernel(block, True, (False, False)).text, "vec4")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
def test_nvcc_compiles_elementwise_kernels_and_reduction_recipes(cuda, tmp_path):
    _nvcc(tmp_path, cuda.binary_kernel(BinaryOp.MOD, dt.float32).text, "mod")
    _nvcc(tmp_path, cuda.where_kernel(dt.float16).text, "where")
    _nvcc(tmp_path, cuda.cast_kernel(dt.float16, dt.bool_).text, "cast")
    parts = ["#include <cuda_fp16.h>", CUDA.helper_file.read_text()]
    for acc_dtype, c in ((dt.float32, "float"), (dt.int32, "int")):
        acc = cuda.type_of(acc_dtype)
        parts.append(f"namespace {c}_acc {{ struct Acc {{ {c} v; unsigned int i; }};")
        for op in ReduceOp:
            spec = cuda.reduce_spec(op, acc)
            parts.append(f"__device__ Acc combine_{op.value}(Acc a, Acc b) {{ {spec.combine} }}\n"
                         f"__device__ Acc start_{op.value}() {{ return Acc{{{spec.identity}, 0u}}; }}\n"
                         f"__device__ float finish_{op.value}(Acc r, const unsigned int* info) "
                         f"{{ return {spec.finish}; }}")
        parts.append("}")
    _nvcc(tmp_path, "\n".join(parts), "reduce")


def test_helper_files_split_into_definitions_with_overloads_together(tmp_path):
    path = tmp_path / "h.cuh"
    path.write_text("// a comment { not counted }\n"
                    "__device__ int lz_a(int x) {\n    if (x) { return 1; }\n    return 0;\n}\n\n"
                    "__device__ float lz_a(float x) { return x; }\n"
                    "__device__ float lz_b(float x) { return lz_a(x); }\n")
    defs = _helper_defs(path, Renderer.helper_start)
    assert set(defs) == {"lz_a", "lz_b"}
    assert defs["lz_a"].count("__device__") == 2 and defs["lz_a"].endswith("return x; }")
    bad = tmp_path / "bad.cuh"
    bad.write_text("__device__ int lz_c(int x) {\n    return x;\n")
    with pytest.raises(HelperError, match="lz_c"):
        _helper_defs(bad, Renderer.helper_start)
