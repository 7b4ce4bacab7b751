"""How the Autodiff layer runs an extension op (`lazyt.extension`): an untracked call passes
through; a tracked one runs the op's registered Autodiff impl `impl(B, ckpt, *inputs)`, or its
default body of ordinary ops; with neither, `MissingImplError` (never a silent detach)."""
from __future__ import annotations

from ..errors import MissingImplError
from ..ops.extension import ExtensionView, route
from .checkpoint import CheckpointStrategy
from .ops import _GRAD_ENABLED


def run(ad, op, prims: list, is_tensor: list, declared):
    tracked = _GRAD_ENABLED.get() and any(t and ad.is_tracked(p)
                                           for p, t in zip(prims, is_tensor))
    if not tracked:  # untracked calls pass through the layer
        plain = [ad.detach(p) if t else p for p, t in zip(prims, is_tensor)]
        return route(ad.inner, op, plain, is_tensor, declared)
    impl = op.impl_for("Autodiff")
    if impl is not None:
        args = [ad.view(p) if t else p for p, t in zip(prims, is_tensor)]
        B, ckpt = _context(ad, op.ext)
        return impl(B, ckpt, *args)
    if op.body is not None:  # a body of ordinary ops differentiates itself
        return op.body(ExtensionView(ad, op.ext), *prims)
    raise MissingImplError(
        f"{op.name}: an input requires grad but the op has no Autodiff impl; register one with "
        f"@{op.ext.__name__}.implement(Autodiff), or call it on detached tensors / under "
        "lazyt.no_grad()")


def _context(ad, ext):
    """`(B, ckpt)` for an Autodiff impl: the inner backend with the extension's ops attached,
    and the layer's checkpointing strategy carrying that same view, so the backward step's
    `ops.backend` can call the extension's ops too (made once per layer and extension)."""
    ctx = ad._extension_contexts.get(ext)
    if ctx is None:
        view = ExtensionView(ad.inner, ext)
        ctx = ad._extension_contexts[ext] = (view, CheckpointStrategy(ad.ckpt.name, view))
    return ctx
