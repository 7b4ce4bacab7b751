"""Generated WGSL: the op tables (one WGSL expression per UnaryOp/BinaryOp/cast/reduction), the
elementwise kernels built from them, the unrolled register-blocked matmul, and fused blocks.

Every kernel here is shape-generic: shapes, strides, offsets and scalars reach it through the
`info` buffer, so one pipeline serves every shape of an op/dtype. Values are computed in a
"compute type" per dtype (f16 is computed in f32, int64 is stored and computed as i32, bool as
u32 holding 0/1) and converted once on load and store.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...dtype import DType
from ...errors import DTypeError
from ...ops import COMPARISONS, BinaryOp, ReduceOp, UnaryOp

#: Invocations per workgroup of the 1-D kernels (elementwise, copies, gathers).
WG = 256


@dataclass(frozen=True)
class WgslType:
    """How one lazyt dtype lives in WGSL: `storage` in buffers, `compute` in registers."""

    storage: str     # f32 | f16 | i32 | u32
    compute: str     # f32 | i32 | u32
    kind: str        # float | int | bool

    def load(self, expr: str) -> str:
        return expr if self.storage == self.compute else f"{self.compute}({expr})"

    def store(self, expr: str) -> str:
        return expr if self.storage == self.compute else f"{self.storage}({expr})"


TYPES: dict[str, WgslType] = {
    "float32": WgslType("f32", "f32", "float"),
    "float16": WgslType("f16", "f32", "float"),
    "int32": WgslType("i32", "i32", "int"),
    "int64": WgslType("i32", "i32", "int"),
    "bool": WgslType("u32", "u32", "bool"),
}


def wgsl_type(d: DType) -> WgslType:
    t = TYPES.get(d.name)
    if t is None:
        raise DTypeError(f"{d.name} has no WGSL type; wgpu kernels support "
                         + ", ".join(TYPES))
    return t


def enable_f16(*types: WgslType) -> str:
    return "enable f16;\n" if any(t.storage == "f16" for t in types) else ""


# ------------------------------------------------------------------------------ helpers
_NAN = "bitcast<f32>(0x7fc00000u)"
_INF = "bitcast<f32>(0x7f800000u)"

#: WGSL helper functions the op expressions call; included in a kernel only when used.
HELPERS: dict[str, str] = {
    # WGSL lets implementations assume NaN is absent, and float `!=` is compiled as an ordered
    # comparison on some (NaN != NaN is false on lavapipe): NaN is tested on the bits, and
    # "not equal" is written !(a == b).
    "lz_isnan": """
fn lz_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }""",
    "lz_erf": """
fn lz_erf(x: f32) -> f32 {
    // |x| < 1: x * P(x^2); 1 <= |x| < 4: 1 - exp(Q(|x|) - x^2) (fits of erf, error < 2e-7)
    let a = abs(x);
    if (a < 1.0) {
        let s = x * x;
        var p = 7.933303277241066e-05;
        p = p * s - 0.0008034794009290636;
        p = p * s + 0.005191212985664606;
        p = p * s - 0.02685539610683918;
        p = p * s + 0.11283625662326813;
        p = p * s - 0.3761262893676758;
        p = p * s + 1.128379225730896;
        return x * p;
    }
    if (a < 4.0) {
        var q = 1.6140370462380815e-06;
        q = q * a - 4.5590164518216625e-05;
        q = q * a + 0.0005927658639848232;
        q = q * a - 0.004740206524729729;
        q = q * a + 0.026364674791693687;
        q = q * a - 0.10997817665338516;
        q = q * a + 0.3680628538131714;
        q = q * a - 1.1301666498184204;
        q = q * a + 0.0003032050735782832;
        return sign(x) * (1.0 - exp(q - a * a));
    }
    return select(sign(x), x, lz_isnan(x));
}""",
    "lz_tanh": """
fn lz_tanh(x: f32) -> f32 {
    // tanh through exp: exact at both ends (the builtin overflows to NaN on some drivers) and
    // a series near 0, where 1 - exp(-2|x|) cancels.
    let a = abs(x);
    if (a < 0.0625) {
        let s = x * x;
        return x * (1.0 + s * (-0.3333333333 + s * (0.1333333333 + s * -0.0539682540)));
    }
    let e = exp(-2.0 * min(a, 20.0));
    return select(sign(x) * (1.0 - e) / (1.0 + e), x, lz_isnan(x));
}""",
    "lz_pow": f"""
fn lz_pow(a: f32, b: f32) -> f32 {{
    // numpy semantics: integral exponents of negative bases, 0^b, NaN propagation
    if (b == 0.0 || a == 1.0) {{ return 1.0; }}
    if (lz_isnan(a) || lz_isnan(b)) {{ return {_NAN}; }}
    if (a == 0.0) {{ return select(0.0, {_INF}, b < 0.0); }}
    let m = pow(abs(a), b);
    if (a > 0.0) {{ return m; }}
    if (!(floor(b) == b)) {{ return {_NAN}; }}
    return select(m, -m, !(floor(b * 0.5) == b * 0.5));
}}""",
    "lz_ipow": """
fn lz_ipow(a: i32, b: i32) -> i32 {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return select(-1, 1, (b & 1) == 0); }
        return 0;
    }
    var r = 1;
    var base = a;
    var e = u32(b);
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) != 0u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}""",
    "lz_fdivmod": f"""
fn lz_fdivmod(a: f32, b: f32) -> vec2<f32> {{
    // numpy's npy_divmod: (floor division, modulo with the divisor's sign)
    if (b == 0.0) {{ return vec2<f32>(a / b, {_NAN}); }}
    var m = a % b;
    var d = (a - m) / b;
    if (!(m == 0.0)) {{
        if ((b < 0.0) != (m < 0.0)) {{ m = m + b; d = d - 1.0; }}
    }} else {{
        m = select(0.0, -0.0, b < 0.0);
    }}
    var f = 0.0;
    if (!(d == 0.0)) {{
        f = floor(d);
        if (d - f > 0.5) {{ f = f + 1.0; }}
    }} else {{
        f = select(0.0, -0.0, (a / b) < 0.0);
    }}
    return vec2<f32>(f, m);
}}""",
    "lz_ifloordiv": """
fn lz_ifloordiv(a: i32, b: i32) -> i32 {
    // floor division from the truncated quotient; the remainder is formed explicitly (`%` on
    // negative i32 differs between drivers)
    if (b == 0) { return 0; }
    let q = a / b;
    let r = a - q * b;
    return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}""",
    "lz_imod": """
fn lz_imod(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let r = a - (a / b) * b;
    return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}""",
    "lz_fmax": """
fn lz_fmax(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, lz_isnan(b)), a, lz_isnan(a));
}""",
    "lz_fmin": """
fn lz_fmin(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, lz_isnan(b)), a, lz_isnan(a));
}""",
}
# f16 rounding of an f32 register with integer and exact power-of-two arithmetic: a compiler
# may drop an f32(f16(x)) round trip, and even unpack2x16float(pack2x16float(x)) (NVIDIA's
# Vulkan driver drops both), leaving a fused block's float16 intermediates unrounded. Half to
# even, as numpy; f16 subnormals kept; out of f16's range +-inf; NaN stays NaN.
HELPERS["lz_round_f16"] = """fn lz_round_f16(x: f32) -> f32 {
    let a = abs(x);
    if (a < 6.103515625e-05) {
        return round(x * 16777216.0) * 5.9604644775390625e-08;
    }
    if (a < 65520.0) {
        let b = bitcast<u32>(x);
        return bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);
    }
    return select(sign(x) * bitcast<f32>(0x7f800000u), x, lz_isnan(x));
}"""
_HELPER_NAME = re.compile(r"\blz_\w+(?=\s*\()")


def helpers_for(*code: str) -> str:
    """The helper definitions the given code calls (and the helpers they call)."""
    need: list[str] = []
    todo = [c for c in code]
    while todo:
        for name in _HELPER_NAME.findall(todo.pop()):
            if name in HELPERS and name not in need:
                need.append(name)
                todo.append(HELPERS[name])
    return "".join(HELPERS[n] + "\n" for n in need)


# ------------------------------------------------------------------------------ op tables
# {x}, {a}, {b} are compute-typed values; each entry gives the expression per operand kind.
_B = "select(0u, 1u, {})"

UNARY: dict[UnaryOp, dict[str, str]] = {
    UnaryOp.NEG: {"float": "-({x})", "int": "-({x})"},
    UnaryOp.ABS: {"float": "abs({x})", "int": "abs({x})", "bool": "{x}"},
    UnaryOp.EXP: {"float": "exp({x})"},
    UnaryOp.LOG: {"float": "log({x})"},
    UnaryOp.SQRT: {"float": "sqrt({x})"},
    UnaryOp.RSQRT: {"float": "(1.0 / sqrt({x}))"},
    UnaryOp.TANH: {"float": "lz_tanh({x})"},
    UnaryOp.SIGMOID: {"float": "(1.0 / (1.0 + exp(-({x}))))"},
    UnaryOp.SIN: {"float": "sin({x})"},
    UnaryOp.COS: {"float": "cos({x})"},
    UnaryOp.ERF: {"float": "lz_erf({x})"},
    UnaryOp.RELU: {"float": "select(max({x}, 0.0), {x}, lz_isnan({x}))", "int": "max({x}, 0)",
                   "bool": "{x}"},
    UnaryOp.SIGN: {"float": "select(sign({x}), {x}, lz_isnan({x}))",
                   "int": "select(select(0, 1, {x} > 0), -1, {x} < 0)"},
    UnaryOp.FLOOR: {"float": "floor({x})", "int": "{x}"},
    UnaryOp.CEIL: {"float": "ceil({x})", "int": "{x}"},
    UnaryOp.RECIPROCAL: {"float": "(1.0 / {x})"},
    UnaryOp.NOT: {"bool": _B.format("{x} == 0u")},
}

BINARY: dict[BinaryOp, dict[str, str]] = {
    BinaryOp.ADD: {"float": "({a} + {b})", "int": "({a} + {b})", "bool": "({a} | {b})"},
    BinaryOp.SUB: {"float": "({a} - {b})", "int": "({a} - {b})"},
    BinaryOp.MUL: {"float": "({a} * {b})", "int": "({a} * {b})", "bool": "({a} & {b})"},
    BinaryOp.DIV: {"float": "({a} / {b})", "int": "lz_ifloordiv({a}, {b})"},
    BinaryOp.POW: {"float": "lz_pow({a}, {b})", "int": "lz_ipow({a}, {b})"},
    BinaryOp.MAXIMUM: {"float": "lz_fmax({a}, {b})", "int": "max({a}, {b})",
                       "bool": "max({a}, {b})"},
    BinaryOp.MINIMUM: {"float": "lz_fmin({a}, {b})", "int": "min({a}, {b})",
                       "bool": "min({a}, {b})"},
    BinaryOp.FLOOR_DIV: {"float": "lz_fdivmod({a}, {b}).x", "int": "lz_ifloordiv({a}, {b})"},
    BinaryOp.MOD: {"float": "lz_fdivmod({a}, {b}).y", "int": "lz_imod({a}, {b})"},
    BinaryOp.EQ: {k: _B.format("{a} == {b}") for k in ("float", "int", "bool")},
    BinaryOp.NE: {k: _B.format("!({a} == {b})") for k in ("float", "int", "bool")},
    BinaryOp.LT: {k: _B.format("{a} < {b}") for k in ("float", "int", "bool")},
    BinaryOp.LE: {k: _B.format("{a} <= {b}") for k in ("float", "int", "bool")},
    BinaryOp.GT: {k: _B.format("{a} > {b}") for k in ("float", "int", "bool")},
    BinaryOp.GE: {k: _B.format("{a} >= {b}") for k in ("float", "int", "bool")},
    BinaryOp.AND: {"bool": _B.format("({a} != 0u) && ({b} != 0u)")},
    BinaryOp.OR: {"bool": _B.format("({a} != 0u) || ({b} != 0u)")},
}

#: where(cond, a, b): cond is a bool (u32) value.
WHERE = "select({b}, {a}, {c} != 0u)"


def _table_expr(table: dict, op, t: WgslType, what: str) -> str:
    expr = table[op].get(t.kind)
    if expr is None:
        raise DTypeError(f"{op.value}: not supported for {t.kind} tensors on wgpu "
                         f"(kernels exist for: {', '.join(table[op])})")
    return expr


def unary_expr(op: UnaryOp, t: WgslType, x: str) -> str:
    return _table_expr(UNARY, op, t, "unary").format(x=x)


def binary_expr(op: BinaryOp, t: WgslType, a: str, b: str) -> str:
    return _table_expr(BINARY, op, t, "binary").format(a=a, b=b)


def binary_out(op: BinaryOp, t: WgslType) -> WgslType:
    """The WGSL type of a binary op's result (comparisons give bool)."""
    return TYPES["bool"] if op in COMPARISONS else t


def cast_expr(src: WgslType, dst: WgslType, x: str) -> str:
    """Convert a `src` compute value to a `dst` compute value (numpy's astype semantics)."""
    if src.compute == dst.compute:
        return x
    if dst.kind == "bool":
        zero = {"f32": "0.0", "i32": "0", "u32": "0u"}[src.compute]
        return _B.format(f"!({x} == {zero})")
    return f"{dst.compute}({x})"


# ------------------------------------------------------------------------------ reductions
@dataclass(frozen=True)
class ReduceWgsl:
    """One reduction in WGSL: the identity of its accumulator, how two accumulators combine
    (`a`, `b` are `Acc` values: `.v` the value, `.i` the index of arg reductions) and how the
    final accumulator `r` becomes the output value."""

    identity: str
    combine: str
    finish: str


def _lowest(acc: str) -> str:
    return f"-{_INF}" if acc == "f32" else "bitcast<i32>(0x80000000u)"


def _highest(acc: str) -> str:
    return _INF if acc == "f32" else "2147483647"


def reduce_wgsl(op: ReduceOp, acc: str) -> ReduceWgsl:
    """The op table of reductions for an accumulator type (f32 or i32)."""
    zero, one = ("0.0", "1.0") if acc == "f32" else ("0", "1")
    is_f = acc == "f32"
    nan_first = "if (lz_isnan(a.v)) { return a; }\n    if (lz_isnan(b.v)) { return b; }\n    " \
        if is_f else ""
    if op is ReduceOp.SUM or op is ReduceOp.MEAN:
        finish = "r.v" if op is ReduceOp.SUM else f"r.v / {acc}(info[7])"
        return ReduceWgsl(zero, "return Acc(a.v + b.v, 0u);", finish)
    if op is ReduceOp.PROD:
        return ReduceWgsl(one, "return Acc(a.v * b.v, 0u);", "r.v")
    if op is ReduceOp.MAX:
        return ReduceWgsl(_lowest(acc), nan_first + "return Acc(max(a.v, b.v), 0u);", "r.v")
    if op is ReduceOp.MIN:
        return ReduceWgsl(_highest(acc), nan_first + "return Acc(min(a.v, b.v), 0u);", "r.v")
    if op is ReduceOp.ARGMAX or op is ReduceOp.ARGMIN:
        # the first index of the extreme value; NaN counts as the extreme (numpy)
        better = ">" if op is ReduceOp.ARGMAX else "<"
        start = _lowest(acc) if op is ReduceOp.ARGMAX else _highest(acc)
        body = ("let an = lz_isnan(a.v);\n    let bn = lz_isnan(b.v);\n"
                "    if (an || bn) {\n        if (bn && (!an || b.i < a.i)) { return b; }\n"
                "        return a;\n    }\n    " if is_f else "")
        body += (f"if (b.v {better} a.v || (b.v == a.v && b.i < a.i)) {{ return b; }}\n"
                 "    return a;")
        return ReduceWgsl(start, body, "i32(r.i)")
    raise DTypeError(f"reduce: no WGSL kernel for {op}")


# ------------------------------------------------------------------------------ elementwise
def elementwise_kernel(inputs: list[WgslType], out: WgslType, expr: str) -> str:
    """A kernel mapping `expr` (over compute values v0, v1, ...) across a contiguous output.

    info: [n, rank, strided, (offset_k, linear_k) per input, shape[rank], strides_k[rank]...]
    Input k is read at offset_k + linear_k * i (+ sum of coord * stride when `strided`): the
    host gives contiguous inputs linear 1 and zero strides, broadcast scalars zeros everywhere.
    """
    n = len(inputs)
    lines = [enable_f16(out, *inputs)]
    for k, t in enumerate(inputs):
        lines.append(f"@group(0) @binding({k}) var<storage, read> in{k}: array<{t.storage}>;")
    lines.append(f"@group(0) @binding({n}) var<storage, read_write> out: array<{out.storage}>;")
    lines.append(f"@group(0) @binding({n + 1}) var<storage, read> info: array<u32>;")
    lines.append(helpers_for(expr))
    idx_init = "\n".join(f"    var i{k} = info[{3 + 2 * k}u] + info[{4 + 2 * k}u] * i;"
                         for k in range(n))
    idx_step = "\n".join(f"            i{k} = i{k} + c * info[base + {k + 1}u * rank + d];"
                         for k in range(n))
    loads = "\n".join(f"    let v{k} = {t.load(f'in{k}[i{k}]')};" for k, t in enumerate(inputs))
    lines.append(f"""
@compute @workgroup_size({WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let i = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {WG}u + lid;
    if (i >= info[0]) {{ return; }}
{idx_init}
    if (info[2] != 0u) {{
        let rank = info[1];
        let base = {3 + 2 * n}u;
        var rem = i;
        for (var j = rank; j > 0u; j = j - 1u) {{
            let d = j - 1u;
            let size = info[base + d];
            let c = rem % size;
            rem = rem / size;
{idx_step}
        }}
    }}
{loads}
    out[i] = {out.store(expr)};
}}
""")
    return "\n".join(lines)


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


def _tile_loads(t: WgslType, cfg: MatmulConfig, vec4: bool, wg: int, b_trans: bool = False):
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
            load = t.load(f"lhs[a_base + (m0 + a_row{s}) * a_rs + (kb + a_k{s}) * a_ks]")
            fetch.append(f"if ({g} && m0 + a_row{s} < M && kb + a_k{s} < K) {{ ra{s} = {load}; }} "
                         f"else {{ ra{s} = {c}({zero}); }}")
            store.append(f"if ({g}) {{ As[(a_k{s} * {bm}u + a_row{s}) / 4u][a_row{s} % 4u] = "
                         f"ra{s}; }}")
        for s in range(-(-nb // wg)):
            e = f"(lid + {s * wg}u)"
            g = f"{e} < {nb}u" if (s + 1) * wg > nb else "true"
            decl.append(f"let b_k{s} = {e} / {bn}u; let b_n{s} = {e} % {bn}u;")
            decl.append(f"var rb{s} = {c}({zero});")
            load = t.load(f"rhs[b_base + (kb + b_k{s}) * b_ks + (n0 + b_n{s}) * b_cs]")
            fetch.append(f"if ({g} && kb + b_k{s} < K && n0 + b_n{s} < N) {{ rb{s} = {load}; }} "
                         f"else {{ rb{s} = {c}({zero}); }}")
            store.append(f"if ({g}) {{ Bs[(b_k{s} * {bn}u + b_n{s}) / 4u][b_n{s} % 4u] = rb{s}; }}")
    return decl, fetch, store


def matmul_kernel(t: WgslType, cfg: MatmulConfig, vec4: bool, bias: bool = False,
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
    L = [enable_f16(t)]
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
                f"select({c}({zero}), {t.load(f'bias[bias_off + min({col} + {j}u, N - 1u)]')}, "
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
                             f"{t.store(f'{val}[{j}]')}; }}")
        L.append("        }")
    L.append("    }\n}\n")
    return "\n".join(L)


# ------------------------------------------------------------------------------ fused blocks
#: The vectorized fused kernel: vec4 values per invocation and invocations per workgroup.
FUSED_VEC_PER_THREAD = 2
FUSED_VEC_WG = 128


def operand_dtype(block, ref) -> DType:
    """The dtype of one operand of a `FusedBlock` instruction."""
    if ref.kind == "in":
        return block.inputs[ref.index][1]
    if ref.kind == "sc":
        return block.scalars[ref.index]
    return block.instrs[ref.index].dtype


def _instr_expr(block, ins, name) -> str:
    ops = [name(r) for r in ins.operands]
    t = wgsl_type(operand_dtype(block, ins.operands[0]))
    if ins.kind == "unary":
        return unary_expr(ins.op, t, ops[0])
    if ins.kind == "binary":
        return binary_expr(ins.op, t, ops[0], ops[1])
    if ins.kind == "where":
        return WHERE.format(c=ops[0], a=ops[1], b=ops[2])
    if ins.kind == "cast":
        return cast_expr(t, wgsl_type(ins.dtype), ops[0])
    if ins.kind == "full":
        return ops[0]
    raise DTypeError(f"fused block: no WGSL for instruction kind {ins.kind!r}")


def _program(block, lane: str = "") -> list[str]:
    """`let v<i>` lines computing every instruction of `block` (lane suffix for vec4 lanes)."""
    def name(r):
        return {"in": f"x{r.index}{lane}", "sc": f"s{r.index}", "v": f"v{r.index}{lane}"}[r.kind]

    lines = []
    for i, ins in enumerate(block.instrs):
        t = wgsl_type(ins.dtype)
        expr = _instr_expr(block, ins, name)
        if t.storage != t.compute:   # f16: round every value as the op by op kernels do
            expr = f"lz_round_f16({expr})"
        lines.append(f"let v{i}{lane}: {t.compute} = {expr};")
    return lines


def _scalar_lines(block, base: int) -> list[str]:
    lines = []
    for j, d in enumerate(block.scalars):
        c = wgsl_type(d).compute
        word = f"info[{base + j}u]"
        lines.append(f"    let s{j} = {word if c == 'u32' else f'bitcast<{c}>({word})'};")
    return lines


def fused_kernel(block, vec4: bool = False, splat: tuple = ()) -> str:
    """One kernel computing every output of a fused elementwise `block`.

    General form (any strides, broadcasting): one element per invocation, input k read at
    off_k + lin_k * i (+ coord . strides_k when `strided`), as in `elementwise_kernel`.
    info: [n, rank, strided, (off_k, lin_k) per input, scalar bits..., shape[rank],
           strides_k[rank] per input]

    `vec4` form (every input contiguous or a single broadcast element, n a multiple of 4):
    FUSED_VEC_PER_THREAD vec4 per invocation, each lane computed with the scalar program.
    `splat[k]` marks input k as a single element. info: [n4, off_k per input, scalar bits...]
    (offsets in elements; contiguous offsets are multiples of 4).
    """
    in_t = [wgsl_type(d) for _, d in block.inputs]
    out_t = [wgsl_type(block.instrs[v].dtype) for v in block.outputs]
    n_in, n_out = len(in_t), len(out_t)
    used = {r.index for ins in block.instrs for r in ins.operands if r.kind == "in"}
    program = _program(block)
    # an intermediate value may be f16 too (a cast inside the block)
    L = [enable_f16(*in_t, *out_t, *(wgsl_type(ins.dtype) for ins in block.instrs))]
    for k, t in enumerate(in_t):
        elem = f"vec4<{t.storage}>" if vec4 and not splat[k] else t.storage
        L.append(f"@group(0) @binding({k}) var<storage, read> in{k}: array<{elem}>;")
    for k, t in enumerate(out_t):
        elem = f"vec4<{t.storage}>" if vec4 else t.storage
        L.append(f"@group(0) @binding({n_in + k}) var<storage, read_write> out{k}: array<{elem}>;")
    L.append(f"@group(0) @binding({n_in + n_out}) var<storage, read> info: array<u32>;")
    L.append(helpers_for(*program))
    if not vec4:
        L.append(f"""
@compute @workgroup_size({WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let i = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {WG}u + lid;
    if (i >= info[0]) {{ return; }}""")
        L += [f"    var i{k} = info[{3 + 2 * k}u] + info[{4 + 2 * k}u] * i;" for k in used]
        L.append(f"""    if (info[2] != 0u) {{
        let rank = info[1];
        let base = {3 + 2 * n_in + len(block.scalars)}u;
        var rem = i;
        for (var j = rank; j > 0u; j = j - 1u) {{
            let d = j - 1u;
            let size = info[base + d];
            let c = rem % size;
            rem = rem / size;""")
        L += [f"            i{k} = i{k} + c * info[base + {k + 1}u * rank + d];" for k in used]
        L.append("        }\n    }")
        L += _scalar_lines(block, 3 + 2 * n_in)
        L += [f"    let x{k} = {in_t[k].load(f'in{k}[i{k}]')};" for k in used]
        L += ["    " + line for line in program]
        L += [f"    out{k}[i] = {t.store(f'v{v}')};"
              for k, (v, t) in enumerate(zip(block.outputs, out_t))]
        L.append("}\n")
        return "\n".join(L)
    per, wg = FUSED_VEC_PER_THREAD, FUSED_VEC_WG
    L.append(f"""
@compute @workgroup_size({wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let first = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {wg * per}u + lid;
    let n4 = info[0];""")
    L += _scalar_lines(block, 1 + n_in)
    for k in sorted(used):
        if splat[k]:
            L.append(f"    let x{k} = {in_t[k].load(f'in{k}[info[{1 + k}u]]')};")
    lanes = "xyzw"
    for e in range(per):
        L.append(f"    {{\n        let q = first + {e * wg}u;\n        if (q < n4) {{")
        for k in sorted(used):
            if not splat[k]:
                L.append(f"            let w{k} = in{k}[info[{1 + k}u] / 4u + q];")
        for lane in lanes:
            for k in sorted(used):
                if not splat[k]:
                    L.append(f"            let x{k}{lane} = {in_t[k].load(f'w{k}.{lane}')};")
                else:
                    L.append(f"            let x{k}{lane} = x{k};")
            L += ["            " + line for line in _program(block, lane)]
        for k, (v, t) in enumerate(zip(block.outputs, out_t)):
            vals = ", ".join(t.store(f"v{v}{lane}") for lane in lanes)
            L.append(f"            out{k}[q] = vec4<{t.storage}>({vals});")
        L.append("        }\n    }")
    L.append("}\n")
    return "\n".join(L)
