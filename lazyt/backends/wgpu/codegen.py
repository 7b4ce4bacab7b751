"""Generated WGSL matmul: the unrolled, register-blocked batched matmul of the wgpu backend.

It stays WGSL-specific (workgroup tiles, vec4 loads, `fma`): the CUDA backend multiplies with
cuBLAS. The elementwise and fused kernels are rendered by the Cube renderer base
(`lazyt/backends/cube/renderer.py`) through `WgslRenderer`. Like those, a matmul kernel is
shape-generic: sizes, strides and offsets reach it through the `info` buffer.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...dtype import DType
from ..cube.renderer import KernelType
from ..cube.source import CubeDim, TextKernelSource
from .renderer import WGSL as R
from ..cube.op_table import BINARY, UNARY  # noqa: F401  (the op tables' former home)


# ------------------------------------------------------------------------------ matmul
@dataclass(frozen=True)
class MatmulConfig:
    """A register-blocked tile: the workgroup computes BM x BN outputs, each invocation TM x TN
    of them (TM, TN multiples of 4: vec4 registers), stepping K by BK. `prefetch` loads the
    next K step into registers while the current one is multiplied."""

    bm: int = 64
    bn: int = 64
    bk: int = 8
    tm: int = 4
    tn: int = 4
    prefetch: bool = True

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


def _tile_loads(t: KernelType, cfg: MatmulConfig, vec4: bool, wg: int, b_trans: bool = False):
    """(declarations, fetch lines, store lines) moving one K step of both operands from global
    memory through registers `ra<s>`/`rb<s>` into the workgroup tiles. `b_trans` (with vec4):
    rhs is contiguous along K instead of N (a transposed weight, as in `linear`), so its
    vec4 loads run along K and are scattered into the tile, as lhs's are."""
    bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
    c = t.compute
    v = f"vec4<{c}>"
    zero = "0.0" if c == "f32" else "0"
    decl, fetch, store = [], [], []
    if vec4:
        na, nb = bm * bk // 4, bk * bn // 4
        for s in range(-(-na // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {na}u" if (s + 1) * wg > na else "true"
            decl.append(f"let a_row{s} = {e} / {bk // 4}u; let a_k{s} = ({e} % {bk // 4}u) * 4u;")
            decl.append(f"var ra{s} = {v}({zero});")
            at = f"(a_base + (m0 + a_row{s}) * a_rs + kb + a_k{s}) / 4u"
            fetch.append(f"if ({g} && m0 + a_row{s} < M && kb + a_k{s} < K) {{ "
                         f"ra{s} = {v}(lhs[{at}]); }} else {{ ra{s} = {v}({zero}); }}")
            store.append(f"if ({g}) {{ " + " ".join(
                f"As[((a_k{s} + {j}u) * {bm}u + a_row{s}) / 4u][a_row{s} % 4u] = ra{s}[{j}];"
                for j in range(4)) + " }")
        for s in range(-(-nb // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {nb}u" if (s + 1) * wg > nb else "true"
            decl.append(f"var rb{s} = {v}({zero});")
            if b_trans:
                decl.append(f"let b_n{s} = {e} / {bk // 4}u; "
                            f"let b_k{s} = ({e} % {bk // 4}u) * 4u;")
                at = f"(b_base + (n0 + b_n{s}) * b_cs + kb + b_k{s}) / 4u"
                store.append(f"if ({g}) {{ " + " ".join(
                    f"Bs[((b_k{s} + {j}u) * {bn}u + b_n{s}) / 4u][b_n{s} % 4u] = rb{s}[{j}];"
                    for j in range(4)) + " }")
            else:
                decl.append(f"let b_k{s} = {e} / {bn // 4}u; "
                            f"let b_n{s} = ({e} % {bn // 4}u) * 4u;")
                at = f"(b_base + (kb + b_k{s}) * b_ks + n0 + b_n{s}) / 4u"
                store.append(f"if ({g}) {{ Bs[(b_k{s} * {bn}u + b_n{s}) / 4u] = rb{s}; }}")
            fetch.append(f"if ({g} && kb + b_k{s} < K && n0 + b_n{s} < N) {{ "
                         f"rb{s} = {v}(rhs[{at}]); }} else {{ rb{s} = {v}({zero}); }}")
    else:
        na, nb = bm * bk, bk * bn
        for s in range(-(-na // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {na}u" if (s + 1) * wg > na else "true"
            decl.append(f"let a_row{s} = {e} / {bk}u; let a_k{s} = {e} % {bk}u;")
            decl.append(f"var ra{s} = {c}({zero});")
            load = R.load(t, f"lhs[a_base + (m0 + a_row{s}) * a_rs + (kb + a_k{s}) * a_ks]")
            fetch.append(f"if ({g} && m0 + a_row{s} < M && kb + a_k{s} < K) {{ ra{s} = {load}; }} "
                         f"else {{ ra{s} = {c}({zero}); }}")
            store.append(f"if ({g}) {{ As[(a_k{s} * {bm}u + a_row{s}) / 4u][a_row{s} % 4u] = "
                         f"ra{s}; }}")
        for s in range(-(-nb // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {nb}u" if (s + 1) * wg > nb else "true"
            decl.append(f"let b_k{s} = {e} / {bn}u; let b_n{s} = {e} % {bn}u;")
            decl.append(f"var rb{s} = {c}({zero});")
            load = R.load(t, f"rhs[b_base + (kb + b_k{s}) * b_ks + (n0 + b_n{s}) * b_cs]")
            fetch.append(f"if ({g} && kb + b_k{s} < K && n0 + b_n{s} < N) {{ rb{s} = {load}; }} "
                         f"else {{ rb{s} = {c}({zero}); }}")
            store.append(f"if ({g}) {{ Bs[(b_k{s} * {bn}u + b_n{s}) / 4u][b_n{s} % 4u] = rb{s}; }}")
    return decl, fetch, store


def matmul_kernel(t: KernelType, cfg: MatmulConfig, vec4: bool, bias: bool = False,
                  b_trans: bool = False) -> str:
    """A batched matmul `out[b] = lhs[b] @ rhs[b]` (strided operands, broadcast batch dims) with
    the inner product fully unrolled over scalar/vec4 registers: no function-local arrays,
    which spill to slow memory on real GPUs.

    `vec4`: lhs rows and rhs rows are contiguous with K and N multiples of 4 and 4-aligned
    offsets, so global loads (and stores when the storage type is the compute type) use vec4.
    `b_trans` (with vec4): rhs is contiguous along K instead (x @ W^T with W [N, K]).

    `bias`: a contiguous vector of N values is added to every output row as it is stored
    (nn.Linear's bias: no pass of its own); its offset is the info word after the strides.

    info: [M, N, K, a_off, a_rs, a_ks, b_off, b_ks, b_cs, batches, brank,
           bshape[brank], a_bstride[brank], b_bstride[brank], (bias_off)]
    """
    bm, bn, bk, tm, tn = cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn
    c = t.compute
    v = f"vec4<{c}>"
    tx_n, ty_n = bn // tn, bm // tm
    wg = tx_n * ty_n
    zero = "0.0" if c == "f32" else "0"
    vec_out = vec4 and t.storage == t.compute
    in_ty = f"vec4<{t.storage}>" if vec4 else t.storage
    out_ty = v if vec_out else t.storage
    decl, fetch, store = _tile_loads(t, cfg, vec4, wg, b_trans)
    pad = "            "
    L = [R.prelude(t.storage)]
    L.append(f"@group(0) @binding(0) var<storage, read> lhs: array<{in_ty}>;")
    L.append(f"@group(0) @binding(1) var<storage, read> rhs: array<{in_ty}>;")
    L.append(f"@group(0) @binding(2) var<storage, read_write> out: array<{out_ty}>;")
    if bias:
        L.append(f"@group(0) @binding(3) var<storage, read> bias: array<{t.storage}>;")
    L.append(f"@group(0) @binding({4 if bias else 3}) var<storage, read> info: array<u32>;")
    L.append(f"var<workgroup> As: array<{v}, {bk * bm // 4}>;   // As[k][m], m fastest")
    L.append(f"var<workgroup> Bs: array<{v}, {bk * bn // 4}>;   // Bs[k][n], n fastest")
    L.append(f"""
@compute @workgroup_size({wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let M = info[0]; let N = info[1]; let K = info[2];
    let a_rs = info[4]; let a_ks = info[5]; let b_ks = info[7]; let b_cs = info[8];
    let batches = info[9]; let brank = info[10];
    let m0 = wid.y * {bm}u;
    let n0 = wid.x * {bn}u;
    let tx = lid % {tx_n}u;
    let ty = lid / {tx_n}u;""")
    L += ["    " + d for d in decl]
    L.append("""    for (var batch = wid.z; batch < batches; batch = batch + nwg.z) {
        var a_base = info[3];
        var b_base = info[6];
        var rem = batch;
        for (var j = brank; j > 0u; j = j - 1u) {
            let d = j - 1u;
            let size = info[11u + d];
            let coord = rem % size;
            rem = rem / size;
            a_base = a_base + coord * info[11u + brank + d];
            b_base = b_base + coord * info[11u + 2u * brank + d];
        }""")
    regs = [f"c{r}_{q}" for r in range(tm) for q in range(tn // 4)]
    L.append("        " + " ".join(f"var {x} = {v}({zero});" for x in regs))
    if cfg.prefetch:
        L.append("        { let kb = 0u;")
        L += [pad + f for f in fetch]
        L.append("        }")
    L.append(f"        for (var k0 = 0u; k0 < K; k0 = k0 + {bk}u) {{")
    if not cfg.prefetch:
        L.append("            let kb = k0;")
        L += [pad + f for f in fetch]
    L += [pad + st for st in store]
    L.append(pad + "workgroupBarrier();")
    if cfg.prefetch:
        L.append(pad + f"if (k0 + {bk}u < K) {{ let kb = k0 + {bk}u;")
        L += [pad + "    " + f for f in fetch]
        L.append(pad + "}")
    # ---- the unrolled inner product over the tile's k
    for kk in range(bk):
        for r4 in range(tm // 4):
            L.append(f"{pad}let a{kk}_{r4} = As[({kk * bm}u + ty * {tm}u) / 4u + {r4}u];")
        for q in range(tn // 4):
            L.append(f"{pad}let b{kk}_{q} = Bs[({kk * bn}u + tx * {tn}u) / 4u + {q}u];")
        for r in range(tm):
            a = f"a{kk}_{r // 4}.{'xyzw'[r % 4]}"
            for q in range(tn // 4):
                x = f"c{r}_{q}"
                if c == "f32":
                    L.append(f"{pad}{x} = fma({v}({a}), b{kk}_{q}, {x});")
                else:
                    L.append(f"{pad}{x} = {x} + {v}({a}) * b{kk}_{q};")
    L.append(pad + "workgroupBarrier();")
    L.append("        }")
    # ---- store
    L.append("        let o_base = batch * M * N;")
    if bias:
        L.append("        let bias_off = info[11u + 3u * brank];")
        for q in range(tn // 4):  # the bias of this invocation's columns (0 past N)
            col = f"n0 + tx * {tn}u + {4 * q}u"
            parts = ", ".join(
                f"select({c}({zero}), {R.load(t, f'bias[bias_off + min({col} + {j}u, N - 1u)]')}, "
                f"{col} + {j}u < N)" for j in range(4))
            L.append(f"        let bias{q} = {v}({parts});")
    for r in range(tm):
        L.append(f"        let gm{r} = m0 + ty * {tm}u + {r}u;")
        L.append(f"        if (gm{r} < M) {{")
        for q in range(tn // 4):
            col = f"n0 + tx * {tn}u + {4 * q}u"
            val = f"(c{r}_{q} + bias{q})" if bias else f"c{r}_{q}"
            if vec_out:
                L.append(f"            if ({col} < N) {{ "
                         f"out[(o_base + gm{r} * N + {col}) / 4u] = {val}; }}")
            else:
                for j in range(4):
                    L.append(f"            if ({col} + {j}u < N) {{ "
                             f"out[o_base + gm{r} * N + {col} + {j}u] = "
                             f"{R.store(t, f'{val}[{j}]')}; }}")
        L.append("        }")
    L.append("    }\n}\n")
    return "\n".join(L)


@functools.lru_cache(maxsize=256)
def matmul_source(dtype: DType, cfg: MatmulConfig, vec4: bool, bias: bool = False,
                  b_trans: bool = False) -> TextKernelSource:
    """`matmul_kernel` for `dtype` as a kernel source (memoized)."""
    return TextKernelSource("matmul", "wgsl", matmul_kernel(R.type_of(dtype), cfg, vec4, bias,
                                                            b_trans),
                            cube_dim=CubeDim(cfg.threads))


__all__ = ["MatmulConfig", "matmul_kernel", "matmul_source"]
