"""Extension ops below the layers: what one is (`ExtensionOp`), how a base backend runs it, and
the metadata checks. `lazyt.extension` (above the layers) holds the user-facing decorators;
each layer routes an extension op through its own `run_extension` (Autodiff: tracked calls run
the registered Autodiff impl; Fusion: recorded from the metadata), ending in `run_base` here."""
from __future__ import annotations

import contextvars
import inspect
from dataclasses import dataclass
from typing import Callable

from .. import config
from ..dtype import DType
from ..errors import LazytError, MetadataMismatchError, MissingImplError, ShapeError
from .meta import TensorMeta


class _Default:
    """Marker for `@fusion(default)`: the declared body is the op's default implementation."""

    def __repr__(self):
        return "default"


default = _Default()


@dataclass(frozen=True)
class FusionSpec:
    dtype: str | None = None
    shape: Callable | None = None
    meta: Callable | None = None
    default: bool = False
    data_dependent: bool = False


def selector_name(x) -> str:
    return getattr(x, "__name__", repr(x))


class ExtensionOp:
    """One op of an extension: its signature, metadata, and impls per selector."""

    def __init__(self, ext: type, name: str, fn: Callable):
        self.ext = ext
        self.name = name
        self.spec: FusionSpec | None = getattr(fn, "__lazyt_fusion__", None)
        params = list(inspect.signature(fn).parameters.values())
        self.body = None
        if self.spec is not None and self.spec.default:
            if not params:
                raise LazytError(f"{name}: a fusion(default) body takes the backend as its "
                                 "first parameter: def op(B, x, ...)")
            self.body = fn
            params = params[1:]
        self.signature = inspect.Signature(params)
        self.param_names = [p.name for p in params]
        self.impls: dict = {}  # selector -> callable
        self.runners: dict = {}  # (Fusion layer id, argument layout) -> drain-time runner

    def impl_for(self, layer: str):
        """The impl registered for the layer named `layer` ("Autodiff", "Fusion"), or None."""
        for sel, fn in self.impls.items():
            if selector_name(sel) == layer:
                return fn
        return None

    def outputs_meta(self, values: list, is_tensor: list, metas: list):
        """The declared outputs for inputs described by `metas` (TensorMeta per tensor arg);
        a single TensorMeta, or a tuple of TensorMetas and plain values. None without metadata.
        Raises ShapeError from a callback's own checks."""
        spec = self.spec
        if spec is None or spec.default or (spec.meta is None and spec.shape is None):
            return None
        try:
            if spec.meta is not None:
                args = [m if t else v for v, t, m in zip(values, is_tensor, metas)]
                return spec.meta(*args)
            args = [m.shape if t else v for v, t, m in zip(values, is_tensor, metas)]
            shape = tuple(spec.shape(*args))
        except LazytError:
            raise
        except Exception as e:
            raise ShapeError(f"{self.name}: metadata callback rejected inputs "
                             f"{_describe(values, is_tensor, metas)}: {e}") from e
        try:
            src = self.param_names.index(spec.dtype)
        except ValueError:
            raise LazytError(f"{self.name}: fusion(dtype={spec.dtype!r}) names no parameter of "
                             f"{self.param_names}") from None
        if not is_tensor[src]:
            raise ShapeError(f"{self.name}: fusion(dtype={spec.dtype!r}) must name a tensor "
                             "argument")
        return TensorMeta(shape, metas[src].dtype)

    def __repr__(self):
        return f"ExtensionOp({self.ext.__name__}.{self.name})"


def _describe(values, is_tensor, metas) -> str:
    parts = []
    for v, t, m in zip(values, is_tensor, metas):
        parts.append(f"{tuple(m.shape)}:{m.dtype.name}" if t else repr(v))
    return "(" + ", ".join(parts) + ")"


# ---------------------------------------------------------------------------- metadata checks
_force_check_meta: contextvars.ContextVar = contextvars.ContextVar("lazyt_check_meta",
                                                                   default=False)


def check_meta_enabled() -> bool:
    """`LAZYT_CHECK_META=1`, or inside `checking_meta()`: compare real outputs with metadata."""
    return _force_check_meta.get() or config.check_meta()


class checking_meta:
    """Context manager turning metadata validation on (what `LAZYT_CHECK_META=1` does)."""

    def __enter__(self):
        self._token = _force_check_meta.set(True)
        return self

    def __exit__(self, *exc):
        _force_check_meta.reset(self._token)
        return False


def compare_meta(op: ExtensionOp, declared, outputs, backend) -> None:
    """Raise MetadataMismatchError when real outputs differ from the declared ones."""
    decl = declared if isinstance(declared, (tuple, list)) else (declared,)
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    if len(decl) != len(outs):
        raise MetadataMismatchError(f"{op.name}: metadata declares {len(decl)} outputs, the "
                                    f"impl returned {len(outs)}")
    for i, (d, o) in enumerate(zip(decl, outs)):
        if not isinstance(d, TensorMeta):
            continue
        shape, dtype = tuple(backend.shape_of(o)), backend.dtype_of(o)
        if shape != tuple(d.shape) or dtype is not d.dtype:
            raise MetadataMismatchError(
                f"{op.name}: output {i} is {shape}:{dtype.name} but the metadata declared "
                f"{tuple(d.shape)}:{d.dtype.name}")


# ---------------------------------------------------------------------------- running
#: Set while a base impl runs: an impl gets primitives and must not re-enter Dispatch.
in_impl: contextvars.ContextVar = contextvars.ContextVar("lazyt_in_extension_impl",
                                                         default=None)


def is_primitive(x) -> bool:
    return not isinstance(x, (bool, int, float, str, bytes, type(None), dict, tuple, list,
                              DType))


def route(backend, op: ExtensionOp, args: list, is_tensor: list, declared):
    """Run `op` on `backend` (any layer of a stack): each layer routes it its own way."""
    return backend.run_extension(op, args, is_tensor, declared)


def _find_impl(op: ExtensionOp, backend) -> Callable | None:
    best, best_depth = None, None
    mro = type(backend).__mro__
    for sel, fn in op.impls.items():
        if isinstance(sel, type) and isinstance(backend, sel):
            depth = mro.index(sel)
            if best_depth is None or depth < best_depth:
                best, best_depth = fn, depth
    return best


def run_base(backend, op: ExtensionOp, prims: list, is_tensor: list, declared):
    """A base backend runs the most specific impl registered for its class, else the op's
    default body, else raises `MissingImplError` naming the backends that have one."""
    impl = _find_impl(op, backend)
    if impl is None:
        if op.body is not None:
            return op.body(ExtensionView(backend, op.ext), *prims)
        have = sorted(selector_name(s) for s in op.impls if selector_name(s) not in
                      ("Autodiff", "Fusion"))
        raise MissingImplError(
            f"{op.name}: no implementation for backend {type(backend).__name__}; "
            f"implemented for: {', '.join(have) if have else 'no backend yet'} "
            f"(register one with @{op.ext.__name__}.implement(...))")
    token = in_impl.set(op.name)
    try:
        out = impl(*prims)
    finally:
        in_impl.reset(token)
    if declared is not None:   # shapes and dtypes: always (a tuple compare per output)
        compare_meta(op, declared, out, backend)
    return out


class ExtensionView:
    """A backend with an extension's ops attached: `B.float_matmul(...)` calls the backend,
    `B.fused_matmul_add_relu(...)` routes the extension op down from that backend."""

    __slots__ = ("_backend", "_ext")

    def __init__(self, backend, ext):
        self._backend = backend
        self._ext = ext

    def __getattr__(self, name):
        op = self._ext.__lazyt_ops__.get(name)
        if op is None:
            return getattr(self._backend, name)
        backend = self._backend

        def run(*args, **kwargs):
            bound = op.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = [bound.arguments[n] for n in op.param_names]
            is_tensor = [is_primitive(v) for v in values]
            metas = [TensorMeta(tuple(backend.shape_of(v)), backend.dtype_of(v)) if t else None
                     for v, t in zip(values, is_tensor)]
            declared = op.outputs_meta(values, is_tensor, metas)
            return route(backend, op, values, is_tensor, declared)
        return run

    def __repr__(self):
        return f"ExtensionView({type(self._backend).__name__}, {self._ext.__name__})"
