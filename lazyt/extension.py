"""Backend extensions: user-registered ops routed through the layer stack like built-in ones.

```python
@backend_extension(Autodiff, Cube, Numpy, Fusion)
class Backend(lazyt.Backend):
    @fusion(dtype="lhs", shape=output_shape)
    def fused_matmul_add_relu(lhs, rhs, bias): ...

@Backend.implement(Numpy)
def fused_matmul_add_relu(lhs, rhs, bias):       # numpy arrays in, numpy array out
    return np.maximum(lhs @ rhs + bias, 0)

out = Dispatch.fused_matmul_add_relu(a.into_dispatch(), b.into_dispatch(), c.into_dispatch())
```

`backend_extension` lists the layers the op routes through (`Autodiff`, `Fusion`) and the base
backends or families it supports (`Numpy`, `Cube`); impls come from `Backend.implement(X)`.
A call walks the device's stack top-down (DESIGN section 3):
- Autodiff: an untracked call passes through; a tracked one runs the registered Autodiff impl
  `impl(B, ckpt, *inputs)` (inputs as AutodiffTensors, `B` the inner backend with the extension's
  ops attached), or the op's default body; with neither, `MissingImplError` (never a silent detach).
- Fusion: the op is recorded lazily from its metadata (`@fusion(dtype=..., shape=...)` or
  `@fusion(meta=...)`) and runs on base primitives at drain time; `@fusion(default)` ops run
  their body of ordinary ops on the Fusion layer, so they fuse with their neighbours; without
  `Fusion` in the list, a hand-written `@Backend.implement(Fusion)` impl `impl(F, *inputs)` runs.
- Base backend: the most specific registered impl (`Numpy`, a concrete kernel backend, then the
  `Cube` family), else the default body, else `MissingImplError` naming the backends that have one.
"""
from __future__ import annotations

import contextvars
import inspect
import os
from dataclasses import dataclass
from typing import Callable

from . import config
from .backends.base import Backend
from .dispatch import Dispatch, DispatchTensor, common_device
from .dtype import DType
from .errors import LazytError, MetadataMismatchError, MissingImplError, ShapeError

__all__ = ["backend_extension", "fusion", "default", "TensorMeta", "ExtensionOp",
           "checking_meta", "op_of"]


class _Default:
    """Marker for `@fusion(default)`: the declared body is the op's default implementation."""

    def __repr__(self):
        return "default"


default = _Default()


@dataclass(frozen=True)
class TensorMeta:
    """A tensor output (or input) described by shape and dtype, for `@fusion(meta=...)`."""

    shape: tuple
    dtype: DType


@dataclass(frozen=True)
class FusionSpec:
    dtype: str | None = None
    shape: Callable | None = None
    meta: Callable | None = None
    default: bool = False
    data_dependent: bool = False


def fusion(arg=None, *, dtype: str | None = None, shape: Callable | None = None,
           meta: Callable | None = None, data_dependent: bool = False):
    """Declare how Fusion records an extension op without running it.

    `@fusion(dtype="lhs", shape=fn)`: one output, dtype copied from argument `lhs`, shape
    `fn(*args)` with each tensor argument replaced by its shape. `@fusion(meta=fn)`: `fn` gets a
    `TensorMeta` per tensor argument and returns the outputs (`TensorMeta`s and plain values,
    which are returned at once). `@fusion(default)`: the declared body `(B, *args)` is the op,
    written with backend helpers. `data_dependent=True`: the output shape depends on values, so
    the stream drains first and the op runs eagerly.
    """
    if arg is default:
        spec = FusionSpec(default=True, data_dependent=data_dependent)
    elif arg is not None:
        raise LazytError(f"fusion: unexpected positional argument {arg!r} (use "
                         "fusion(default), fusion(dtype=..., shape=...) or fusion(meta=...))")
    else:
        if meta is None and (dtype is None or shape is None) and not data_dependent:
            raise LazytError("fusion: give dtype= and shape=, or meta=, or use fusion(default)")
        if meta is not None and (dtype is not None or shape is not None):
            raise LazytError("fusion: meta= replaces dtype=/shape=; give one or the other")
        spec = FusionSpec(dtype=dtype, shape=shape, meta=meta, data_dependent=data_dependent)

    def mark(fn):
        fn.__lazyt_fusion__ = spec
        return fn
    return mark


# Contextvar set while a base impl runs: an impl gets primitives and must not re-enter Dispatch.
_in_impl: contextvars.ContextVar = contextvars.ContextVar("lazyt_in_extension_impl",
                                                          default=None)


def _selector_name(x) -> str:
    return getattr(x, "__name__", repr(x))


def _layer_classes():
    from .autodiff import Autodiff
    from .fusion import Fusion
    return Autodiff, Fusion


class ExtensionOp:
    """One op of an extension: its signature, metadata, and impls per selector."""

    def __init__(self, ext: "type", name: str, fn: Callable):
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
        self._runners: dict = {}  # (Fusion layer id, argument layout) -> drain-time runner

    # ---------------------------------------------------------------- metadata
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


# ---------------------------------------------------------------------- the decorator
def backend_extension(*selectors):
    """Turn a class of op declarations into an extension routed through `selectors`."""
    if not selectors:
        raise LazytError("backend_extension: list the layers and backends the ops support, "
                         "e.g. backend_extension(Autodiff, Cube, Numpy, Fusion)")

    def decorate(cls):
        names = [n for n, v in vars(cls).items()
                 if inspect.isfunction(v) and not n.startswith("_")]
        if not names:
            raise LazytError(f"backend_extension: {cls.__name__} declares no ops")
        cls.__lazyt_selectors__ = tuple(selectors)
        cls.__lazyt_ops__ = {}
        for n in names:
            op = ExtensionOp(cls, n, vars(cls)[n])
            if _has_selector(selectors, "Fusion") and op.spec is None:
                raise LazytError(f"{cls.__name__}.{n}: the extension routes through Fusion, so "
                                 "the op needs @fusion(dtype=..., shape=...), @fusion(meta=...) "
                                 "or @fusion(default)")
            if hasattr(Dispatch, n) and not getattr(getattr(Dispatch, n), "__lazyt_ext__", None):
                raise LazytError(f"backend_extension: op name {n!r} clashes with a built-in "
                                 "Dispatch op")
            cls.__lazyt_ops__[n] = op
            setattr(Dispatch, n, staticmethod(_make_entry(op)))
        cls.implement = classmethod(_implement)
        return cls
    return decorate


def _has_selector(selectors, name: str) -> bool:
    return any(_selector_name(s) == name for s in selectors)


def _implement(cls, selector, name: str | None = None):
    """`@Backend.implement(X)`: register the decorated function as op `name` for `X`."""
    def register(fn):
        op_name = name or fn.__name__
        op = cls.__lazyt_ops__.get(op_name)
        if op is None:
            raise LazytError(f"implement: {cls.__name__} declares no op {op_name!r}; it has "
                             f"{sorted(cls.__lazyt_ops__)}")
        sel = _selector_name(selector)
        if sel not in ("Autodiff", "Fusion") and not (
                isinstance(selector, type) and issubclass(selector, Backend)):
            raise LazytError(f"implement: {selector!r} is not a backend, family or layer")
        if sel == "Fusion" and _has_selector(cls.__lazyt_selectors__, "Fusion"):
            raise LazytError(f"implement: {cls.__name__} routes through Fusion from metadata; "
                             "leave Fusion out of backend_extension(...) to register a "
                             "hand-written Fusion impl")
        op.impls[selector] = fn
        return fn
    return register


def _make_entry(op: ExtensionOp):
    def entry(*args, **kwargs):
        return call(op, args, kwargs)
    entry.__name__ = op.name
    entry.__qualname__ = f"Dispatch.{op.name}"
    entry.__doc__ = f"Extension op {op.ext.__name__}.{op.name}{op.signature}"
    entry.__lazyt_ext__ = op
    return entry


def op_of(op) -> ExtensionOp:
    """The ExtensionOp behind `Dispatch.<name>` (or the op itself)."""
    if isinstance(op, ExtensionOp):
        return op
    ext = getattr(op, "__lazyt_ext__", None)
    if ext is None:
        raise LazytError(f"expected an extension op (Dispatch.<name>), got {op!r}")
    return ext


# ---------------------------------------------------------------------- routing
def call(op: ExtensionOp, args, kwargs):
    """Dispatch entry: bind, check devices and metadata, route down the stack, wrap outputs."""
    if _in_impl.get() is not None:
        raise LazytError(f"{op.name}: called through Dispatch from inside the impl of "
                         f"{_in_impl.get()}; at execution time an impl receives base-backend "
                         "primitives and must call backend functions on them")
    try:
        bound = op.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise LazytError(f"{op.name}: {e} (signature {op.signature})") from None
    bound.apply_defaults()
    values = [bound.arguments[n] for n in op.param_names]
    is_tensor = [isinstance(v, DispatchTensor) for v in values]
    tensors = [v for v, t in zip(values, is_tensor) if t]
    if not tensors:
        raise LazytError(f"{op.name}: expected at least one tensor argument")
    dev = common_device(op.name, tensors)
    be = dev.backend
    metas = [TensorMeta(tuple(be.shape_of(v.primitive)), be.dtype_of(v.primitive)) if t else None
             for v, t in zip(values, is_tensor)]
    declared = op.outputs_meta(values, is_tensor, metas)  # raises ShapeError at record time
    rep = next((v for v, m in zip(values, metas) if m is not None and m.dtype.is_float),
               tensors[0])
    prims = [v.primitive if t else v for v, t in zip(values, is_tensor)]
    out = route(be, op, prims, is_tensor, declared)
    return _wrap_outputs(out, declared, rep, dev, be)


def _wrap_outputs(out, declared, rep, dev, be):
    cls = rep._result_type
    if isinstance(out, tuple) or isinstance(out, list):
        decl = declared if isinstance(declared, (tuple, list)) else [None] * len(out)
        return tuple(cls(o, dev) if (isinstance(d, TensorMeta) or (d is None and _is_prim(o)))
                     else o for o, d in zip(out, decl))
    return cls(out, dev)


def _is_prim(x) -> bool:
    return not isinstance(x, (bool, int, float, str, bytes, type(None), dict, tuple, list,
                              DType))


def route(backend, op: ExtensionOp, prims: list, is_tensor: list, declared):
    """Run `op` on `backend` (any layer of a stack) with its primitives."""
    Autodiff, Fusion = _layer_classes()
    if isinstance(backend, Autodiff):
        return _route_autodiff(backend, op, prims, is_tensor, declared)
    if isinstance(backend, Fusion):
        return _route_fusion(backend, op, prims, is_tensor, declared)
    return _route_base(backend, op, prims, is_tensor, declared)


def _find_impl(op: ExtensionOp, backend) -> Callable | None:
    best, best_depth = None, None
    mro = type(backend).__mro__
    for sel, fn in op.impls.items():
        if isinstance(sel, type) and isinstance(backend, sel):
            depth = mro.index(sel)
            if best_depth is None or depth < best_depth:
                best, best_depth = fn, depth
    return best


def _route_base(backend, op, prims, is_tensor, declared):
    impl = _find_impl(op, backend)
    if impl is None:
        if op.body is not None:
            return op.body(ExtensionView(backend, op.ext), *prims)
        have = sorted(_selector_name(s) for s in op.impls if _selector_name(s) not in
                      ("Autodiff", "Fusion"))
        raise MissingImplError(
            f"{op.name}: no implementation for backend {type(backend).__name__}; "
            f"implemented for: {', '.join(have) if have else 'no backend yet'} "
            f"(register one with @{op.ext.__name__}.implement(...))")
    token = _in_impl.set(op.name)
    try:
        out = impl(*prims)
    finally:
        _in_impl.reset(token)
    if declared is not None and check_meta_enabled():
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
            is_tensor = [_is_prim(v) for v in values]
            metas = [TensorMeta(tuple(backend.shape_of(v)), backend.dtype_of(v)) if t else None
                     for v, t in zip(values, is_tensor)]
            declared = op.outputs_meta(values, is_tensor, metas)
            return route(backend, op, values, is_tensor, declared)
        return run

    def __repr__(self):
        return f"ExtensionView({type(self._backend).__name__}, {self._ext.__name__})"


def _route_autodiff(backend, op, prims, is_tensor, declared):
    from .autodiff import is_grad_enabled
    tracked = is_grad_enabled() and any(
        t and backend.is_tracked(p) for p, t in zip(prims, is_tensor))
    if not tracked:  # untracked calls pass through the layer
        plain = [backend.detach(p) if t else p for p, t in zip(prims, is_tensor)]
        return route(backend.inner, op, plain, is_tensor, declared)
    impl = op.impls.get(_autodiff_selector())
    if impl is not None:
        args = [backend.view(p) if t else p for p, t in zip(prims, is_tensor)]
        B, ckpt = _autodiff_context(backend, op.ext)
        return impl(B, ckpt, *args)
    if op.body is not None:  # a body of ordinary ops differentiates itself
        return op.body(ExtensionView(backend, op.ext), *prims)
    raise MissingImplError(
        f"{op.name}: an input requires grad but the op has no Autodiff impl; register one with "
        f"@{op.ext.__name__}.implement(Autodiff), or call it on detached tensors / under "
        "lazyt.no_grad()")


_AUTODIFF_CONTEXTS: dict = {}


def _autodiff_context(backend, ext):
    """`(B, ckpt)` for an Autodiff impl: the inner backend with the extension's ops attached,
    and the layer's checkpointing strategy carrying that same view, so the backward step's
    `ops.backend` can call the extension's ops too."""
    key = (id(backend), ext)
    ctx = _AUTODIFF_CONTEXTS.get(key)
    if ctx is None:
        from .autodiff import CheckpointStrategy
        view = ExtensionView(backend.inner, ext)
        ctx = _AUTODIFF_CONTEXTS[key] = (view, CheckpointStrategy(backend.ckpt.name, view))
    return ctx


def _autodiff_selector():
    from .autodiff import Autodiff
    return Autodiff


def _fusion_selector():
    from .fusion import Fusion
    return Fusion


def _route_fusion(backend, op, prims, is_tensor, declared):
    if op.body is not None:  # ordinary ops: recorded one by one, fused with their neighbours
        return op.body(ExtensionView(backend, op.ext), *prims)
    hand = op.impls.get(_fusion_selector())
    if hand is not None:
        return hand(backend, *prims)
    if op.spec is None:
        raise MissingImplError(
            f"{op.name}: the extension does not route through Fusion and registers no "
            f"Fusion impl; add Fusion to backend_extension(...) with @fusion metadata, or "
            f"register @{op.ext.__name__}.implement(Fusion)")
    tensors = [p for p, t in zip(prims, is_tensor) if t]
    others = tuple(p for p, t in zip(prims, is_tensor) if not t)
    runner = _runner(backend, op, tuple(is_tensor), declared)
    if op.spec.data_dependent or declared is None:
        out = backend.eager(runner, tensors, others)
        return tuple(out) if isinstance(out, list) else out
    decl = declared if isinstance(declared, (tuple, list)) else (declared,)
    metas = [(d.shape, d.dtype) for d in decl if isinstance(d, TensorMeta)]
    outs = backend.custom(op.name, runner, tensors, metas, others, location=_user_location())
    if not isinstance(declared, (tuple, list)):
        return outs[0]
    it = iter(outs)
    return tuple(next(it) if isinstance(d, TensorMeta) else d for d in declared)


def _runner(backend, op: ExtensionOp, layout: tuple, declared):
    """A stable function (cached per layer and argument layout, so the plan cache can key on
    it) that runs `op` on the inner backend at drain time with base primitives."""
    key = (id(backend), layout)
    fn = op._runners.get(key)
    if fn is not None:
        return fn
    inner = backend.inner
    structured = isinstance(declared, (tuple, list))
    mask = tuple(isinstance(d, TensorMeta) for d in declared) if structured else None

    def run(*flat):
        tensors, others = iter(flat[:sum(layout)]), iter(flat[sum(layout):])
        values = [next(tensors) if t else next(others) for t in layout]
        metas = [TensorMeta(tuple(inner.shape_of(v)), inner.dtype_of(v)) if t else None
                 for v, t in zip(values, layout)]
        out = route(inner, op, values, list(layout), op.outputs_meta(values, list(layout), metas)
                    if check_meta_enabled() else None)
        if mask is None:
            return out
        return [o for o, m in zip(out, mask) if m]
    run.__name__ = f"run_{op.name}"
    op._runners[key] = fn = run
    return fn


_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_location() -> str | None:
    """"file:line" of the innermost caller outside lazyt (where the user recorded the op)."""
    import sys
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None
