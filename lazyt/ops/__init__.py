"""The op declarations: every primitive and composite op, declared once (see `declare`).

`UnaryOp`, `BinaryOp`, `ReduceOp` are the op codes of the elementwise and reduction families.
The modules below declare the ops; layers and `Dispatch` read them through `subscribe`.
"""
import importlib
import pkgutil

from .codes import (ARG_REDUCTIONS, COMPARISONS, FLOAT_UNARY, BinaryOp, ReduceOp,  # noqa: F401
                    UnaryOp)
from .declare import (Fuse, Grad, GradContext, OpDef, Param, ParamKind, all_ops, generate,  # noqa: F401,E501
                      composites, declare, find, kernel, kernel_when, lookup, primitives,
                      subscribe)
from .meta import Out, TensorMeta  # noqa: F401


def _declare_all() -> None:
    """Import every module of this package: each declares its ops when imported, so a new op
    is a new declaration in some module here, and nothing lists them."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


_declare_all()

__all__ = ["ARG_REDUCTIONS", "COMPARISONS", "FLOAT_UNARY", "BinaryOp", "ReduceOp", "UnaryOp",
           "Fuse", "Grad", "GradContext", "OpDef", "Param", "ParamKind", "Out", "TensorMeta",
           "all_ops", "composites", "declare", "find", "generate", "kernel", "kernel_when", "lookup",
           "primitives", "subscribe"]
