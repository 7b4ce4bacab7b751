"""Declaring ops: one `OpDef` per op, the single description every layer reads.

A *primitive* op is declared with its name, its parameters (which are tensors, which are
structural, which are plain values), its one shape/dtype rule (`meta`), how the Fusion layer
treats it (fused elementwise instruction or opaque boundary) and its gradient rule (`Grad`).
From that declaration `Dispatch` gets its entry, the Autodiff layer its tracked version, the
Fusion layer its recorder, the `Backend` base class a stub naming the op when a kernel backend
lacks its kernel, and (with `method=`/`function=` names) `Tensor` its method and `lazyt` its
function. A base backend supplies kernels only: a method named after the op.

A *composite* op is also defined once, as a function over primitives (`decompose`, as torch's
`_refs`). A base backend that has a faster kernel for it registers one by defining a method of
the op's name (optionally restricted with `kernel(when=...)`); the Fusion layer then records
the call as one opaque op, and elsewhere the composite runs as its primitives. Autodiff
differentiates a composite through its primitives unless the composite declares a `Grad`.

Layers learn of ops through `subscribe`, which also reports ops declared later (extensions
declaring primitives of their own), so no layer lists ops by name.
"""
from __future__ import annotations

import linecache
import threading
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterator

from ..errors import LazytError

REQUIRED = object()  # a parameter without a default


class ParamKind(Enum):
    """What an op parameter is, for every layer: which values are tensors, which are part of a
    compiled plan (STATIC) and which only of its inputs (VALUE)."""

    TENSOR = "tensor"      # a tensor input
    TENSORS = "tensors"    # a sequence of tensor inputs (cat)
    OPERAND = "operand"    # a tensor or a Python scalar (elementwise operands)
    INDEX = "index"        # an int64 tensor input, never differentiated (gather's index)
    OPTIONAL = "optional"  # a tensor or None (a composite's weight, bias, mask)
    STATIC = "static"      # structural: op code, dims, shapes, dtypes (keys compiled plans)
    VALUE = "value"        # a number that does not change the program (a fill value, eps)

    @property
    def is_tensor(self) -> bool:
        return self in _TENSOR_KINDS


_TENSOR_KINDS = frozenset({ParamKind.TENSOR, ParamKind.TENSORS, ParamKind.OPERAND,
                           ParamKind.INDEX, ParamKind.OPTIONAL})


@dataclass(frozen=True)
class Param:
    """One parameter of an op. `differentiable=False` marks a tensor input that never gets a
    gradient (where's condition)."""

    name: str
    kind: ParamKind
    default: Any = REQUIRED
    differentiable: bool = True

    @property
    def source(self) -> str:
        """The parameter as written in a generated `def` (defaults bound as `_d_<name>`)."""
        return self.name if self.default is REQUIRED else f"{self.name}=_d_{self.name}"


def tensor(name: str, differentiable: bool = True) -> Param:
    return Param(name, ParamKind.TENSOR, differentiable=differentiable)


def tensors(name: str) -> Param:
    return Param(name, ParamKind.TENSORS)


def operand(name: str) -> Param:
    return Param(name, ParamKind.OPERAND)


def index(name: str) -> Param:
    return Param(name, ParamKind.INDEX, differentiable=False)


def optional(name: str) -> Param:
    return Param(name, ParamKind.OPTIONAL, default=None)


def static(name: str, default: Any = REQUIRED) -> Param:
    return Param(name, ParamKind.STATIC, default)


def value(name: str, default: Any = REQUIRED) -> Param:
    return Param(name, ParamKind.VALUE, default)


class GradContext:
    """What a gradient rule sees: the op's non-tensor arguments (`ctx.args.<name>`), which
    inputs need a gradient, their shapes and dtypes, the saved input values it declared in
    `Grad.reads` (`ctx.saved(name)`; a scalar operand is its value) and, with
    `Grad(output=True)`, the op's output (`ctx.out`). Layers build it; rules only read it."""

    __slots__ = ("args", "_needs", "_shapes", "_dtypes", "_saved", "out", "refs")

    def __init__(self, args, needs: dict, shapes: dict, dtypes: dict, saved: Callable | None,
                 out=None):
        self.args = args
        self._needs = needs
        self._shapes = shapes
        self._dtypes = dtypes
        self._saved = saved
        self.out = out
        self.refs: dict = {}  # what the forward kept: name -> where its value comes from

    def has(self, name: str) -> bool:
        """Whether the forward kept input `name` for the rule (it was in `Grad.reads`)."""
        return name in self.refs

    def needs(self, name: str) -> bool:
        """Whether input `name` gets a gradient (for a sequence: any of its tensors)."""
        n = self._needs.get(name, False)
        return any(n) if isinstance(n, list) else n

    def shape(self, name: str):
        return self._shapes[name]

    def dtype(self, name: str):
        return self._dtypes[name]

    def saved(self, name: str):
        """The value input `name` had in the forward (retrieve each declared name once)."""
        return self._saved(name)


@dataclass(frozen=True)
class Grad:
    """An op's gradient rule.

    `fn(B, g, ctx) -> {input name: gradient}` computes with the inner backend `B` from the
    output's gradient `g` (a name missing or None: no gradient). A gradient may have the shape
    the input was broadcast to: the layer sums it back to the input's shape. `reads` names the
    inputs whose forward values `fn` reads, or is `fn(ctx) -> names` when that depends on which
    inputs need gradients or on the arguments; the layer keeps (or recomputes) exactly those.
    """

    fn: Callable
    reads: tuple | Callable = ()
    output: bool = False

    def read_names(self, ctx: GradContext) -> tuple:
        r = self.reads
        return tuple(r(ctx)) if callable(r) else r


class Fuse(Enum):
    """How the Fusion layer records an op: as an instruction of a fused elementwise block, or
    as an opaque boundary run by the base backend's kernel."""

    ELEMENTWISE = "elementwise"
    OPAQUE = "opaque"


@dataclass(eq=False)
class OpDef:
    """One declared op (see the module docstring). Identity is the name."""

    name: str
    params: tuple
    meta: Callable
    fuse: Fuse = Fuse.OPAQUE
    grad: Grad | None = None
    #: Elementwise ops: the fused-block instruction family ("unary", "binary", ...).
    instr: str | None = None
    #: Memory-bound: under balanced checkpointing its output is recomputed in backward.
    recompute: bool = False
    #: A broadcast view the Fusion layer may fold into the elementwise ops reading it.
    absorbable: bool = False
    #: May fail on the values at run time (an index out of range): keep the record location.
    checks_data: bool = False
    #: The shape rule may return an `Out` with normalized arguments or `same=True` (movement
    #: ops, reductions): recorders honour them. Other rules return `(shape, dtype)`.
    normalizes: bool = False
    #: Composites: the op written with primitives of any backend `B`, `decompose(B, *args)`.
    decompose: Callable | None = None
    #: The user API: `Tensor.<method>` and `lazyt.<function>` are generated for the op.
    #: `frontend(entry, *args, **kwargs)` turns user arguments (negative dims, Python
    #: numbers, dtype promotion) into the op's and calls `entry`, the op's Dispatch entry;
    #: without one the entry is called as it is.
    method: str | None = None
    function: str | None = None
    frontend: Callable | None = None
    doc: str = ""
    _by_name: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._by_name = {p.name: p for p in self.params}
        if self.fuse is Fuse.ELEMENTWISE and self.instr is None:
            raise LazytError(f"{self.name}: an elementwise op names its instruction family")
        if self.fuse is Fuse.ELEMENTWISE and self.decompose is not None:
            raise LazytError(f"{self.name}: a composite is recorded as one opaque op or as "
                             "its primitives, never as one elementwise instruction")

    # ------------------------------------------------------------------ queries
    @property
    def is_composite(self) -> bool:
        return self.decompose is not None

    @property
    def label(self) -> str:  # what the Fusion IR and its reports call the op
        return self.name

    @property
    def elementwise(self) -> bool:
        return self.fuse is Fuse.ELEMENTWISE

    def param(self, name: str) -> Param:
        return self._by_name[name]

    @property
    def tensor_params(self) -> tuple:
        return tuple(p for p in self.params if p.kind.is_tensor)

    def signature(self) -> str:
        """The parameters as written in a generated `def`."""
        return ", ".join(p.source for p in self.params)

    def call_args(self) -> str:
        return ", ".join(p.name for p in self.params)

    def defaults(self) -> dict:
        return {f"_d_{p.name}": p.default for p in self.params if p.default is not REQUIRED}

    def __repr__(self) -> str:
        kind = "composite" if self.is_composite else "primitive"
        return f"OpDef({self.name}({self.signature()}), {kind}, {self.fuse.value})"


def generate(name: str, source: str, namespace: dict, qualname: str, doc: str = "") -> Callable:
    """Compile one generated function (layers generate an op's entry with the op's own
    parameters, so a call costs what a hand-written one would)."""
    ns = dict(namespace)
    filename = f"<lazyt {qualname}>"
    # tracebacks show generated lines too
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    fn = ns[name]
    fn.__qualname__ = qualname
    fn.__doc__ = doc
    return fn


# ---------------------------------------------------------------------------- the registry
_OPS: dict[str, OpDef] = {}
_SUBSCRIBERS: list[Callable[[OpDef], None]] = []
_LOCK = threading.RLock()


def declare(op: OpDef) -> OpDef:
    """Add `op` to the registry and tell every subscribed layer."""
    with _LOCK:
        if op.name in _OPS:
            raise LazytError(f"declare: an op named {op.name!r} is declared already")
        _OPS[op.name] = op
        for fn in list(_SUBSCRIBERS):
            fn(op)
    return op


def subscribe(fn: Callable[[OpDef], None]) -> None:
    """Call `fn(op)` for every declared op, now and whenever one is declared later."""
    with _LOCK:
        _SUBSCRIBERS.append(fn)
        for op in list(_OPS.values()):
            fn(op)


def lookup(name: str) -> OpDef:
    op = _OPS.get(name)
    if op is None:
        raise LazytError(f"no op named {name!r} is declared")
    return op


def find(name: str) -> OpDef | None:
    return _OPS.get(name)


def all_ops() -> Iterator[OpDef]:
    return iter(list(_OPS.values()))


def primitives() -> list[OpDef]:
    return [op for op in _OPS.values() if not op.is_composite]


def composites() -> list[OpDef]:
    return [op for op in _OPS.values() if op.is_composite]


# ---------------------------------------------------------------------------- kernels
@dataclass(frozen=True)
class KernelSpec:
    """A base backend's fast kernel for a composite, and when the Fusion layer should record
    a call as that one kernel (`when(*args)` gets tensors as metas: `.shape`, `.dtype`)."""

    when: Callable | None = None


def kernel(fn: Callable | None = None, *, when: Callable | None = None):
    """Mark a backend method as the fast kernel of the composite of its name, recorded as one
    op only `when(*args)` holds: `@kernel(when=lambda x, weight, bias=None: bias is None)`.
    A method named after a composite is its kernel without this decorator too."""
    def mark(f):
        f.__lazyt_kernel__ = KernelSpec(when)
        return f
    return mark(fn) if fn is not None else mark


def kernel_when(method) -> Callable | None:
    spec = getattr(method, "__lazyt_kernel__", None)
    return None if spec is None else spec.when
