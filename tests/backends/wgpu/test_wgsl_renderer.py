"""WgslRenderer: the Cube renderer base in WGSL renders the same kernels as the hand-written WGSL
generator it replaced (sha256 of each kernel's whitespace-normalized text, in wgsl_golden.json,
taken from that generator); WgslRenderer overrides spellings only; kernels/helpers.wgsl holds
every helper the op tables call and compiles as a WGSL module.

After an intended change to generated WGSL, rewrite the golden file with
`python tests/backends/wgpu/test_wgsl_renderer.py --update` and say why in the commit.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.op_table import BINARY, UNARY, AsBool, Select
from lazyt.backends.cube.renderer import Renderer
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref
from lazyt.backends.wgpu import codegen as cg
from lazyt.backends.wgpu.renderer import WGSL, WgslRenderer
from lazyt.errors import InvalidArgumentError
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp

GOLDEN = Path(__file__).with_name("wgsl_golden.json")
DTYPES = (dt.float32, dt.float16, dt.int32, dt.int64, dt.bool_)
IN, SC, V = (lambda i: Ref("in", i)), (lambda i: Ref("sc", i)), (lambda i: Ref("v", i))
MATMUL_CONFIGS = (cg.MatmulConfig(), cg.MatmulConfig(bm=128, bn=128, bk=8, tm=8, tn=8,
                                                     prefetch=False),
                  cg.MatmulConfig(bm=64, bn=32, bk=16, tm=4, tn=4),
                  cg.MatmulConfig(bm=64, bn=64, bk=16, tm=8, tn=4, pad=4))


def blocks():
    """Fused blocks over every instruction kind: chains per dtype, a mixed block (bool, casts,
    f16, int64, helpers), and a block of constants only."""
    for d in (dt.float32, dt.float16, dt.int32):
        instrs = (FusedInstr("binary", BinaryOp.MUL, (IN(0), SC(0)), d),
                  FusedInstr("binary", BinaryOp.ADD, (V(0), SC(1)), d),
                  FusedInstr("unary", UnaryOp.RELU, (V(1),), d),
                  FusedInstr("binary", BinaryOp.MUL, (V(2), IN(1)), d),
                  FusedInstr("binary", BinaryOp.SUB, (V(3), SC(2)), d),
                  FusedInstr("unary", UnaryOp.ABS, (V(4),), d),
                  FusedInstr("binary", BinaryOp.GT, (V(5), IN(0)), dt.bool_))
        yield f"chain_{d.name}", FusedBlock((8, 16), (((8, 16), d), ((16,), d)), (d, d, d),
                                            instrs, (5, 6))
    instrs = (FusedInstr("binary", BinaryOp.LT, (IN(0), IN(1)), dt.bool_),
              FusedInstr("binary", BinaryOp.AND, (V(0), SC(0)), dt.bool_),
              FusedInstr("where", None, (V(1), IN(0), SC(1)), dt.float32),
              FusedInstr("cast", None, (V(2),), dt.float16),
              FusedInstr("full", None, (SC(2),), dt.int64),
              FusedInstr("cast", None, (V(0),), dt.int32),
              FusedInstr("binary", BinaryOp.ADD, (V(4), V(5)), dt.int64),
              FusedInstr("unary", UnaryOp.ERF, (IN(0),), dt.float32),
              FusedInstr("unary", UnaryOp.TANH, (V(7),), dt.float32),
              FusedInstr("binary", BinaryOp.POW, (V(8), IN(2)), dt.float32),
              FusedInstr("binary", BinaryOp.FLOOR_DIV, (V(9), IN(2)), dt.float32),
              FusedInstr("binary", BinaryOp.MOD, (V(4), V(5)), dt.int64),
              FusedInstr("unary", UnaryOp.SIGN, (V(11),), dt.int64))
    yield "mixed", FusedBlock((4, 8), (((4, 8), dt.float32), ((), dt.float32),
                                       ((4, 8), dt.float32)),
                              (dt.bool_, dt.float32, dt.int64), instrs, (3, 6, 10, 12))
    yield "only_full", FusedBlock((4, 8), (), (dt.float32,),
                                  (FusedInstr("full", None, (SC(0),), dt.float32),), (0,))


def rendered() -> dict[str, str]:
    """Every case: elementwise kernels per op and dtype, casts, where, fused blocks in each
    form, the reduction recipes (with their helpers) and matmul kernels."""
    t = WGSL.type_of
    out = {}
    for table, kernel, prefix in ((UNARY, WGSL.unary_kernel, "unary"),
                                  (BINARY, WGSL.binary_kernel, "binary")):
        for op, kinds in table.items():
            for d in DTYPES:
                if t(d).kind in kinds:
                    out[f"{prefix}_{op.value}_{d.name}"] = kernel(op, d).text
    for d in DTYPES:
        out[f"where_{d.name}"] = WGSL.where_kernel(d).text
        for e in DTYPES:
            if t(d).compute != t(e).compute:
                out[f"cast_{d.name}_{e.name}"] = WGSL.cast_kernel(d, e).text
    for name, b in blocks():
        out[f"fused_{name}"] = WGSL.fused_kernel(b).text
        splat = tuple(s == () for s, _ in b.inputs)
        out[f"fused_{name}_vec4"] = WGSL.fused_kernel(b, True, splat).text
        out[f"fused_{name}_vec4_nosplat"] = WGSL.fused(b, True, (False,) * len(b.inputs))
    for op in ReduceOp:
        for acc in (dt.float32, dt.int32):
            s = WGSL.reduce_spec(op, t(acc))
            out[f"reduce_{op.value}_{acc.name}"] = "|".join(
                [s.identity, s.combine, s.finish, WGSL.helpers_for(s.combine)])
    for d in (dt.float32, dt.float16):
        for vec4 in (False, True):
            for bias in (False, True):
                for b_trans in ((False, True) if vec4 else (False,)):
                    for cfg in MATMUL_CONFIGS:
                        out[f"matmul_{d.name}_{vec4}_{bias}_{b_trans}_{cfg}"] = \
                            cg.matmul_source(d, cfg, vec4, bias, b_trans).text
    return out


def digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


@pytest.mark.parametrize("pad", [-4, 2, 6])
def test_a_matmul_tile_pad_must_keep_vec4_rows(pad):
    with pytest.raises(InvalidArgumentError, match="pad"):
        cg.MatmulConfig(pad=pad)


def test_a_padded_tile_lengthens_each_k_row():
    """pad=4: the workgroup tiles hold bk rows of bm + 4 (bn + 4) floats; a k row's reads
    start at a multiple of that stride."""
    text = cg.matmul_source(dt.float32, cg.MatmulConfig(bm=64, bn=64, bk=16, tm=8, tn=4,
                                                        pad=4), True, False, True).text
    assert f"var<workgroup> As: array<vec4<f32>, {16 * 68 // 4}>" in text
    assert f"var<workgroup> Bs: array<vec4<f32>, {16 * 68 // 4}>" in text
    assert f"As[({15 * 68}u + ty * 8u) / 4u + 1u]" in text


def test_renders_the_same_wgsl_as_the_generator_it_replaced():
    golden = json.loads(GOLDEN.read_text())
    got = rendered()
    assert sorted(got) == sorted(golden)
    changed = [k for k in sorted(got) if digest(got[k]) != golden[k]]
    assert not changed, f"generated WGSL changed for {changed[:5]}:\n{got[changed[0]]}"


def test_a_few_kernels_spelled_out():
    relu = WGSL.unary_kernel(UnaryOp.RELU, dt.float32).text
    assert "out[i] = select(max(v0, 0.0), v0, lz_isnan(v0));" in relu
    assert "fn lz_isnan(x: f32) -> bool" in relu and "lz_erf" not in relu
    half = WGSL.binary_kernel(BinaryOp.NE, dt.float16).text
    assert half.startswith("enable f16;\n") and "array<f16>" in half
    assert "select(0u, 1u, !(v0 == v1))" in half and "let v0 = f32(in0[i0]);" in half
    cast = WGSL.cast_kernel(dt.float32, dt.bool_).text
    assert "out[i] = select(0u, 1u, !(v0 == 0.0));" in cast
    chain = dict(blocks())["chain_float16"]
    vec = WGSL.fused_kernel(chain, True, (False, False)).text
    assert "let s0 = bitcast<f32>(info[3u]);" in vec
    assert "out0[q] = vec4<f16>(f16(v5x), f16(v5y), f16(v5z), f16(v5w));" in vec
    assert "let v0x: f32 = lz_round_f16((x0x * s0));" in vec
    spec = WGSL.reduce_spec(ReduceOp.ARGMAX, WGSL.type_of(dt.float32))
    assert spec.identity == "-bitcast<f32>(0x7f800000u)" and spec.finish == "i32(r.i)"


def test_sources_are_memoized_and_ids_cover_the_entry_and_workgroup():
    k = WGSL.unary_kernel(UnaryOp.EXP, dt.float32)
    assert WGSL.unary_kernel(UnaryOp.EXP, dt.float32) is k
    assert k.id() is k.id()
    assert dict(k.id().settings) == {"entry": "main", "cube_dim": (256, 1, 1)}
    block = dict(blocks())["chain_float32"]
    assert WGSL.fused_kernel(block, True, (False, False)) is \
        WGSL.fused_kernel(block, True, (False, False))
    assert dict(WGSL.fused_kernel(block, True, (False, False)).id().settings)["cube_dim"] == \
        (128, 1, 1)


SPELLINGS = {"lang", "runtime", "compute_types", "uint", "helper_file", "helper_start",
             "declare_before_use", "convert", "from_bits", "select", "float_literal", "let", "var",
             "struct", "vec4", "make_vec4", "prelude", "kernel", "file_ext", "bit_types",
             "wide_types", "from_bits64", "wrap"}


def test_wgsl_renderer_overrides_spellings_only():
    own = {k for k in vars(WgslRenderer) if not k.startswith("__")}
    assert own <= SPELLINGS, own - SPELLINGS
    assert all(callable(getattr(Renderer, k)) for k in SPELLINGS if callable(getattr(WGSL, k)))


def _calls(expr) -> set[str]:
    if isinstance(expr, str):
        return set(re.findall(r"\blz_\w+(?=\()", expr))
    if isinstance(expr, Select):
        return _calls(expr.cond) | _calls(expr.then) | _calls(expr.other)
    if isinstance(expr, AsBool):
        return _calls(expr.cond)
    raise TypeError(expr)


def test_helper_file_defines_every_helper_the_tables_call():
    defs = WGSL.helper_defs()
    called = {name for table in (UNARY, BINARY) for kinds in table.values()
              for e in kinds.values() for name in _calls(e)}
    called |= {"lz_round_f16", "lz_isnan"}          # fused f16 rounding, reductions
    assert called <= set(defs), called - set(defs)
    assert all(text.startswith(f"fn {name}(") and text.endswith("}")
               for name, text in defs.items())
    assert "lz_fmax" in WGSL.helpers_for("lz_fmax(a, b)") and \
        "fn lz_isnan" in WGSL.helpers_for("lz_fmax(a, b)")        # and what it calls


def test_helper_file_compiles_as_a_wgsl_module(backend):
    text = WGSL.helper_file.read_text()
    backend.client.device.create_shader_module(label="helpers", code=text)


if __name__ == "__main__":
    if "--update" in sys.argv:
        GOLDEN.write_text(json.dumps({k: digest(v) for k, v in sorted(rendered().items())},
                                     indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        pytest.main([__file__, "-q"])


def test_small_ints_live_in_i32_words_and_wrap_what_ops_produce():
    """uint8/int8/int16 are i32 words in WGSL (no 8/16-bit storage there): every value an op
    produces is masked (uint8) or sign-extended (int8, int16) back into the dtype's range."""
    u8, i8, i16 = (WGSL.type_of(d) for d in (dt.uint8, dt.int8, dt.int16))
    assert (u8.storage, u8.compute, u8.bits, u8.unsigned) == ("i32", "i32", 8, True)
    assert (i16.storage, i16.bits, i16.unsigned) == ("i32", 16, False)
    assert WGSL.wrap(u8, "x") == "(x & 255)"
    assert WGSL.wrap(i8, "x") == "((x << 24u) >> 24u)"
    assert WGSL.wrap(i16, "x") == "((x << 16u) >> 16u)"
    assert WGSL.wrap(WGSL.type_of(dt.int32), "x") == "x"
    assert "out[i] = ((v0 + v1) & 255);" in WGSL.binary_kernel(BinaryOp.ADD, dt.uint8).text
    assert "out[i] = ((i32(v0) << 24u) >> 24u);" in WGSL.cast_kernel(dt.float32, dt.int8).text
    # comparisons give bools, nothing to wrap
    assert "& 255" not in WGSL.binary_kernel(BinaryOp.LT, dt.uint8).text
