"""Generated WGSL: the unrolled, register-blocked batched matmul and the one-kernel attention
of the wgpu backend.

They stay WGSL-specific (workgroup tiles, vec4 loads, `fma`): the CUDA backend multiplies with
cuBLAS and has its attention in `kernels/attention.cu`. The elementwise and fused kernels are
rendered by the Cube renderer base (`lazyt/backends/cube/renderer.py`) through `WgslRenderer`.
Like those, these kernels are shape-generic: sizes, strides and offsets reach them through the
`info` buffer. Their inner loops are unrolled here, in Python, into named scalar and vec4
registers: function-local arrays indexed inside loops spill to slow memory on real GPUs.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...dtype import DType
from ...errors import InvalidArgumentError
from ..cube.backend import attention_layout
from ..cube.renderer import KernelType
from ..cube.source import CubeDim, TextKernelSource
from .renderer import WGSL as R
from ..cube.op_table import BINARY, UNARY  # noqa: F401  (the op tables' former home)


# ------------------------------------------------------------------------------ matmul
@dataclass(frozen=True)
class MatmulConfig:
    """A register-blocked tile: the workgroup computes BM x BN outputs, each invocation TM x TN
    of them (TM, TN multiples of 4: vec4 registers), stepping K by BK. `prefetch` loads the
    next K step into registers while the current one is multiplied. `pad` (a multiple of 4)
    floats lengthen each k row of the workgroup tiles: the four invocations that fill one
    row of a tile from a vec4 along K then store into two banks instead of one (BERT's
    linears on an H200: 6% faster with 4)."""

    bm: int = 64
    bn: int = 64
    bk: int = 8
    tm: int = 4
    tn: int = 4
    prefetch: bool = True
    pad: int = 0

    def __post_init__(self):
        if self.pad < 0 or self.pad % 4:
            raise InvalidArgumentError(f"MatmulConfig: pad={self.pad}; expected a multiple of "
                                       "4 floats (the tiles are read as vec4)")

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


def _tile_loads(t: KernelType, cfg: MatmulConfig, vec4: bool, wg: int, b_trans: bool = False):
    """(declarations, fetch lines, store lines) moving one K step of both operands from global
    memory through registers `ra<s>`/`rb<s>` into the workgroup tiles. `b_trans` (with vec4):
    rhs is contiguous along K instead of N (a transposed weight, as in `linear`), so its
    vec4 loads run along K and are scattered into the tile, as lhs's are."""
    bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
    sa, sb = bm + cfg.pad, bn + cfg.pad   # the tiles' row strides (floats)
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
                f"As[((a_k{s} + {j}u) * {sa}u + a_row{s}) / 4u][a_row{s} % 4u] = ra{s}[{j}];"
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
                    f"Bs[((b_k{s} + {j}u) * {sb}u + b_n{s}) / 4u][b_n{s} % 4u] = rb{s}[{j}];"
                    for j in range(4)) + " }")
            else:
                decl.append(f"let b_k{s} = {e} / {bn // 4}u; "
                            f"let b_n{s} = ({e} % {bn // 4}u) * 4u;")
                at = f"(b_base + (kb + b_k{s}) * b_ks + n0 + b_n{s}) / 4u"
                store.append(f"if ({g}) {{ Bs[(b_k{s} * {sb}u + b_n{s}) / 4u] = rb{s}; }}")
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
            store.append(f"if ({g}) {{ As[(a_k{s} * {sa}u + a_row{s}) / 4u][a_row{s} % 4u] = "
                         f"ra{s}; }}")
        for s in range(-(-nb // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {nb}u" if (s + 1) * wg > nb else "true"
            decl.append(f"let b_k{s} = {e} / {bn}u; let b_n{s} = {e} % {bn}u;")
            decl.append(f"var rb{s} = {c}({zero});")
            load = R.load(t, f"rhs[b_base + (kb + b_k{s}) * b_ks + (n0 + b_n{s}) * b_cs]")
            fetch.append(f"if ({g} && kb + b_k{s} < K && n0 + b_n{s} < N) {{ rb{s} = {load}; }} "
                         f"else {{ rb{s} = {c}({zero}); }}")
            store.append(f"if ({g}) {{ Bs[(b_k{s} * {sb}u + b_n{s}) / 4u][b_n{s} % 4u] = rb{s}; }}")
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
    sa, sb = bm + cfg.pad, bn + cfg.pad   # the tiles' row strides (floats)
    L.append(f"var<workgroup> As: array<{v}, {bk * sa // 4}>;   // As[k][m], m fastest")
    L.append(f"var<workgroup> Bs: array<{v}, {bk * sb // 4}>;   // Bs[k][n], n fastest")
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
            L.append(f"{pad}let a{kk}_{r4} = As[({kk * sa}u + ty * {tm}u) / 4u + {r4}u];")
        for q in range(tn // 4):
            L.append(f"{pad}let b{kk}_{q} = Bs[({kk * sb}u + tx * {tn}u) / 4u + {q}u];")
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


# ------------------------------------------------------------------------------ attention
#: Lanes that share a group of query rows in `attention_kernel`.
ATTENTION_LANES = 8


def attention_kernel(d: int, dv: int, threads: int, rows: int, bk: int, vec: bool,
                     skip: bool = True) -> str:
    """`out = softmax(q k^T * scale [+ mask]) v` for float32 heads in one kernel, the scores
    never written (a running-maximum softmax over tiles of `bk` keys): the same blocking as
    the CUDA kernel (`lazyt/backends/cuda/kernels/attention.cu`, whose comment gives the
    info words). A workgroup of `threads` takes `threads / 8 * rows` query rows; group n of
    8 lanes owns rows n, n + NG, ... and lane c scores them against keys c, c + 8, ... of a
    tile held in workgroup memory. Without shuffles, the lanes of a group meet in workgroup
    memory: each lane's row maxima (and, at the end, its row sums) go to `red`.

    `vec`: q, k and v rows start on 4-element boundaries with dense columns (d and dv
    multiples of 4): they are bound as vec4 arrays and loaded a vec4 at a time. `skip`: a
    tile of keys that a mask shared by every query row leaves out entirely is skipped once a
    tile with a key left in has run (as the CUDA kernel; the same results)."""
    G = ATTENTION_LANES
    T, RQ, BK = threads, rows, bk
    NG = T // G
    KT = BK // G
    BQ, DP, DVP, KS, PS = attention_layout(d, dv, T, RQ, BK)
    DVL = DVP // G
    if T % 32 or BK % G or BK % 4 or RQ < 1:
        raise ValueError(f"attention_kernel: threads {T}, rows {RQ}, keys {BK}")
    src_ty = "vec4<f32>" if vec else "f32"
    L = [f"""// attention_fused: d={d} dv={dv} threads={T} rows={RQ} keys={BK} vec={vec}
@group(0) @binding(0) var<storage, read> q: array<{src_ty}>;
@group(0) @binding(1) var<storage, read> k: array<{src_ty}>;
@group(0) @binding(2) var<storage, read> v: array<{src_ty}>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> info: array<u32>;
var<workgroup> qs: array<vec4<f32>, {BQ * KS // 4}>;
var<workgroup> ks: array<vec4<f32>, {BK * KS // 4}>;
var<workgroup> vs: array<vec4<f32>, {BK * DVP // 4}>;
var<workgroup> ps: array<vec4<f32>, {BQ * PS // 4}>;
var<workgroup> ms: array<f32, {BK}>;
var<workgroup> red: array<f32, {RQ * T}>;
var<workgroup> live_flag: u32;
"""]
    # staging: rows [r0, r0 + R) of a strided matrix (C columns, a multiple of 4) into rows of
    # W floats of a workgroup array, zeros past n_rows rows and n_cols columns
    for name, dst, C, W, NR in (("q", "qs", DP, KS, BQ), ("k", "ks", DP, KS, BK),
                                ("v", "vs", DVP, DVP, BK)):
        L.append(f"fn stage_{name}(lid: u32, off: u32, rs: u32, cs: u32, r0: u32, n_rows: u32,"
                 f" n_cols: u32) {{")
        if vec:
            L.append(f"""    for (var e = lid; e < {NR * C // 4}u; e = e + {T}u) {{
        let r = e / {C // 4}u;
        let i = (e % {C // 4}u) * 4u;
        var x = vec4<f32>(0.0);
        if (r0 + r < n_rows && i < n_cols) {{
            x = {name}[(off + (r0 + r) * rs + i) / 4u];
        }}
        {dst}[(r * {W}u + i) / 4u] = x;
    }}""")
        else:
            L.append(f"""    for (var e = lid; e < {NR * C}u; e = e + {T}u) {{
        let r = e / {C}u;
        let i = e % {C}u;
        var x = 0.0;
        if (r0 + r < n_rows && i < n_cols) {{
            x = {name}[off + (r0 + r) * rs + i * cs];
        }}
        {dst}[(r * {W}u + i) / 4u][i % 4u] = x;
    }}""")
        L.append("}\n")
    L.append(f"""@compute @workgroup_size({T})
fn attention_fused(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {{
    let bid = wid.x + (wid.y + wid.z * nwg.y) * nwg.x;
    if (bid >= info[20]) {{
        return;
    }}
    let n = lid / {G}u;
    let c = lid % {G}u;
    let tiles = info[5];
    var g = bid / tiles;
    let first = (bid % tiles) * {BQ}u;
    let lq = info[0];
    let lk = info[1];
    let has_mask = info[2] != 0u;
    let mask_shared = has_mask && info[16] == 0u;
    let scale = bitcast<f32>(info[3]);
    var qo = info[6];
    var ko = info[9];
    var vo = info[12];
    var mo = info[15];
    var oo = info[18];
    for (var dd = info[4]; dd > 0u; dd = dd - 1u) {{
        let w = 21u + 6u * (dd - 1u);
        let i = g % info[w];
        g = g / info[w];
        qo = qo + i * info[w + 1u];
        ko = ko + i * info[w + 2u];
        vo = vo + i * info[w + 3u];
        mo = mo + i * info[w + 4u];
        oo = oo + i * info[w + 5u];
    }}
    let neg_inf = bitcast<f32>(0xff800000u);
    stage_q(lid, qo, info[7], info[8], first, lq, {d}u);""")
    reg = lambda *parts: "_".join(str(x) for x in parts)  # noqa: E731
    for r in range(RQ):
        L.append(f"    let row{r} = first + n + {NG * r}u;")
        L.append(f"    let mrow{r} = mo + row{r} * info[16];")
        L.append(f"    var m{r} = neg_inf;")
        L.append(f"    var l{r} = 0.0;")
        for x in range(DVL // 4):
            L.append(f"    var o{reg(r, x)} = vec4<f32>(0.0);")
    skip_code = """
            let any_live = workgroupUniformLoad(&live_flag) != 0u;
            if (!any_live && seen) {
                continue;
            }
            seen = seen || any_live;""" if skip else ""
    L.append(f"""    var seen = false;
    for (var j0 = 0u; j0 < lk; j0 = j0 + {BK}u) {{
        workgroupBarrier();
        if (mask_shared) {{
            for (var e = lid; e < {BK}u; e = e + {T}u) {{
                var x = 0.0;
                if (j0 + e < lk) {{
                    x = mask[mo + (j0 + e) * info[17]];
                }}
                ms[e] = x;
                if (!(x < -1e30)) {{
                    live_flag = 1u;
                }}
            }}{skip_code}
        }}
        stage_k(lid, ko, info[10], info[11], j0, lk, {d}u);
        stage_v(lid, vo, info[13], info[14], j0, lk, {dv}u);
        workgroupBarrier();
        if (lid == 0u) {{
            live_flag = 0u;
        }}""")
    P = "        "
    for r in range(RQ):
        L.append(P + " ".join(f"var s{reg(r, t)} = 0.0;" for t in range(KT)))
    for i4 in range(DP // 4):
        for r in range(RQ):
            L.append(f"{P}let q{r} = qs[(n + {NG * r}u) * {KS // 4}u + {i4}u];" if i4 == 0 else
                     f"{P}let q{reg(r, i4)} = qs[(n + {NG * r}u) * {KS // 4}u + {i4}u];")
        for t in range(KT):
            L.append(f"{P}let k{reg(t, i4)} = ks[(c + {G * t}u) * {KS // 4}u + {i4}u];")
            for r in range(RQ):
                qv = f"q{r}" if i4 == 0 else f"q{reg(r, i4)}"
                sv = f"s{reg(r, t)}"
                for comp in "xyzw":
                    L.append(f"{P}{sv} = fma({qv}.{comp}, k{reg(t, i4)}.{comp}, {sv});")
    # scale, mask, keys past the end; each lane's row maxima go to `red`
    for r in range(RQ):
        L.append(f"{P}var top{r} = neg_inf;")
        for t in range(KT):
            sv = f"s{reg(r, t)}"
            L.append(f"""{P}{{
{P}    let j = j0 + c + {G * t}u;
{P}    var sc = {sv} * scale;
{P}    if (mask_shared) {{
{P}        sc = sc + ms[c + {G * t}u];
{P}    }} else if (has_mask && row{r} < lq && j < lk) {{
{P}        sc = sc + mask[mrow{r} + j * info[17]];
{P}    }}
{P}    {sv} = select(neg_inf, sc, j < lk);
{P}    top{r} = max(top{r}, {sv});
{P}}}""")
        L.append(f"{P}red[{r * T}u + lid] = top{r};")
    L.append(P + "workgroupBarrier();")
    for r in range(RQ):
        base = f"{r * T}u + n * {G}u"
        L.append(f"{P}var mx{r} = red[{base}];")
        for j in range(1, G):
            L.append(f"{P}mx{r} = max(mx{r}, red[{base} + {j}u]);")
        L.append(f"{P}let mn{r} = max(m{r}, mx{r});")
        L.append(f"{P}let alpha{r} = select(exp(m{r} - mn{r}), 1.0, mn{r} == neg_inf);")
        L.append(f"{P}var sum{r} = 0.0;")
        for t in range(KT):
            L.append(f"{P}{{ let p = select(exp(s{reg(r, t)} - mn{r}), 0.0, mn{r} == neg_inf); "
                     f"sum{r} = sum{r} + p; "
                     f"ps[((n + {NG * r}u) * {PS}u + c + {G * t}u) / 4u][(c + {G * t}u) % 4u] = p; }}")
        L.append(f"{P}l{r} = l{r} * alpha{r} + sum{r};")
        for x in range(DVL // 4):
            L.append(f"{P}o{reg(r, x)} = o{reg(r, x)} * alpha{r};")
        L.append(f"{P}m{r} = mn{r};")
    L.append(P + "workgroupBarrier();")
    L.append(f"{P}for (var j = 0u; j < {BK}u; j = j + 4u) {{")
    Q = P + "    "
    for r in range(RQ):
        L.append(f"{Q}let p{r} = ps[((n + {NG * r}u) * {PS}u + j) / 4u];")
    for tt in range(4):
        for x in range(DVL // 4):
            L.append(f"{Q}let v{reg(tt, x)} = vs[((j + {tt}u) * {DVP}u + c * {DVL}u) / 4u + {x}u];")
            for r in range(RQ):
                o = f"o{reg(r, x)}"
                L.append(f"{Q}{o} = fma(vec4<f32>(p{r}.{'xyzw'[tt]}), v{reg(tt, x)}, {o});")
    L.append(P + "}")
    L.append("    }")
    # each lane's row sums meet in `red` too
    L.append("    workgroupBarrier();")
    for r in range(RQ):
        L.append(f"    red[{r * T}u + lid] = l{r};")
    L.append("    workgroupBarrier();")
    for r in range(RQ):
        base = f"{r * T}u + n * {G}u"
        terms = " + ".join(f"red[{base} + {j}u]" for j in range(G))
        L.append(f"    let lt{r} = {terms};")
        L.append(f"    let inv{r} = select(0.0, 1.0 / lt{r}, lt{r} > 0.0);")
        L.append(f"    if (row{r} < lq) {{")
        L.append(f"        let dst = oo + row{r} * info[19] + c * {DVL}u;")
        for x in range(DVL // 4):
            for comp in range(4):
                col = 4 * x + comp
                L.append(f"        if (c * {DVL}u + {col}u < {dv}u) {{ out[dst + {col}u] = "
                         f"o{reg(r, x)}.{'xyzw'[comp]} * inv{r}; }}")
        L.append("    }")
    L.append("}\n")
    return "\n".join(L)


@functools.lru_cache(maxsize=64)
def attention_source(d: int, dv: int, threads: int, rows: int, bk: int,
                     vec: bool, skip: bool = True) -> TextKernelSource:
    """`attention_kernel` as a kernel source (memoized); entry `attention_fused`."""
    return TextKernelSource("attention", "wgsl",
                            attention_kernel(d, dv, threads, rows, bk, vec, skip),
                            entry="attention_fused", cube_dim=CubeDim(threads))


__all__ = ["ATTENTION_LANES", "MatmulConfig", "attention_kernel", "attention_source",
           "matmul_kernel", "matmul_source"]
