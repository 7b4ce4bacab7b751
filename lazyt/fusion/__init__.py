"""The Fusion layer: lazy recording, drain on read, fused elementwise blocks, a plan cache.

`Fusion(inner)` is the layer, a `Backend` over any backend (the layer contract of the design):
every op returns a `FusionTensor` at once and is run when a value is read (`numpy()`, `item()`,
printing), on `lazyt.sync()`, or when `max_ops` ops are pending. Connected elementwise ops run
as one fused block through `inner.run_fused`; everything else through the inner primitives.

- `inspect()`: a context manager whose `Report` lists the blocks run, the ops in each, kernels
  launched, bytes written and plan-cache hits/misses.
- `draw(path, device=None)`: the pending graph through graphviz (`.dot`, `.svg`, `.png` or
  `.pdf` by the path's extension); returns the `graphviz.Digraph`.
- `LAZYT_DEBUG=2` prints each fused block's generated code when it is compiled;
  `LAZYT_DEBUG=1` keeps where every op was recorded (for error messages).
- `LAZYT_NUM_THREADS` caps the threads numpy's fused blocks use (default: the cores, max 8).

For extensions (hand-written Fusion impls, `lazyt.extension`):
`fusion.custom(name, fn, inputs, [(shape, dtype), ...], scalars)` records an opaque op that runs
`fn(*base_primitives, *scalars)` at drain time; `fusion.eager(fn, inputs)` runs a
data-dependent op now; `fusion.materialize(x)` gives the base primitive of `x`;
`fusion.wrap(primitive)` makes a tensor of one. `find_fusion(stack)` finds the layer in a stack.
"""
from .backend import Fusion
from .draw import draw, find_fusion
from .handle import FusionTensor
from .inspect import BlockReport, Report, inspect
from .ir import CUSTOM, OperationIr, TensorIr, TensorStatus

__all__ = ["Fusion", "FusionTensor", "inspect", "Report", "BlockReport", "draw", "find_fusion",
           "OperationIr", "CUSTOM", "TensorIr", "TensorStatus"]
