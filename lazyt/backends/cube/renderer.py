"""The language-neutral renderer of generated Cube kernels.

`Renderer` writes the structure of every generated kernel once: the strided/broadcast index math
(linear index -> per-operand offset, with the contiguous and broadcast-scalar fast paths), the
plain elementwise kernels, the fused elementwise block kernel in its strided and vec4 forms,
casts, typed loads and stores (storage type vs compute type), scalars read from info words, and
the reduction recipes. Expressions come from the neutral op tables (`op_table.py`).

What depends on the language is a handful of spellings, each one method or attribute: the
defaults are C (CUDA C++), and a language subclass overrides what it spells differently
(`WgslRenderer` in `lazyt/backends/wgpu/renderer.py`). `kernel()`, the signature and buffer
declarations, has no default. The `*_kernel` methods return ready `TextKernelSource`s and are
plain memos of pure functions (`functools.lru_cache`), so a second launch renders nothing.

Generated kernels read shapes, strides, offsets and scalars from a u32 `info` buffer, so one
compiled kernel serves every shape of an op and dtype. Thread ids are the neutral names `wid`
(workgroup id, 3-D), `nwg` (number of workgroups, 3-D) and `lid` (index in the workgroup), which
`kernel()` binds.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ... import dtype as dt
from ...dtype import DType
from ...errors import DTypeError, LazytError
from ...ops import COMPARISONS, BinaryOp, ReduceOp, UnaryOp
from .op_table import BINARY, UNARY, WHERE, AsBool, Expr, ReduceSpec, Select
from .source import DEFAULT_ENTRY, CubeDim, TextKernelSource, elem_name

#: Invocations per workgroup of the 1-D generated kernels (elementwise, fused strided form).
WG = 256
#: The vectorized fused kernel: vec4 values per invocation and invocations per workgroup.
FUSED_VEC_PER_THREAD = 2
FUSED_VEC_WG = 128

_HELPER_CALL = re.compile(r"\blz_\w+(?=\s*\()")
_LANES = "xyzw"


@dataclass(frozen=True)
class KernelType:
    """How one lazyt dtype lives in a kernel: `storage` in buffers, `compute` in registers
    (float16 is stored as f16 and computed in f32), `kind` the op tables' key. `bits` (8 or
    16) marks an integer dtype narrower than its 32-bit compute type (uint8, int8, int16):
    every value of it an op produces is wrapped back into its range (`Renderer.wrap`), so
    results equal numpy's bit for bit; `unsigned` says how (uint8)."""

    storage: str
    compute: str
    kind: str        # float | int | bool
    bits: int = 0
    unsigned: bool = False


@dataclass(frozen=True)
class Binding:
    """One buffer of a generated kernel, in binding order: its name, element type and access."""

    name: str
    elem: str
    writable: bool = False


class HelperError(LazytError):
    """A language's helper file cannot be read or split into its `lz_*` functions."""


def operand_dtype(block, ref) -> DType:
    """The dtype of one operand of a `FusedBlock` instruction."""
    if ref.kind == "in":
        return block.inputs[ref.index][1]
    if ref.kind == "sc":
        return block.scalars[ref.index]
    return block.instrs[ref.index].dtype


class Renderer:
    """Generated kernels for one kernel language; subclass per language (see the module doc).

    Extension points, all with C defaults except `kernel`: the attributes `lang`, `runtime`,
    `compute_types`, `uint`, `file_ext`, `bit_types`, `wide_types`, `vec4_types`,
    `helper_file`, `helper_start`, `declare_before_use`; the methods `convert`, `from_bits`,
    `from_bits64`, `wrap`, `select`, `float_literal`, `let`, `var`, `struct`, `vec4`,
    `make_vec4`, `prelude`, `kernel`; and, where one op's spelling
    differs, its entry in `unary_table` / `binary_table` (CUDA has no `sign`, say).
    """

    #: The kernel language ("wgsl", "cuda") and the runtime named in errors ("wgpu", "cuda").
    lang = ""
    runtime = ""
    #: The compute type of each storage type that is not computed in itself.
    compute_types: dict[str, str] = {}
    #: The 32-bit unsigned integer type (info words, indices).
    uint = "unsigned int"
    #: The extension of the language's kernel files (`<stem>.<file_ext>`).
    file_ext = "cu"
    #: The type holding the bits of an element of each size, for kernels that move values.
    bit_types: dict[int, str] = {2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
    #: Compute types 64 bits wide: their scalars take two info words (low word first).
    wide_types = frozenset({"double", "long long"})
    #: The 4-vector type of each scalar type (vec4 fused kernels).
    vec4_types: dict[str, str] = {"float": "float4", "int": "int4", "unsigned int": "uint4"}
    #: The vec4 fused kernel's shape: 4-vectors per invocation, invocations per workgroup.
    fused_vec_per_thread = FUSED_VEC_PER_THREAD
    fused_vec_wg = FUSED_VEC_WG
    #: The file defining the `lz_*` helper functions, and the first line of a definition
    #: (group 1: the helper's name). A definition ends where its braces balance.
    helper_file: Path | None = None
    helper_start = re.compile(r"^__device__\b.*?\b(lz_\w+)\s*\(")
    #: Whether a function must be declared before a call (C); else helpers keep the order in
    #: which the code's calls found them.
    declare_before_use = True
    #: The op tables this language renders (the neutral ones unless a spelling differs).
    unary_table: dict = UNARY
    binary_table: dict = BINARY

    # ------------------------------------------------------------------ types
    @functools.lru_cache(maxsize=None)
    def type_of(self, dtype: DType) -> KernelType:
        """How `dtype` is stored and computed in this language (`DTypeError` if it is not)."""
        storage = elem_name(dtype, self.lang)
        kind = "float" if dtype.is_float else "bool" if dtype is dt.bool_ else "int"
        small = dtype in dt.SMALL_INTS
        return KernelType(storage, self.compute_types.get(storage, storage), kind,
                          dtype.bits if small else 0, small and not dtype.is_signed)

    # ------------------------------------------------------------------ spellings (C defaults)
    def bits_type(self, itemsize: int) -> str:
        """The type of `itemsize`-byte elements' bits (`DTypeError` if the language has none)."""
        ty = self.bit_types.get(itemsize)
        if ty is None:
            raise DTypeError(f"{self.lang} kernels have no {8 * itemsize}-bit elements")
        return ty

    def convert(self, ty: str, x: str) -> str:
        """`x` converted to the type `ty` (a value conversion, not a bitcast)."""
        return f"(({ty})({x}))"

    def from_bits(self, ty: str, word: str) -> str:
        """The value of compute type `ty` whose bits are the u32 `word`."""
        if ty == "float":
            return f"__uint_as_float({word})"
        return word if ty == self.uint else self.convert(ty, word)

    def from_bits64(self, ty: str, lo: str, hi: str) -> str:
        """The value of the 64-bit compute type `ty` whose bits are the u32 words `lo`, `hi`."""
        bits = f"((((unsigned long long)({hi})) << 32) | ((unsigned long long)({lo})))"
        if ty == "double":
            return f"__longlong_as_double((long long){bits})"
        return self.convert(ty, bits)

    def scalar_width(self, dtype: DType) -> int:
        """Info words holding one scalar of `dtype` (its compute value's bits)."""
        return 2 if self.type_of(dtype).compute in self.wide_types else 1

    def select(self, cond: str, then: str, other: str) -> str:
        """`then` where `cond` holds, else `other` (both evaluated)."""
        return f"(({cond}) ? ({then}) : ({other}))"

    def float_literal(self, value: float) -> str:
        return f"{float(value)!r}f"

    def let(self, name: str, value: str, ty: str | None = None) -> str:
        """An immutable local (typed when `ty` is given)."""
        return f"const {ty or 'auto'} {name} = {value};"

    def var(self, name: str, value: str) -> str:
        """A mutable local."""
        return f"auto {name} = {value};"

    def struct(self, name: str, *fields: str) -> str:
        """A value of struct `name` from its fields in order."""
        return f"{name}{{{', '.join(fields)}}}"

    def vec4(self, scalar: str) -> str:
        """The 4-vector type of `scalar`."""
        vec = self.vec4_types.get(scalar)
        if vec is None:
            raise DTypeError(f"{self.lang} kernels have no 4-vector of {scalar}")
        return vec

    def make_vec4(self, scalar: str, parts: Sequence[str]) -> str:
        return f"make_{self.vec4(scalar)}({', '.join(parts)})"

    def prelude(self, *storage: str) -> str:
        """What a kernel storing these types needs before anything else (WGSL: `enable f16;`)."""
        return ""

    def kernel(self, bindings: Sequence[Binding], helpers: str, body: Sequence[str],
               workgroup_size: int) -> str:
        """The kernel function named `DEFAULT_ENTRY[lang]`: `bindings` (buffers, in order),
        the `helpers` it calls, and `body` (lines, indented by one level here), with `wid`,
        `nwg` and `lid` bound."""
        raise NotImplementedError(f"{type(self).__name__} must spell kernel()")

    # ------------------------------------------------------------------ derived spellings
    def literal(self, value, t: KernelType) -> str:
        """`value` as a constant of `t`'s compute type."""
        if t.kind == "float":
            return repr(float(value)) if t.compute in self.wide_types else \
                self.float_literal(value)
        if t.kind == "bool":
            return f"{int(value)}u"
        if t.compute in self.wide_types:
            return f"{int(value)}LL"
        return str(int(value))

    def as_bool(self, cond: str) -> str:
        return self.select(cond, "1u", "0u")

    def load(self, t: KernelType, x: str) -> str:
        """A stored value `x` as its compute type."""
        return x if t.storage == t.compute else self.convert(t.compute, x)

    def store(self, t: KernelType, x: str, wrapped: bool = False) -> str:
        """A compute value `x` as its storage type (a small integer wrapped into its range
        unless it is `wrapped` already: C's conversion to the narrow storage type wraps)."""
        if t.storage == t.compute:
            return x if wrapped else self.wrap(t, x)
        return self.convert(t.storage, x)

    def wrap(self, t: KernelType, x: str) -> str:
        """The compute value `x` wrapped into the range of `t`'s dtype, as numpy's arithmetic
        wraps uint8/int8/int16 (modulo 2^bits; `x` itself for other types). C: through the
        narrow storage type and back."""
        if not t.bits:
            return x
        return self.convert(t.compute, self.convert(t.storage, x))

    def infinity(self, t: KernelType) -> str:
        if t.compute in self.wide_types:
            return self.from_bits64(t.compute, "0u", "0x7ff00000u")
        return self.from_bits(t.compute, "0x7f800000u")

    def lowest(self, t: KernelType) -> str:
        """The accumulator identity of max: -inf, or the least integer of the compute type."""
        if t.kind == "float":
            return f"-{self.infinity(t)}"
        if t.compute in self.wide_types:
            return "(-9223372036854775807LL - 1LL)"
        return self.from_bits(t.compute, "0x80000000u")

    def highest(self, t: KernelType) -> str:
        if t.kind == "float":
            return self.infinity(t)
        return "9223372036854775807LL" if t.compute in self.wide_types else "2147483647"

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr, t: KernelType, **operands: str) -> str:
        """A table expression for operands of type `t`."""
        if isinstance(e, str):
            return e.format(zero=self.literal(0, t), one=self.literal(1, t), **operands)
        if isinstance(e, Select):
            return self.select(self.expr(e.cond, t, **operands), self.expr(e.then, t, **operands),
                               self.expr(e.other, t, **operands))
        if isinstance(e, AsBool):
            return self.as_bool(self.expr(e.cond, t, **operands))
        raise TypeError(f"not an op-table expression: {e!r}")

    def _entry(self, table: dict, op, t: KernelType) -> Expr:
        entry = table[op].get(t.kind)
        if entry is None:
            raise DTypeError(f"{op.value}: not supported for {t.kind} tensors on {self.runtime} "
                             f"(kernels exist for: {', '.join(table[op])})")
        return entry

    def unary_expr(self, op: UnaryOp, t: KernelType, x: str) -> str:
        return self.expr(self._entry(self.unary_table, op, t), t, x=x)

    def binary_expr(self, op: BinaryOp, t: KernelType, a: str, b: str) -> str:
        return self.expr(self._entry(self.binary_table, op, t), t, a=a, b=b)

    def where_expr(self, c: str, a: str, b: str) -> str:
        return self.expr(WHERE, self.type_of(dt.bool_), c=c, a=a, b=b)

    def binary_out(self, op: BinaryOp, t: KernelType) -> KernelType:
        """The type of a binary op's result (comparisons give bool)."""
        return self.type_of(dt.bool_) if op in COMPARISONS else t

    def cast_expr(self, src: KernelType, dst: KernelType, x: str) -> str:
        """A `src` compute value as a `dst` compute value (numpy's astype semantics)."""
        if src.compute == dst.compute:
            return x
        if dst.kind == "bool":
            return self.as_bool(f"!({x} == {self.literal(0, src)})")
        return self.convert(dst.compute, x)

    # ------------------------------------------------------------------ helper functions
    def helper_defs(self) -> dict[str, str]:
        """Every helper of `helper_file` by name (read once)."""
        return _helper_defs(self.helper_file, self.helper_start)

    def helpers_for(self, *code: str) -> str:
        """The definitions of the helpers `code` calls (and of those they call), callees
        before their callers where the language needs it (`declare_before_use`)."""
        defs = self.helper_defs() if self.helper_file is not None else {}
        need: list[str] = []
        todo = list(code)
        while todo:
            for name in _HELPER_CALL.findall(todo.pop()):
                if name in defs and name not in need:
                    need.append(name)
                    todo.append(defs[name])
        if self.declare_before_use:
            need = _callees_first(need, defs)
        return "".join("\n" + defs[n] + "\n" for n in need)

    # ------------------------------------------------------------------ index math
    def group_index(self) -> str:
        """The linear index of this workgroup over the (up to 3-D) launch grid."""
        return "(wid.x + (wid.y + wid.z * nwg.y) * nwg.x)"

    def strided_offsets(self, used: Sequence[int], info_base: int) -> list[str]:
        """Lines giving each input `k` in `used` its element offset `i<k>` for the output
        element `i`: `off_k + lin_k * i` (info words 3 + 2k, 4 + 2k: lin_k is 1 for a
        contiguous input, 0 for a broadcast scalar or a strided one), plus the sum of
        coordinate * stride over the coalesced dims when info[2] says some input is strided.
        The dims' sizes start at word `info_base`, input k's strides `(k + 1) * rank` later."""
        lines = [self.var(f"i{k}", f"info[{3 + 2 * k}u] + info[{4 + 2 * k}u] * i") for k in used]
        lines += ["if (info[2] != 0u) {",
                  "    " + self.let("rank", "info[1]"),
                  "    " + self.let("base", f"{info_base}u"),
                  "    " + self.var("rem", "i"),
                  f"    for ({self.var('j', 'rank')} j > 0u; j = j - 1u) {{",
                  "        " + self.let("d", "j - 1u"),
                  "        " + self.let("size", "info[base + d]"),
                  "        " + self.let("c", "rem % size"),
                  "        rem = rem / size;"]
        lines += [f"        i{k} = i{k} + c * info[base + {k + 1}u * rank + d];" for k in used]
        return lines + ["    }", "}"]

    def _strided_head(self) -> list[str]:
        return [self.let("i", f"{self.group_index()} * {WG}u + lid"),
                "if (i >= info[0]) { return; }"]

    def scalar_span(self, scalars: Sequence[DType]) -> int:
        """Info words of the scalars `scalars` (`scalar_width` each)."""
        return sum(self.scalar_width(d) for d in scalars)

    def scalar_lines(self, scalars: Sequence[DType], info_base: int) -> list[str]:
        """`s<j>`: scalar j, its compute value's bits in the info words from `info_base` on
        (one word each, two for 64-bit compute types, low word first)."""
        lines, at = [], info_base
        for j, d in enumerate(scalars):
            ty = self.type_of(d).compute
            if self.scalar_width(d) == 2:
                value = self.from_bits64(ty, f"info[{at}u]", f"info[{at + 1}u]")
            else:
                value = self.from_bits(ty, f"info[{at}u]")
            lines.append(self.let(f"s{j}", value))
            at += self.scalar_width(d)
        return lines

    # ------------------------------------------------------------------ elementwise kernels
    def elementwise(self, inputs: Sequence[KernelType], out: KernelType, expr: str) -> str:
        """A kernel storing `expr` (over the compute values v0, v1, ... of the inputs) to
        every element of a contiguous output.

        info: [n, rank, strided, (offset_k, linear_k) per input, shape[rank],
        strides_k[rank] per input]. Input k is read at offset_k + linear_k * i (+ the strided
        sum when `strided`): the host gives contiguous inputs linear 1 and zero strides, and
        broadcast scalars zeros everywhere."""
        n = len(inputs)
        bindings = [Binding(f"in{k}", t.storage) for k, t in enumerate(inputs)]
        bindings += [Binding("out", out.storage, True), Binding("info", self.uint)]
        body = self._strided_head() + self.strided_offsets(range(n), 3 + 2 * n)
        body += [self.let(f"v{k}", self.load(t, f"in{k}[i{k}]")) for k, t in enumerate(inputs)]
        body.append(f"out[i] = {self.store(out, expr)};")
        return self.prelude(out.storage, *(t.storage for t in inputs)) + \
            self.kernel(bindings, self.helpers_for(expr), body, WG)

    @functools.lru_cache(maxsize=1024)
    def elementwise_kernel(self, name: str, inputs: tuple, out: KernelType,
                           expr: str) -> TextKernelSource:
        """`elementwise(inputs, out, expr)` as a kernel named `name` (memoized)."""
        return self._source(name, self.elementwise(inputs, out, expr), WG)

    @functools.lru_cache(maxsize=1024)
    def unary_kernel(self, op: UnaryOp, dtype: DType) -> TextKernelSource:
        t = self.type_of(dtype)
        return self.elementwise_kernel(f"unary_{op.value}", (t,), t,
                                       self.unary_expr(op, t, "v0"))

    @functools.lru_cache(maxsize=1024)
    def binary_kernel(self, op: BinaryOp, dtype: DType) -> TextKernelSource:
        t = self.type_of(dtype)
        return self.elementwise_kernel(f"binary_{op.value}", (t, t), self.binary_out(op, t),
                                       self.binary_expr(op, t, "v0", "v1"))

    @functools.lru_cache(maxsize=256)
    def where_kernel(self, dtype: DType) -> TextKernelSource:
        t = self.type_of(dtype)
        return self.elementwise_kernel("where", (self.type_of(dt.bool_), t, t), t,
                                       self.where_expr("v0", "v1", "v2"))

    @functools.lru_cache(maxsize=256)
    def cast_kernel(self, src: DType, dst: DType) -> TextKernelSource:
        s, d = self.type_of(src), self.type_of(dst)
        return self.elementwise_kernel("cast", (s,), d, self.cast_expr(s, d, "v0"))

    # ------------------------------------------------------------------ fused blocks
    def instr_expr(self, block, ins, name) -> str:
        """One `FusedInstr` as an expression; `name(ref)` spells its operands."""
        ops = [name(r) for r in ins.operands]
        t = self.type_of(operand_dtype(block, ins.operands[0]))
        if ins.kind == "unary":
            return self.unary_expr(ins.op, t, ops[0])
        if ins.kind == "binary":
            return self.binary_expr(ins.op, t, ops[0], ops[1])
        if ins.kind == "where":
            return self.where_expr(ops[0], ops[1], ops[2])
        if ins.kind == "cast":
            return self.cast_expr(t, self.type_of(ins.dtype), ops[0])
        if ins.kind == "full":
            return ops[0]
        raise DTypeError(f"fused block: no {self.lang} for instruction kind {ins.kind!r}")

    def program(self, block, lane: str = "") -> list[str]:
        """`v<i>` lines computing every instruction of `block` from `x<k>` (inputs) and `s<j>`
        (scalars); `lane` suffixes the per-lane names of the vec4 form. A value stored as f16
        is rounded to f16 as the op-by-op kernels round it (`lz_round_f16`)."""
        def name(r):
            return {"in": f"x{r.index}{lane}", "sc": f"s{r.index}", "v": f"v{r.index}{lane}"}[r.kind]

        lines = []
        for i, ins in enumerate(block.instrs):
            t = self.type_of(ins.dtype)
            expr = self.instr_expr(block, ins, name)
            if t.kind == "float" and t.storage != t.compute:
                expr = f"lz_round_f16({expr})"
            elif t.bits and ins.kind in ("unary", "binary", "cast"):
                expr = self.wrap(t, expr)   # a uint8/int8/int16 result, as stored (where
                #                             and full give values already in range)
            lines.append(self.let(f"v{i}{lane}", expr, t.compute))
        return lines

    def fused(self, block, vec4: bool = False, splat: tuple = ()) -> str:
        """One kernel computing every output of a fused elementwise `block`.

        Strided form (any strides, broadcasting): one element per invocation, inputs read as in
        `elementwise`. info: [n, rank, strided, (off_k, lin_k) per input, scalar bits...,
        shape[rank], strides_k[rank] per input].

        `vec4` form (every input contiguous or a single broadcast element, n a multiple of 4):
        FUSED_VEC_PER_THREAD 4-vectors per invocation, each lane computed with the scalar
        program. `splat[k]` marks input k as a single element. info: [n4, off_k per input,
        scalar bits...] (offsets in elements; contiguous offsets are multiples of 4).
        """
        in_t = [self.type_of(d) for _, d in block.inputs]
        out_t = [self.type_of(block.instrs[v].dtype) for v in block.outputs]
        used = sorted({r.index for ins in block.instrs for r in ins.operands if r.kind == "in"})
        program = self.program(block)
        bindings = [Binding(f"in{k}", self.vec4(t.storage) if vec4 and not splat[k] else t.storage)
                    for k, t in enumerate(in_t)]
        bindings += [Binding(f"out{k}", self.vec4(t.storage) if vec4 else t.storage, True)
                     for k, t in enumerate(out_t)]
        bindings.append(Binding("info", self.uint))
        # an intermediate value may be f16 too (a cast inside the block)
        prelude = self.prelude(*(t.storage for t in in_t), *(t.storage for t in out_t),
                               *(self.type_of(ins.dtype).storage for ins in block.instrs))
        helpers = self.helpers_for(*program)
        if vec4:
            body, wg = self._fused_vec4_body(block, in_t, out_t, used, splat), self.fused_vec_wg
        else:
            body, wg = self._fused_strided_body(block, in_t, out_t, used, program), WG
        return prelude + self.kernel(bindings, helpers, body, wg)

    def _fused_strided_body(self, block, in_t, out_t, used, program) -> list[str]:
        n_in = len(in_t)
        body = self._strided_head()
        body += self.strided_offsets(used, 3 + 2 * n_in + self.scalar_span(block.scalars))
        body += self.scalar_lines(block.scalars, 3 + 2 * n_in)
        body += [self.let(f"x{k}", self.load(in_t[k], f"in{k}[i{k}]")) for k in used]
        body += program
        body += [f"out{k}[i] = {self.store(t, f'v{v}', wrapped=True)};"
                 for k, (v, t) in enumerate(zip(block.outputs, out_t))]
        return body

    def _fused_vec4_body(self, block, in_t, out_t, used, splat) -> list[str]:
        per, wg = self.fused_vec_per_thread, self.fused_vec_wg
        body = [self.let("first", f"{self.group_index()} * {wg * per}u + lid"),
                self.let("n4", "info[0]")]
        body += self.scalar_lines(block.scalars, 1 + len(in_t))
        body += [self.let(f"x{k}", self.load(in_t[k], f"in{k}[info[{1 + k}u]]"))
                 for k in used if splat[k]]
        pad = " " * 8
        for e in range(per):
            body += ["{", "    " + self.let("q", f"first + {e * wg}u"), "    if (q < n4) {"]
            body += [pad + self.let(f"w{k}", f"in{k}[info[{1 + k}u] / 4u + q]")
                     for k in used if not splat[k]]
            for lane in _LANES:
                for k in used:
                    value = f"x{k}" if splat[k] else self.load(in_t[k], f"w{k}.{lane}")
                    body.append(pad + self.let(f"x{k}{lane}", value))
                body += [pad + line for line in self.program(block, lane)]
            for k, (v, t) in enumerate(zip(block.outputs, out_t)):
                vals = [self.store(t, f"v{v}{lane}", wrapped=True) for lane in _LANES]
                body.append(pad + f"out{k}[q] = {self.make_vec4(t.storage, vals)};")
            body += ["    }", "}"]
        return body

    @functools.lru_cache(maxsize=4096)
    def can_vectorize(self, block) -> bool:
        """Whether the vec4 form can hold every input and output type of `block`."""
        types = [d for _, d in block.inputs] + [block.instrs[v].dtype for v in block.outputs]
        try:
            for d in types:
                self.vec4(self.type_of(d).storage)
        except DTypeError:
            return False
        return True

    @functools.lru_cache(maxsize=4096)
    def fused_kernel(self, block, vec4: bool = False, splat: tuple = ()) -> TextKernelSource:
        """`fused(block, vec4, splat)` as a kernel (memoized per block object and form: a block
        run again is neither rendered nor hashed again)."""
        return self._source("fused", self.fused(block, vec4, splat),
                            self.fused_vec_wg if vec4 else WG)

    # ------------------------------------------------------------------ reductions
    @functools.lru_cache(maxsize=256)
    def reduce_spec(self, op: ReduceOp, acc: KernelType) -> ReduceSpec:
        """The reduction `op` with an accumulator of compute type `acc` (float or int)."""
        is_f = acc.kind == "float"
        nan_first = ("if (lz_isnan(a.v)) { return a; }\n    if (lz_isnan(b.v)) { return b; }\n"
                     "    " if is_f else "")

        def ret(value: str) -> str:
            return f"return {self.struct('Acc', value, '0u')};"

        if op is ReduceOp.SUM or op is ReduceOp.MEAN:
            finish = "r.v" if op is ReduceOp.SUM else \
                f"r.v / {self.convert(acc.compute, 'info[7]')}"
            return ReduceSpec(self.literal(0, acc), ret("a.v + b.v"), finish)
        if op is ReduceOp.PROD:
            return ReduceSpec(self.literal(1, acc), ret("a.v * b.v"), "r.v")
        if op is ReduceOp.MAX:
            return ReduceSpec(self.lowest(acc), nan_first + ret("max(a.v, b.v)"), "r.v")
        if op is ReduceOp.MIN:
            return ReduceSpec(self.highest(acc), nan_first + ret("min(a.v, b.v)"), "r.v")
        if op is ReduceOp.ARGMAX or op is ReduceOp.ARGMIN:
            # the first index of the extreme value; NaN counts as the extreme (numpy)
            better = ">" if op is ReduceOp.ARGMAX else "<"
            start = self.lowest(acc) if op is ReduceOp.ARGMAX else self.highest(acc)
            body = (f"{self.let('an', 'lz_isnan(a.v)')}\n    {self.let('bn', 'lz_isnan(b.v)')}\n"
                    "    if (an || bn) {\n        if (bn && (!an || b.i < a.i)) { return b; }\n"
                    "        return a;\n    }\n    " if is_f else "")
            body += (f"if (b.v {better} a.v || (b.v == a.v && b.i < a.i)) {{ return b; }}\n"
                     "    return a;")
            return ReduceSpec(start, body, self.convert(self.type_of(dt.int32).compute, "r.i"))
        raise DTypeError(f"reduce: no {self.lang} kernel for {op}")

    # ------------------------------------------------------------------ kernel sources
    def _source(self, name: str, text: str, workgroup_size: int) -> TextKernelSource:
        return TextKernelSource(name, self.lang, text, DEFAULT_ENTRY[self.lang],
                                cube_dim=CubeDim(workgroup_size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _callees_first(names: list[str], defs: dict[str, str]) -> list[str]:
    """`names` reordered so that every helper follows the helpers it calls."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for callee in _HELPER_CALL.findall(defs[name]):
            if callee in defs and callee != name:
                visit(callee)
        order.append(name)

    for name in names:
        visit(name)
    return order


@functools.lru_cache(maxsize=None)
def _helper_defs(path: Path, start: re.Pattern) -> dict[str, str]:
    """The `lz_*` definitions of a helper file: from a line matching `start` to the line where
    its braces balance (comments outside a definition are not part of it). Definitions of one
    name (C++ overloads) are kept together, in file order."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise HelperError(f"cannot read the kernel helper file {path}: {e.strerror or e}") from None
    lines = text.splitlines()
    defs: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = start.match(lines[i])
        if m is None:
            i += 1
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            code = lines[j].split("//", 1)[0]
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth == 0:
                break
            j += 1
        if j == len(lines):
            raise HelperError(f"{path}: the helper {m.group(1)} starting on line {i + 1} "
                              f"never closes its braces")
        text = "\n".join(lines[i:j + 1])
        name = m.group(1)
        defs[name] = defs[name] + "\n" + text if name in defs else text
        i = j + 1
    return defs


__all__ = ["WG", "FUSED_VEC_PER_THREAD", "FUSED_VEC_WG", "KernelType", "Binding", "HelperError",
           "Renderer", "operand_dtype"]
