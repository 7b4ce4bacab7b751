"""`lazyt.fusion.inspect()`: what the Fusion layer executed, for tests and curious users.

    with lazyt.fusion.inspect() as report:
        y = ((x * 2 + 1).relu()).numpy()
    report.blocks     # [BlockReport(ops=('mul', 'add', 'relu'), shape=(...), outputs=1)]
    report.kernels    # 1 (fused blocks + opaque ops launched)

The open reports live in a ContextVar, so each thread or task sees only its own.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from .plan import BlockStep, PrologueStep

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("lazyt_fusion_inspect", default=())


@dataclass(frozen=True)
class BlockReport:
    """One fused block that ran: its ops in order, its shape, how many values it wrote."""

    ops: tuple
    shape: tuple
    outputs: int


@dataclass
class Report:
    """Everything the Fusion layer ran while the report was open."""

    blocks: list = field(default_factory=list)   # BlockReport per fused block run
    opaque_ops: list = field(default_factory=list)  # names of non-fused ops run
    kernels: int = 0          # fused blocks + opaque ops launched
    bytes_written: int = 0    # bytes of every value written by a kernel
    drains: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    @property
    def fused_ops(self) -> int:
        return sum(len(b.ops) for b in self.blocks)

    def _step(self, step) -> None:
        self.kernels += 1
        self.bytes_written += step.nbytes
        if isinstance(step, BlockStep):
            self.blocks.append(BlockReport(step.op_names, step.block.shape, len(step.outs)))
        elif isinstance(step, PrologueStep):   # one kernel: the block inside the op's
            self.blocks.append(BlockReport(step.op_names, step.block.shape, 0))
            self.opaque_ops.append(step.op_name)
        else:
            self.opaque_ops.append(step.name)

    def _drain(self, hit: bool) -> None:
        self.drains += 1
        if hit:
            self.cache_hits += 1
        else:
            self.cache_misses += 1

    def summary(self) -> str:
        lines = [f"{self.drains} drains ({self.cache_hits} cache hits, {self.cache_misses} "
                 f"misses), {self.kernels} kernels, {len(self.blocks)} fused blocks, "
                 f"{self.bytes_written} bytes written"]
        for b in self.blocks:
            lines.append(f"  block {b.shape}: {' -> '.join(b.ops)} ({b.outputs} outputs)")
        for name in self.opaque_ops:
            lines.append(f"  op {name}")
        return "\n".join(lines)


@contextmanager
def inspect() -> Iterator[Report]:
    """Collect a `Report` of what runs inside the block (reports may nest)."""
    report = Report()
    token = _ACTIVE.set(_ACTIVE.get() + (report,))
    try:
        yield report
    finally:
        _ACTIVE.reset(token)


def active() -> tuple:
    return _ACTIVE.get()
