"""How the Autodiff layer records a declared op (`lazyt.ops`): one generic rule for every op.

A call with no tracked input is one plain call to the inner backend. A tracked call runs the
inner op, then records a `DeclaredBackward` step through the op-author API (`prepare` ...):
compute-bound ops save what their gradient rule reads, memory-bound ones (`OpDef.recompute`)
are recomputed from their retro-forward under balanced checkpointing. In backward the step
calls the op's `Grad` rule and sums each input's gradient back to the input's shape.
Composites without a `Grad` are differentiated through their primitives.
"""
from __future__ import annotations

import numpy as np

from ..ops import GradContext, OpDef, ParamKind
from .node import Requirement
from .ops import _GRAD_ENABLED, AutodiffTensor, Backward, Tracked, broadcast_shape, untracked_view

AT = AutodiffTensor
_NONE = Requirement.NONE
_SCALARS = (bool, int, float, np.generic)
# parameter kinds as the hot loop sees them
_OTHER, _ONE, _MANY, _OPERAND = 0, 1, 2, 3
_KIND = {ParamKind.TENSOR: _ONE, ParamKind.INDEX: _ONE, ParamKind.OPTIONAL: _ONE,
         ParamKind.OPERAND: _OPERAND, ParamKind.TENSORS: _MANY,
         ParamKind.STATIC: _OTHER, ParamKind.VALUE: _OTHER}


class _Spec:
    """An op's parameters, prepared once for `tracked`: (name, kind, can get a gradient)."""

    __slots__ = ("params", "run_name")

    def __init__(self, op: OpDef):
        self.params = tuple((p.name, _KIND[p.kind],
                             p.differentiable and p.kind is not ParamKind.INDEX)
                            for p in op.params)
        self.run_name = op.name


_SPECS: dict = {}


class _State(GradContext):
    """What a tracked op keeps for backward; its gradient rule reads it as `ctx`."""

    __slots__ = ("slots",)  # tensor name -> parent position (a list for a sequence)


class DeclaredBackward(Backward):
    """The backward step of a declared op: its `Grad` rule, then each gradient summed back to
    its input's shape and registered on that input's node."""

    __slots__ = ("op",)

    def __init__(self, op: OpDef):
        self.op = op

    def backward(self, ops, grads, checkpointer):
        g = grads.consume(ops.node)
        st: _State = ops.state
        B = ops.backend
        fetched: dict = {}
        refs = st.refs

        def saved(name):
            if name not in fetched:
                ref = refs[name]
                if type(ref) is tuple:          # a scalar operand: its value
                    fetched[name] = ref[1]
                elif type(ref) is list:
                    fetched[name] = [checkpointer.retrieve_node_output(i) for i in ref]
                else:
                    fetched[name] = checkpointer.retrieve_node_output(ref)
            return fetched[name]

        st._saved = saved
        parents = ops.parents
        shapes = st._shapes
        for name, grad in self.op.grad.fn(B, g, st).items():
            slot = st.slots.get(name)
            if slot is None or grad is None:
                continue
            if type(slot) is list:
                for s, gi, shape in zip(slot, grad, shapes[name]):
                    if gi is not None and parents[s] is not None:
                        grads.register(parents[s], broadcast_shape(B, gi, shape))
            elif parents[slot] is not None:
                grads.register(parents[slot], broadcast_shape(B, grad, shapes[name]))
        st._saved = None

    def __repr__(self) -> str:
        return f"DeclaredBackward({self.op.name})"


def tracked(ad, op: OpDef, args: tuple):
    """Run `op` with `args` (in parameter order; tensors may be AutodiffTensors) on the inner
    backend, recording its backward step when a differentiable input is tracked."""
    B = ad.inner
    spec = _SPECS.get(op)
    if spec is None:
        spec = _SPECS[op] = _Spec(op)
    grad_on = op.grad is not None and _GRAD_ENABLED.get()
    plain = []
    views, slots, needs, shapes, dtypes, others, layout = [], {}, {}, {}, {}, _Args(), []
    named = {}  # tensor name -> its view (a list of views for a sequence)
    any_tracked = False
    for (name, kind, diff), a in zip(spec.params, args):
        if kind == _OTHER or a is None or (kind == _OPERAND and type(a) is not AT
                                           and isinstance(a, _SCALARS)):
            plain.append(a)
            others[name] = a
            layout.append(a)
            continue
        if kind == _MANY:
            idx, need, shp, dts = [], [], [], []
            prims = []
            for t in a:
                v = t if type(t) is AT else untracked_view(B, t)
                idx.append(len(views))
                views.append(v)
                tr = diff and v.node.requirement is not _NONE
                any_tracked |= tr
                need.append(tr)
                prims.append(v.primitive)
                shp.append(B.shape_of(v.primitive))
                dts.append(B.dtype_of(v.primitive))
            plain.append(prims)
            named[name] = views[len(views) - len(prims):]
            layout.append(_Many(len(prims)))
            slots[name], needs[name], shapes[name], dtypes[name] = idx, need, shp, dts
            continue
        v = a if type(a) is AT else untracked_view(B, a)
        p = v.primitive
        plain.append(p)
        layout.append(_ONE_TENSOR)
        tr = diff and v.node.requirement is not _NONE
        any_tracked |= tr
        slots[name] = len(views) if diff else None
        named[name] = v
        views.append(v)
        needs[name] = tr
        if tr:
            shapes[name] = B.shape_of(p)
            dtypes[name] = B.dtype_of(p)
    run = getattr(B, spec.run_name)
    out = run(*plain)
    if not (grad_on and any_tracked) or not B.dtype_of(out).is_float:
        return out  # untracked, or bools, indices and integers: no gradient
    backward = DeclaredBackward(op)
    prep = backward.prepare(ad.ckpt, [v.node for v in views])
    if op.recompute:
        prep = prep.memory_bound().retro_forward(_retro(run, layout)).parents(views)
    else:
        prep = prep.compute_bound()
    match prep.stateful():
        case Tracked(t):
            st = _State(others, needs, shapes, dtypes, None, out if op.grad.output else None)
            st.slots = slots
            for name in op.grad.read_names(st):
                if name in others:
                    st.refs[name] = ("scalar", others[name])
                else:
                    v = named[name]
                    st.refs[name] = [t.checkpoint(x) for x in v] if type(v) is list \
                        else t.checkpoint(v)
            return t.finish(st, out)
        case _:
            return out


class _Args(dict):
    """An op's non-tensor arguments by name, read as attributes by gradient rules
    (`ctx.args.dim`)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Many:
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n


_ONE_TENSOR = object()  # a layout entry: the next tensor value


def _retro(run, layout: list):
    """The op as a function of its tensor inputs' values (for recomputation in backward):
    `layout` holds, per parameter, `_ONE_TENSOR`, a `_Many` or the argument itself."""
    if all(e is _ONE_TENSOR for e in layout):
        return run

    def retro(*values):
        it = iter(values)
        call = []
        for e in layout:
            if e is _ONE_TENSOR:
                call.append(next(it))
            elif type(e) is _Many:
                call.append([next(it) for _ in range(e.n)])
            else:
                call.append(e)
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
    plain = [a.primitive if type(a) is AT else a for a in args]
    return getattr(ad.inner, op.name)(*plain)
