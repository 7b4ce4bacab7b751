"""How the Fusion layer runs an extension op (`lazyt.extension`): a `fusion(default)` body is
recorded op by op (it fuses with its neighbours); a hand-written `implement(Fusion)` impl runs
as written; otherwise the op is recorded lazily from its metadata and runs on base primitives
when the stream drains (eagerly, after a drain, when its output shape depends on data)."""
from __future__ import annotations

from ..errors import MissingImplError
from ..ops.extension import ExtensionView, TensorMeta, check_meta_enabled, route
from .stream import user_location


def run(F, op, prims: list, is_tensor: list, declared):
    if op.body is not None:  # ordinary ops: recorded one by one, fused with their neighbours
        return op.body(ExtensionView(F, op.ext), *prims)
    hand = op.impl_for("Fusion")
    if hand is not None:
        return hand(F, *prims)
    if op.spec is None:
        raise MissingImplError(
            f"{op.name}: the extension does not route through Fusion and registers no "
            f"Fusion impl; add Fusion to backend_extension(...) with @fusion metadata, or "
            f"register @{op.ext.__name__}.implement(Fusion)")
    tensors = [p for p, t in zip(prims, is_tensor) if t]
    others = tuple(p for p, t in zip(prims, is_tensor) if not t)
    runner = _runner(F, op, tuple(is_tensor), declared)
    if op.spec.data_dependent or declared is None:
        out = F.eager(runner, tensors, others)
        return tuple(out) if isinstance(out, list) else out
    decl = declared if isinstance(declared, (tuple, list)) else (declared,)
    metas = [(d.shape, d.dtype) for d in decl if isinstance(d, TensorMeta)]
    outs = F.custom(op.name, runner, tensors, metas, others, location=user_location(2))
    if not isinstance(declared, (tuple, list)):
        return outs[0]
    it = iter(outs)
    return tuple(next(it) if isinstance(d, TensorMeta) else d for d in declared)


def _runner(F, op, layout: tuple, declared):
    """A stable function (one per layer, op and argument layout, so the plan cache can key on
    it) that runs `op` on the inner backend at drain time with base primitives."""
    key = (op, layout)
    fn = F._extension_runners.get(key)
    if fn is not None:
        return fn
    inner = F.inner
    structured = isinstance(declared, (tuple, list))
    mask = tuple(isinstance(d, TensorMeta) for d in declared) if structured else None
    n_tensors = sum(layout)

    def run(*flat):
        tensors, others = iter(flat[:n_tensors]), iter(flat[n_tensors:])
        values = [next(tensors) if t else next(others) for t in layout]
        metas = [TensorMeta(tuple(inner.shape_of(v)), inner.dtype_of(v)) if t else None
                 for v, t in zip(values, layout)]
        out = route(inner, op, values, list(layout), op.outputs_meta(values, list(layout), metas)
                    if check_meta_enabled() else None)
        if mask is None:
            return out
        return [o for o, m in zip(out, mask) if m]
    run.__name__ = f"run_{op.name}"
    F._extension_runners[key] = run
    return run
