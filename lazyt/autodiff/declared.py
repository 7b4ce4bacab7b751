"""How the Autodiff layer records a declared op (`lazyt.ops`): one generic rule for every op.

A call with no tracked input is one plain call to the inner backend. A tracked call runs the
inner op, then records a `DeclaredBackward` step through the op-author API (`prepare` ...):
compute-bound ops save what their gradient rule reads, memory-bound ones (`OpDef.recompute`)
are recomputed from their retro-forward under balanced checkpointing. In backward the step
calls the op's `Grad` rule and sums each input's gradient back to the input's shape.
Composites without a `Grad` are differentiated through their primitives.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ops import GradContext, OpDef, ParamKind
from .ops import _GRAD_ENABLED, AutodiffTensor, Backward, Tracked, broadcast_shape, untracked_view

AT = AutodiffTensor
_TENSOR = (ParamKind.TENSOR, ParamKind.OPERAND, ParamKind.INDEX, ParamKind.OPTIONAL)


def _plain(v):
    return v.primitive if type(v) is AT else v


class _State:
    """What a tracked op keeps for backward."""

    __slots__ = ("args", "needs", "shapes", "dtypes", "saved", "slots", "out")

    def __init__(self, args, needs, shapes, dtypes, saved, slots, out):
        self.args = args      # non-tensor arguments by name
        self.needs = needs    # tensor name -> bool (list of bools for a sequence)
        self.shapes = shapes
        self.dtypes = dtypes
        self.saved = saved    # read name -> NodeId | ("scalar", value) | [NodeId]
        self.slots = slots    # tensor name -> parent position (list for a sequence)
        self.out = out


class DeclaredBackward(Backward):
    """The backward step of a declared op: its `Grad` rule, then each gradient summed back to
    its input's shape and registered on that input's node."""

    def __init__(self, op: OpDef):
        self.op = op

    def backward(self, ops, grads, checkpointer):
        g = grads.consume(ops.node)
        st: _State = ops.state
        B = ops.backend
        fetched: dict = {}

        def saved(name):
            if name not in fetched:
                ref = st.saved[name]
                if type(ref) is tuple:          # a scalar operand: its value
                    fetched[name] = ref[1]
                elif type(ref) is list:
                    fetched[name] = [checkpointer.retrieve_node_output(i) for i in ref]
                else:
                    fetched[name] = checkpointer.retrieve_node_output(ref)
            return fetched[name]

        ctx = GradContext(st.args, st.needs, st.shapes, st.dtypes, saved, st.out)
        parents = ops.parents
        for name, grad in self.op.grad.fn(B, g, ctx).items():
            slot = st.slots.get(name)
            if slot is None or grad is None:
                continue
            if type(slot) is list:
                for s, gi, shape in zip(slot, grad, st.shapes[name]):
                    if gi is not None and parents[s] is not None:
                        grads.register(parents[s], broadcast_shape(B, gi, shape))
            elif parents[slot] is not None:
                grads.register(parents[slot], broadcast_shape(B, grad, st.shapes[name]))

    def __repr__(self) -> str:
        return f"DeclaredBackward({self.op.name})"


def tracked(ad, op: OpDef, args: tuple):
    """Run `op` with `args` (in parameter order; tensors may be AutodiffTensors) on the inner
    backend, recording its backward step when a differentiable input is tracked."""
    B = ad.inner
    plain = [_plain(a) if p.kind.is_tensor and p.kind is not ParamKind.TENSORS
             else [_plain(t) for t in a] if p.kind is ParamKind.TENSORS else a
             for p, a in zip(op.params, args)]
    run = getattr(B, op.name)
    if op.grad is None or not _GRAD_ENABLED.get():
        return run(*plain)
    # the tensors that could carry a gradient, one view (and parent node) each
    views, slots, needs, shapes, dtypes, others = [], {}, {}, {}, {}, {}
    any_tracked = False
    for p, a in zip(op.params, args):
        if p.kind is ParamKind.TENSORS:
            idx, need, shp, dts = [], [], [], []
            for t in a:
                v = t if type(t) is AT else untracked_view(B, t)
                idx.append(len(views))
                views.append(v)
                tr = p.differentiable and v.is_tracked()
                any_tracked |= tr
                need.append(tr)
                shp.append(tuple(B.shape_of(v.primitive)))
                dts.append(B.dtype_of(v.primitive))
            slots[p.name], needs[p.name], shapes[p.name], dtypes[p.name] = idx, need, shp, dts
        elif p.kind in _TENSOR and a is not None and (p.kind is not ParamKind.OPERAND
                                                      or type(a) is AT or _is_tensor(B, a)):
            v = a if type(a) is AT else untracked_view(B, a)
            tr = p.differentiable and p.kind is not ParamKind.INDEX and v.is_tracked()
            any_tracked |= tr
            if p.kind is not ParamKind.INDEX:
                slots[p.name] = len(views)
            else:
                slots[p.name] = None
            views.append(v)
            needs[p.name] = tr
            shapes[p.name] = tuple(B.shape_of(v.primitive))
            dtypes[p.name] = B.dtype_of(v.primitive)
        elif p.kind in _TENSOR:
            needs[p.name] = False
            others[p.name] = a
        else:
            others[p.name] = a
    if not any_tracked:
        return run(*plain)
    out = run(*plain)
    if not B.dtype_of(out).is_float:  # bools, indices and integers carry no gradient
        return out
    backward = DeclaredBackward(op)
    prep = backward.prepare(ad.ckpt, [v.node for v in views])
    if op.recompute:
        prep = prep.memory_bound().retro_forward(_retro(B, op, args)).parents(views)
    else:
        prep = prep.compute_bound()
    match prep.stateful():
        case Tracked(t):
            args_ns = SimpleNamespace(**others)
            st = _State(args_ns, needs, shapes, dtypes, {}, slots, out if op.grad.output
                        else None)
            ctx = GradContext(args_ns, needs, shapes, dtypes, None)
            by_name = _views_by_name(op, views, slots)
            for name in op.grad.read_names(ctx):
                if name in others:
                    st.saved[name] = ("scalar", others[name])
                else:
                    v = by_name[name]
                    st.saved[name] = [t.checkpoint(x) for x in v] if type(v) is list \
                        else t.checkpoint(v)
            return t.finish(st, out)
        case _:
            return out


def _is_tensor(B, a) -> bool:
    return not isinstance(a, (bool, int, float, np.generic))


def _views_by_name(op: OpDef, views: list, slots: dict) -> dict:
    """Tensor name -> its view(s), index tensors included (they have no parent slot)."""
    out, k = {}, 0
    for p in op.params:
        if p.kind is ParamKind.TENSORS:
            n = len(slots[p.name])
            out[p.name] = views[k:k + n]
            k += n
        elif p.name in slots:
            out[p.name] = views[k]
            k += 1
    return out


def _retro(B, op: OpDef, args: tuple):
    """The op as a function of its tensor inputs' values (for recomputation in backward)."""
    run = getattr(B, op.name)
    layout = []
    for p, a in zip(op.params, args):
        if p.kind is ParamKind.TENSORS:
            layout.append(("many", len(a)))
        elif p.kind in _TENSOR and a is not None and (
                p.kind is not ParamKind.OPERAND or type(a) is AT or _is_tensor(B, a)):
            layout.append(("one", None))
        else:
            layout.append(("value", a))

    def retro(*values):
        it = iter(values)
        call = []
        for kind, v in layout:
            if kind == "many":
                call.append([next(it) for _ in range(v)])
            elif kind == "one":
                call.append(next(it))
            else:
                call.append(v)
        return run(*call)
    return retro


def composite(ad, op: OpDef, args: tuple):
    """A composite with a tracked argument: its own gradient rule when it declares one, else
    its primitives on this layer (each differentiated); under no_grad, tracked values count
    as plain ones and the inner backend (perhaps with a faster kernel) runs it."""
    if _GRAD_ENABLED.get():
        if op.grad is not None:
            return tracked(ad, op, args)
        return op.decompose(ad, *args)
    plain = [_plain(a) for a in args]
    return getattr(ad.inner, op.name)(*plain)
