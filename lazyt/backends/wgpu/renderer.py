"""WgslRenderer: how WGSL spells what the Cube renderer base writes (types, conversions,
`select`, bitcasts, locals, buffer bindings and the entry point); its helper functions are
`kernels/helpers.wgsl`."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from ...errors import DTypeError
from ..cube.renderer import Binding, KernelType, Renderer

_KERNELS = Path(__file__).resolve().parent / "kernels"


class WgslRenderer(Renderer):
    """The WGSL renderer (f16 is stored as f16 and computed in f32; int64 is i32, bool u32;
    uint8, int8 and int16 are i32 words, wrapped into their range as they are produced)."""

    lang = "wgsl"
    runtime = "wgpu"
    compute_types = {"f16": "f32"}
    uint = "u32"
    file_ext = "wgsl"
    bit_types = {2: "f16", 4: "u32"}
    wide_types = frozenset()
    helper_file = _KERNELS / "helpers.wgsl"
    helper_start = re.compile(r"^fn\s+(lz_\w+)\s*\(")
    declare_before_use = False      # WGSL functions may be declared in any order

    def convert(self, ty: str, x: str) -> str:
        return f"{ty}({x})"

    def wrap(self, t: KernelType, x: str) -> str:
        """uint8/int8/int16 live in i32 words: mask (uint8) or sign-extend the low bits."""
        if not t.bits:
            return x
        if t.unsigned:
            return f"({x} & {(1 << t.bits) - 1})"
        return f"(({x} << {32 - t.bits}u) >> {32 - t.bits}u)"

    def from_bits(self, ty: str, word: str) -> str:
        return word if ty == "u32" else f"bitcast<{ty}>({word})"

    def select(self, cond: str, then: str, other: str) -> str:
        return f"select({other}, {then}, {cond})"

    def float_literal(self, value: float) -> str:
        return repr(float(value))

    def let(self, name: str, value: str, ty: str | None = None) -> str:
        return f"let {name}: {ty} = {value};" if ty else f"let {name} = {value};"

    def var(self, name: str, value: str) -> str:
        return f"var {name} = {value};"

    def struct(self, name: str, *fields: str) -> str:
        return f"{name}({', '.join(fields)})"

    def vec4(self, scalar: str) -> str:
        return f"vec4<{scalar}>"

    def make_vec4(self, scalar: str, parts: Sequence[str]) -> str:
        return f"vec4<{scalar}>({', '.join(parts)})"

    def from_bits64(self, ty: str, lo: str, hi: str) -> str:
        raise DTypeError(f"WGSL kernels have no 64-bit {ty}")

    def prelude(self, *storage: str) -> str:
        return "enable f16;\n" if "f16" in storage else ""

    def kernel(self, bindings: Sequence[Binding], helpers: str, body: Sequence[str],
               workgroup_size: int) -> str:
        lines = [f"@group(0) @binding({i}) var<storage, {'read_write' if b.writable else 'read'}>"
                 f" {b.name}: array<{b.elem}>;" for i, b in enumerate(bindings)]
        lines.append(helpers)
        lines.append(f"\n@compute @workgroup_size({workgroup_size})\n"
                     "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
                     "@builtin(num_workgroups) nwg: vec3<u32>,\n"
                     "        @builtin(local_invocation_index) lid: u32) {")
        lines += ["    " + line for line in body]
        lines.append("}\n")
        return "\n" + "\n".join(lines)


#: The one WGSL renderer (renderers hold no state besides their memos).
WGSL = WgslRenderer()

__all__ = ["WgslRenderer", "WGSL"]
