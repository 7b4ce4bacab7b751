"""`lazyt.fusion.draw(path)`: the pending graph of a device's Fusion layer as DOT (and PNG).

Ops are nodes labelled with their name and output shape/dtype (elementwise ops in one colour,
opaque boundaries in another); tensors computed before the stream are boxes. A `.png` path is
rendered with graphviz's `dot` (or matplotlib when present); the DOT text is always written
(next to the PNG, as `.dot`) and returned.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import networkx as nx

from ..device import Device, resolve
from .backend import Fusion
from .optimizer import build_graph


def find_fusion(backend):
    """The Fusion layer in a backend stack (walking `.inner`), or None."""
    b = backend
    while b is not None:
        if isinstance(b, Fusion):
            return b
        b = getattr(b, "inner", None)
    return None


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(fusion) -> str:
    """The pending stream of `fusion` as DOT text."""
    stream = fusion.stream
    g, in_rels, _, producer = build_graph(stream)
    lines = ["digraph lazyt_fusion {", "  rankdir=TB;", "  node [fontname=monospace];"]
    for r, shape, dtype, _ in stream.ext:
        t = stream.irs[r]
        lines.append(f"  x{r} [shape=box, label={_quote(f't{t.id} {list(shape)} {dtype}')}];")
    for i, op in enumerate(stream.ops):
        outs = ", ".join(f"{list(t.shape)}:{t.dtype.name}" for t in op.outputs)
        color = "lightblue" if op.kind.elementwise else "orange"
        label = f"{op.name}\\n{outs}"
        lines.append(f"  op{i} [style=filled, fillcolor={color}, label={_quote(label)}];")
    for u, v in g.edges:
        lines.append(f"  op{u} -> op{v};")
    for i, ins in enumerate(in_rels):
        for r in ins:
            if r not in producer:
                lines.append(f"  x{r} -> op{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(path, device=None) -> str:
    """Write the pending graph of `device`'s Fusion layer (default device if None; a backend
    stack is accepted too) to `path`: DOT, or PNG for a `.png` path when graphviz or matplotlib
    is available (the DOT goes next to it). Returns the DOT text."""
    stack = resolve(device).backend if device is None or isinstance(device, (str, Device)) \
        else device
    fusion = find_fusion(stack)
    if fusion is None:
        raise ValueError(f"draw: the stack {stack!r} has no Fusion layer")
    with fusion._lock:
        dot = to_dot(fusion)
        graph = build_graph(fusion.stream)[0] if str(path).endswith(".png") else None
        labels = {i: op.name for i, op in enumerate(fusion.stream.ops)}
    path = Path(path)
    if path.suffix != ".png":
        path.write_text(dot)
        return dot
    dot_path = path.with_suffix(".dot")
    dot_path.write_text(dot)
    exe = shutil.which("dot")
    if exe:
        subprocess.run([exe, "-Tpng", str(dot_path), "-o", str(path)], check=True,
                       capture_output=True)
    else:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return dot  # no renderer: the DOT file is what we can give
        fig = plt.figure(figsize=(8, 6))
        pos = nx.spring_layout(graph, seed=0) if len(graph) else {}
        nx.draw(graph, pos, labels=labels, node_color="lightblue", font_size=7)
        fig.savefig(path)
        plt.close(fig)
    return dot
