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
A call walks the device's stack top-down, each layer with its own
`run_extension` (`lazyt/autodiff/extension.py`, `lazyt/fusion/extension.py`, the base rule in
`lazyt/ops/extension.py`):
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

import inspect
from typing import Callable

from . import capture_state as _capture
from .backends.base import Backend
from .dispatch import Dispatch, DispatchTensor, common_device
from .dtype import DType  # noqa: F401  (extension authors import it from here too)
from .errors import (LazytError, MetadataMismatchError, MissingImplError,  # noqa: F401
                     ShapeError)
from .fusion.stream import user_location as _user_location  # noqa: F401  (kept for extensions)
from .ops.extension import (ExtensionOp, ExtensionView, FusionSpec, TensorMeta,  # noqa: F401
                            check_meta_enabled, checking_meta, compare_meta, default, in_impl,
                            is_primitive, route, selector_name)

__all__ = ["backend_extension", "fusion", "default", "TensorMeta", "ExtensionOp",
           "checking_meta", "op_of"]


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
            built_in = getattr(getattr(Dispatch, n, None), "__lazyt_op__", None)
            if (built_in is not None and not built_in.is_composite) or (
                    hasattr(Dispatch, n) and built_in is None
                    and not getattr(getattr(Dispatch, n), "__lazyt_ext__", None)):
                raise LazytError(f"backend_extension: op name {n!r} clashes with a built-in "
                                 "Dispatch op (a composite's name may be taken, a primitive's "
                                 "may not)")
            cls.__lazyt_ops__[n] = op
            setattr(Dispatch, n, staticmethod(_make_entry(op)))
        cls.implement = classmethod(_implement)
        return cls
    return decorate


def _has_selector(selectors, name: str) -> bool:
    return any(selector_name(s) == name for s in selectors)


def _implement(cls, selector, name: str | None = None):
    """`@Backend.implement(X)`: register the decorated function as op `name` for `X`."""
    def register(fn):
        op_name = name or fn.__name__
        op = cls.__lazyt_ops__.get(op_name)
        if op is None:
            raise LazytError(f"implement: {cls.__name__} declares no op {op_name!r}; it has "
                             f"{sorted(cls.__lazyt_ops__)}")
        sel = selector_name(selector)
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


# ---------------------------------------------------------------------- the Dispatch entry
def call(op: ExtensionOp, args, kwargs):
    """Dispatch entry: bind, check devices and metadata, route down the stack, wrap outputs."""
    if in_impl.get() is not None:
        raise LazytError(f"{op.name}: called through Dispatch from inside the impl of "
                         f"{in_impl.get()}; at execution time an impl receives base-backend "
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
    _capture.saw_all(tensors)
    prims = [v.primitive if t else v for v, t in zip(values, is_tensor)]
    out = route(be, op, prims, is_tensor, declared)
    out = _wrap_outputs(out, declared, rep, dev)
    for o in (out if isinstance(out, tuple) else (out,)):
        if isinstance(o, DispatchTensor):
            _capture.made(o)
    return out


def _wrap_outputs(out, declared, rep, dev):
    cls = rep._result_type
    if isinstance(out, tuple) or isinstance(out, list):
        decl = declared if isinstance(declared, (tuple, list)) else [None] * len(out)
        return tuple(cls(o, dev) if (isinstance(d, TensorMeta) or (d is None and is_primitive(o)))
                     else o for o, d in zip(out, decl))
    return cls(out, dev)
