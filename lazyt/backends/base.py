"""The backend protocol: the declared ops (`lazyt.ops`) plus creation, transfer and layer hooks.

Every backend and every layer (Autodiff, Fusion) is a `Backend` with the same op set, so layers
compose. The op set comes from the declarations, not from this file: for each declared
primitive this class gets a method that raises `MissingImplError` (a kernel backend overrides
it with its kernel), for each composite a method that runs the composite's primitives through
`self` (a kernel backend may override it with a faster kernel). The Burn-style named helpers
(`float_add`, `float_matmul`, `relu_backward`, ...) below are conveniences over the same ops.

Conventions every implementation may rely on (the Tensor API and Dispatch check them first):
- `x`, `lhs`, ... are primitives of this backend (for numpy: `np.ndarray`).
- `binary` operands have the same dtype; one of them may be a Python scalar, meant in the
  tensor's dtype. Comparisons and logical ops return bool, everything else the operand dtype.
- dims are normalized (non-negative, sorted, unique); shapes are valid for the op.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import ops
from ..dtype import DType
from ..errors import GradError, MissingImplError
from ..ops import BinaryOp, ReduceOp, UnaryOp
from ..ops.extension import run_base
from ..ops.elementwise import binary_out_dtype  # noqa: F401  (kernel backends use it)
from ..ops.reduce import reduce_out_dtype  # noqa: F401
from .fused import run_generic

Primitive = Any
Scalar = bool | int | float


class Backend:
    """Base class of backends and layers. Kernel backends implement the declared primitives
    (methods named after them) and may implement composites with faster kernels."""

    name = "backend"
    #: True for layers (Autodiff, Fusion) that wrap an `inner` backend.
    is_layer = False
    #: For a backend whose launches run asynchronously (a GPU queue): how many pending output
    #: elements make it worth starting them before more is recorded. The Fusion layer then
    #: drains when an op that reads none of its pending results arrives (a new, independent
    #: computation: no fusion is lost), so the device works while the host records. None: never
    #: (a synchronous backend gains nothing from it).
    overlap_elements: int | None = None
    #: The layer that records the front end's commonest elementwise calls directly
    #: (`fast_binary` / `fast_unary`, see `Fusion`), or None. Only layers that pass untracked
    #: values through unchanged (Autodiff) may hand their inner layer's on.
    fast = None

    # ---------------------------------------------------------------- creation/transfer
    def from_numpy(self, array: np.ndarray) -> Primitive:
        """Upload a host array (its dtype is already one of lazyt's)."""
        raise MissingImplError(f"from_numpy: {type(self).__name__} has no upload")

    def to_numpy(self, x: Primitive) -> np.ndarray:
        """Read a primitive back to the host (a drain point for lazy layers)."""
        raise MissingImplError(f"to_numpy: {type(self).__name__} has no read-back")

    def host_value(self, x: Primitive) -> np.ndarray | None:
        """The host array that already holds `x`'s value, when there is one without running,
        waiting for or copying anything (a lazy layer's pending tensor, a GPU buffer: None).
        For cheap checks of known values at record time; the caller only reads it."""
        return None

    def transfer(self, x: Primitive, target: "Backend") -> Primitive:
        """Move `x` to another backend stack (through the host unless a layer knows better)."""
        return target.from_numpy(self.to_numpy(x))

    def shape_of(self, x: Primitive) -> tuple:
        return tuple(x.shape)

    def dtype_of(self, x: Primitive) -> DType:
        raise MissingImplError(f"dtype_of: {type(self).__name__} does not say")

    def empty(self, shape: tuple, dtype: DType) -> Primitive:
        return self.full(shape, 0, dtype)

    def zeros(self, shape: tuple, dtype: DType) -> Primitive:
        return self.full(shape, 0, dtype)

    # ---------------------------------------------------------------- layer hooks
    # Autodiff and Fusion override these; a stack without those layers answers as below.
    def require_grad(self, x: Primitive) -> Primitive:
        raise GradError("require_grad: this device has no autodiff layer "
                        "(create it with lazyt.device(..., autodiff=True))")

    def leaf_id(self, x: Primitive):
        """The autodiff node id of `x` when it is a leaf that requires grad, else None."""
        return None

    def node_id(self, x: Primitive):
        """The autodiff node id of `x` when it is tracked, else None."""
        return None

    def register_grad_hook(self, x: Primitive, hook) -> list:
        raise GradError("register_hook: this tensor does not require grad (this device has "
                        "no autodiff layer)")

    def mark_overwritten(self, x: Primitive, by: Primitive | None = None) -> None:
        """`x`'s tensor is being updated in place to `by` (the Autodiff layer notes it)."""

    def is_tracked(self, x: Primitive) -> bool:
        return False

    def detach(self, x: Primitive) -> Primitive:
        return x

    def backward(self, x: Primitive, grad: Primitive | None):
        raise GradError("backward: this device has no autodiff layer")

    def grad(self, x: Primitive, grads) -> Primitive | None:
        return None

    def sync(self) -> None:
        """Execute everything pending (lazy layers drain; eager backends have nothing to do)."""

    def run_fused(self, block, inputs: Sequence[Primitive], scalars: Sequence[Scalar]) -> list:
        """Run a fused elementwise block (`lazyt.backends.fused.FusedBlock`) on this backend's
        primitives and return its outputs. Kernel backends override it with one generated
        kernel per block; this default replays the block op by op through the primitives."""
        return run_generic(self, block, inputs, scalars)

    #: Kernels (composites or declared primitives, by op name) that take a fused elementwise
    #: block in front of their first input through `run_prologue`: the Fusion layer then
    #: hands such an op the block that computes its input when nothing else reads the
    #: block's value.
    prologue_ops: frozenset = frozenset()

    def takes_prologue(self, name: str, block, op_code, args: tuple) -> bool:
        """Whether primitive `name` (one of `prologue_ops`) with op code `op_code` (None
        without one) and structural arguments `args` should be handed `block` (a plan-time
        answer, from metadata: `run_prologue` may still run the block, then the op)."""
        return True

    def run_prologue(self, name: str, block, inputs: Sequence[Primitive],
                     scalars: Sequence[Scalar], args: tuple) -> Primitive:
        """The kernel `name` (one of `prologue_ops`) on the one output of the fused `block`
        (run on `inputs` and `scalars`) as its first tensor and its other arguments `args`, in
        parameter order. A backend overrides it to compute the block inside the op's kernel where it
        can take the block's layouts; this default runs the block, then the op."""
        x = self.run_fused(block, inputs, scalars)[0]
        op = ops.lookup(name)
        first = next(i for i, p in enumerate(op.params) if p.kind.is_tensor)
        return getattr(self, name)(*args[:first], x, *args[first:])

    def run_extension(self, op, args: list, is_tensor: list, declared):
        """Run an extension op (`lazyt.extension`) on this backend's primitives: the impl
        registered for this backend's class or family. Layers route it their own way."""
        return run_base(self, op, args, is_tensor, declared)

    # ================================================================ named helpers
    # Burn-style float helpers.
    def float_add(self, lhs, rhs):
        return self.binary(BinaryOp.ADD, lhs, rhs)

    def float_sub(self, lhs, rhs):
        return self.binary(BinaryOp.SUB, lhs, rhs)

    def float_mul(self, lhs, rhs):
        return self.binary(BinaryOp.MUL, lhs, rhs)

    def float_div(self, lhs, rhs):
        return self.binary(BinaryOp.DIV, lhs, rhs)

    def float_neg(self, x):
        return self.unary(UnaryOp.NEG, x)

    def float_exp(self, x):
        return self.unary(UnaryOp.EXP, x)

    def float_log(self, x):
        return self.unary(UnaryOp.LOG, x)

    def float_matmul(self, lhs, rhs):
        return self.matmul(lhs, rhs)

    def float_transpose(self, x):
        """Swap the last two dims."""
        nd = len(self.shape_of(x))
        return self.swap_dims(x, nd - 2, nd - 1)

    def swap_dims(self, x, dim0: int, dim1: int):
        axes = list(range(len(self.shape_of(x))))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return self.permute(x, tuple(axes))

    def float_sum(self, x):
        return self.reduce(ReduceOp.SUM, x, tuple(range(len(self.shape_of(x)))), False)

    def float_sum_dim(self, x, dim: int):
        return self.reduce(ReduceOp.SUM, x, (dim,), True)

    def float_mean_dim(self, x, dim: int):
        return self.reduce(ReduceOp.MEAN, x, (dim,), True)

    def float_zeros_like(self, x):
        return self.zeros(self.shape_of(x), self.dtype_of(x))

    def float_ones_like(self, x):
        return self.full(self.shape_of(x), 1, self.dtype_of(x))

    def relu(self, x):
        return self.unary(UnaryOp.RELU, x)

    def relu_backward(self, output, grad):
        """Gradient of relu given its output: `grad` where the output is positive, else 0."""
        return self.where(self.binary(BinaryOp.GT, output, 0), grad, 0)

    def sigmoid(self, x):
        return self.unary(UnaryOp.SIGMOID, x)


# ---------------------------------------------------------------------------- kernels
def kernel_of(backend: Backend, op: ops.OpDef):
    """The method of `backend` that is its own kernel for composite `op` (None when the
    backend only has the composite's primitives)."""
    method = getattr(type(backend), op.name, None)
    if method is None or method is _GENERATED.get(op.name):
        return None
    return method


def implementers(op: ops.OpDef) -> list[str]:
    """Names of the loaded kernel backend classes that implement `op`."""
    out, todo = [], list(Backend.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not getattr(cls, "is_layer", False) and op.name in vars(cls):
            out.append(cls.__name__)
    return sorted(set(out))


_GENERATED: dict = {}


def _install(op: ops.OpDef) -> None:
    """Give `Backend` the op: a stub naming it (primitives) or its decomposition (composites)."""
    if op.name in vars(Backend) and op.name not in _GENERATED:
        raise MissingImplError(f"{op.name}: clashes with a method of the backend protocol")
    names = op.call_args()
    ns = {"_op": op, **op.defaults()}
    if op.is_composite:
        ns["_decompose"] = op.decompose
        body = f"    return _decompose(self, {names})\n"
    else:
        ns["_missing"] = missing_kernel
        body = "    raise _missing(self, _op)\n"
    src = f"def {op.name}(self, {op.signature()}):\n{body}"
    fn = ops.generate(op.name, src, ns, f"Backend.{op.name}", op.doc)
    _GENERATED[op.name] = fn
    setattr(Backend, op.name, fn)


def missing_kernel(backend: Backend, op: ops.OpDef) -> MissingImplError:
    """The error for a kernel backend without a kernel for primitive `op`."""
    have = implementers(op)
    return MissingImplError(
        f"{op.name}: the {type(backend).__name__} backend has no kernel for this op; "
        f"implemented by: {', '.join(have) if have else 'no backend yet'}")


ops.subscribe(_install)
