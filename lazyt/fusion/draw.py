"""`lazyt.fusion.draw(path)`: the pending graph of a device's Fusion layer, drawn with graphviz.

Draw before reading a result or syncing: those run the pending ops, and an empty stream raises
`DrawError` rather than drawing nothing. The picture holds one node per pending op (name, output
shape, dtype), one per outside input (shape, dtype, the IR's buffer status), edges along data
flow, and the blocks the optimizer would form for this stream as clusters, one fill colour per
block; opaque ops (matmul, reductions, custom ops) are orange boxes. Nothing runs: the plan is
built on a copy of the stream's tensor IR and not cached.

`path`'s extension picks the output: `.dot`/`.gv` writes the DOT text, `.svg`/`.png`/`.pdf`
render it with graphviz's `dot` executable. The `graphviz.Digraph` is returned (Jupyter shows
it). Both the `graphviz` package (`pip install -e ".[draw]"`) and, for images, `dot`
(`apt-get install graphviz`) are needed; without them `DrawError` says so.
"""
from __future__ import annotations

import colorsys
import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from ..device import Device, resolve
from ..errors import InvalidArgumentError, LazytError
from .backend import Fusion
from .ir import TensorStatus
from .optimizer import build_graph, build_plan
from .plan import BlockStep, OpStep, PrologueStep

if TYPE_CHECKING:
    import graphviz

#: Output format by file extension.
FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf"}

# Fill colours of fused blocks (ColorBrewer Set3 without the opaque orange and the grey);
# further blocks get generated hues.
_BLOCK_COLORS = ("#8dd3c7", "#bebada", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3", "#bc80bd",
                 "#ccebc5", "#ffed6f", "#fb8072")
_OPAQUE_COLOR = "#fdb462"
_INPUT_COLOR = "#f0f0f0"
_DEAD_COLOR = "#9e9e9e"
_INSTALL = 'pip install -e ".[draw]" in the lazyt checkout'


class DrawError(LazytError, RuntimeError):
    """The pending graph cannot be drawn: nothing is pending, or graphviz (the Python package,
    or its `dot` executable for images) is missing."""


def find_fusion(backend):
    """The Fusion layer in a backend stack (walking `.inner`), or None."""
    b = backend
    while b is not None:
        if isinstance(b, Fusion):
            return b
        b = getattr(b, "inner", None)
    return None


def draw(path: str | os.PathLike | None = None, device=None) -> graphviz.Digraph:
    """Draw the ops pending on `device`'s Fusion layer (the default device if None; a backend
    stack is accepted too) and write them to `path`, whose extension picks the format (`.dot`,
    `.gv`, `.svg`, `.png`, `.pdf`; None writes nothing). Returns the `graphviz.Digraph`.

    Raises `DrawError` when nothing is pending (draw before reading a result or syncing) or
    graphviz is missing, `InvalidArgumentError` for another extension or a stack without a
    Fusion layer."""
    fmt = None
    if path is not None:
        path = Path(path)
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise InvalidArgumentError(f"draw: cannot write {str(path)!r}: the extension picks "
                                       f"the format, one of {', '.join(FORMATS)}")
    graph = to_digraph(_fusion_of(device))
    if fmt == "dot":
        path.write_text(graph.source)
    elif fmt is not None:
        path.write_bytes(_render(graph, fmt))
    return graph


def to_dot(fusion) -> str:
    """The pending stream of `fusion` as DOT text."""
    return to_digraph(fusion).source


def to_digraph(fusion) -> graphviz.Digraph:
    """The pending stream of `fusion` as a `graphviz.Digraph` (see the module docstring)."""
    gv = _graphviz()
    with fusion._lock:
        pending = _pending(fusion)
    return _build(gv, pending)


# ---------------------------------------------------------------------------- what is pending
@dataclasses.dataclass(frozen=True)
class _Pending:
    """A snapshot of a stream and the plan the optimizer would run for it."""

    ops: tuple
    ext: tuple       # (relative number, shape, dtype name, tensor id) per outside input
    irs: tuple       # relative number -> TensorIr, statuses as the plan set them
    in_rels: tuple   # per op: relative numbers read
    out_rels: tuple  # per op: relative numbers written
    producer: dict   # relative number -> op position
    alive: tuple     # per relative number: still referenced, so kept after the run
    plan: object


def _fusion_of(device):
    stack = resolve(device).backend if device is None or isinstance(device, (str, Device)) \
        else device
    fusion = find_fusion(stack)
    if fusion is None:
        raise InvalidArgumentError(f"draw: the stack {stack!r} has no Fusion layer, so nothing "
                                   "is ever pending (a device made with fusion=False runs ops "
                                   "at once)")
    return fusion


def _pending(fusion) -> _Pending:
    """Snapshot the pending stream (call with the layer's lock held) and plan it without
    touching the stream: the optimizer marks in-place inputs on `stream.irs`, so it gets
    copies, and the plan is not put in the cache."""
    stream = fusion.stream
    h = fusion.handles
    if h.released:
        h.process(stream.seen)  # a safe point, as at a drain: liveness is then up to date
    if not stream.ops:
        raise DrawError("draw: nothing is pending: draw before reading a result or syncing "
                        "(reading a value, printing it or lazyt.sync() runs the pending ops)")
    view = SimpleNamespace(ops=list(stream.ops), seen=dict(stream.seen),
                           irs=[ir.copy() for ir in stream.irs],
                           ext=list(stream.ext), scalars=list(stream.scalars))
    key = stream.key(h.counts)
    plan = build_plan(view, key, fusion.prologue_prims,
                      getattr(fusion.inner, "takes_prologue", None))
    _, in_rels, out_rels, producer = build_graph(view)
    return _Pending(ops=tuple(view.ops), ext=tuple(view.ext), irs=tuple(view.irs),
                    in_rels=tuple(in_rels), out_rels=tuple(out_rels), producer=producer,
                    alive=key[2], plan=plan)


# ---------------------------------------------------------------------------- the picture
def _build(gv, p: _Pending) -> graphviz.Digraph:
    steps = p.plan.steps
    blocks = [s for s in steps if isinstance(s, (BlockStep, PrologueStep))]
    opaque = {s.index for s in steps if isinstance(s, (OpStep, PrologueStep))}
    runs = opaque | {i for s in blocks for i in s.members}
    n_dead = len(p.ops) - len(runs)
    summary = (f"{_count(len(p.ops), 'pending op')}: {_count(len(blocks), 'fused block')}, "
               f"{_count(len(opaque), 'opaque op')}{f', {n_dead} not run' if n_dead else ''}; "
               "double border: value kept")
    g = gv.Digraph("lazyt_fusion", graph_attr={
        "rankdir": "TB", "label": summary, "labelloc": "b", "fontname": "Helvetica",
        "fontsize": "11", "nodesep": "0.3", "ranksep": "0.35"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "filled"},
        edge_attr={"color": "#555555", "arrowsize": "0.7"})

    for r, shape, dtype, tid in p.ext:
        status = p.irs[r].status
        lines = [f"input t{tid}", _shape(shape), dtype,
                 "read-write: reused in place" if status is TensorStatus.READ_WRITE
                 else "read-only"]
        g.node(f"in{r}", _label(lines), shape="box", style="filled,rounded",
               fillcolor=_INPUT_COLOR)

    readers = {}
    for i, ins in enumerate(p.in_rels):
        for r in ins:
            readers.setdefault(r, []).append(i)
    for i, op in enumerate(p.ops):
        if i in runs:
            continue
        used = any(j in runs for r in p.out_rels[i] for j in readers.get(r, ()))
        why = "absorbed: readers broadcast its input" if op.kind.absorbable and used \
            else "dead: not run"
        g.node(f"op{i}", _label(_op_lines(op) + [why]), shape="ellipse",
               style="dashed", color=_DEAD_COLOR, fontcolor=_DEAD_COLOR)
    for i in sorted(opaque):
        g.node(f"op{i}", _label(_op_lines(p.ops[i])), shape="box3d", fillcolor=_OPAQUE_COLOR,
               **_kept(p, i))
    for k, (s, color) in enumerate(zip(blocks, _colors(len(blocks))), 1):
        with g.subgraph(name=f"cluster_block{k}") as c:
            c.attr(label=f"fused block {k} ({_count(len(s.members), 'op')})", labeljust="l",
                   style="filled,rounded", fillcolor=color, color="#666666", fontsize="10")
            for i in s.members:
                c.node(f"op{i}", _label(_op_lines(p.ops[i])), shape="ellipse",
                       fillcolor="white", **_kept(p, i))

    for i, ins in enumerate(p.in_rels):
        for r in ins:
            src = p.producer.get(r)
            g.edge(f"in{r}" if src is None else f"op{src}", f"op{i}")
    return g


def _kept(p: _Pending, i: int) -> dict:
    """A double border on op `i` when its value is still referenced (kept after the run)."""
    return {"peripheries": "2"} if any(p.alive[r] for r in p.out_rels[i]) else {}


def _op_lines(op) -> list:
    """The op's name, then its output's shape and dtype (one line each; one line per output
    when there are several)."""
    outs = op.outputs
    if len(outs) == 1:
        return [op.name, _shape(outs[0].shape), outs[0].dtype.name]
    return [op.name] + [f"{_shape(t.shape)} {t.dtype.name}" for t in outs]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _shape(shape) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _label(lines) -> str:
    """One line per entry, joined by real newlines (dot breaks lines there); backslashes in
    names are kept literal rather than read as DOT escapes."""
    return "\n".join(str(s).replace("\\", "\\\\") for s in lines)


def _colors(n: int) -> list:
    """`n` distinct fill colours: the palette, then hues spread by the golden ratio."""
    colors = list(_BLOCK_COLORS[:n])
    h = 0.0
    while len(colors) < n:
        h = (h + 0.618033988749895) % 1.0
        r, g, b = colorsys.hsv_to_rgb(h, 0.3, 0.97)
        c = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        if c not in colors and c != _OPAQUE_COLOR:
            colors.append(c)
    return colors


# ---------------------------------------------------------------------------- graphviz
def _graphviz():
    """The `graphviz` package, imported on first use (it is an optional dependency)."""
    try:
        import graphviz
    except ImportError as e:
        raise DrawError("draw: drawing the pending graph needs the graphviz Python package: "
                        f"{_INSTALL} (images also need graphviz's `dot` "
                        "executable: apt-get install graphviz)") from e
    return graphviz


def _render(graph, fmt: str) -> bytes:
    gv = _graphviz()
    try:
        return graph.pipe(format=fmt)
    except gv.ExecutableNotFound as e:
        raise DrawError(f"draw: writing {fmt.upper()} needs graphviz's `dot` executable, which "
                        "is not on PATH: apt-get install graphviz (or write a .dot path, which "
                        "needs only the Python package)") from e
