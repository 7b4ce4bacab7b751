"""The host side of a Cube launch: info words, coalesced layouts, and fused blocks cut to the
bindings a runtime allows. Language-neutral: every runtime's kernels read the same info layouts.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from ..fused import FusedBlock, FusedInstr, Ref


def info_words(values) -> np.ndarray:
    """Info words (u32); negative strides wrap to their two's complement (kernels use wrapping
    u32 arithmetic, so offset + coord * stride still lands on the right element)."""
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


def broadcast_strides(x, shape: tuple) -> list[int]:
    """The strides of the view `x` (a CubeTensor) broadcast to `shape` (0 on broadcast dims)."""
    lead = len(shape) - len(x.shape)
    return [0] * lead + [0 if (s == 1 and t != 1) else st
                         for s, t, st in zip(x.shape, shape[lead:], x.strides)]


@functools.lru_cache(maxsize=256)
def split_block(block: FusedBlock, limit: int) -> list:
    """Cut a block's program into consecutive parts that each bind at most `limit` buffers
    (inputs + outputs + info); values crossing a cut become outputs of one part and inputs of
    the next. Returns (sub-block, external refs, instruction indices of its outputs) per part.
    Memoized per block object, so the parts (and their kernels) are the same on every run."""
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


__all__ = ["info_words", "coalesce", "broadcast_strides", "split_block"]
