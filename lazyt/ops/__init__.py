"""The op declarations: every primitive and composite op, declared once (see `declare`).

`UnaryOp`, `BinaryOp`, `ReduceOp` are the op codes of the elementwise and reduction families.
The modules below declare the ops; layers and `Dispatch` read them through `subscribe`.
"""
from .codes import (ARG_REDUCTIONS, COMPARISONS, FLOAT_UNARY, BinaryOp, ReduceOp,  # noqa: F401
                    UnaryOp)
from .declare import (Fuse, Grad, GradContext, OpDef, Param, ParamKind, all_ops, generate,  # noqa: F401,E501
                      composites, declare, find, kernel, kernel_when, lookup, primitives,
                      subscribe)
from .meta import Out, TensorMeta  # noqa: F401
from . import elementwise, reduce, matmul, movement, indexing, nn, scan  # noqa: F401,E402

__all__ = ["ARG_REDUCTIONS", "COMPARISONS", "FLOAT_UNARY", "BinaryOp", "ReduceOp", "UnaryOp",
           "Fuse", "Grad", "GradContext", "OpDef", "Param", "ParamKind", "Out", "TensorMeta",
           "all_ops", "composites", "declare", "find", "generate", "kernel", "kernel_when", "lookup",
           "primitives", "subscribe"]
