"""The Fusion layer: lazy recording, drain on read, fused elementwise blocks, a plan cache.

`Fusion(inner)` is the layer (a `Backend`); `inspect()` reports what ran; `draw(path)` exports
the pending graph. See ../shared/DESIGN.md section 3 ("Fusion") for the contract.
"""
from .backend import Fusion
from .draw import draw, find_fusion
from .handle import FusionTensor
from .inspect import BlockReport, Report, inspect
from .ir import OperationIr, OpKind, TensorIr, TensorStatus

__all__ = ["Fusion", "FusionTensor", "inspect", "Report", "BlockReport", "draw", "find_fusion", "OperationIr",
           "OpKind", "TensorIr", "TensorStatus"]
