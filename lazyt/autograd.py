"""`lazyt.autograd`: torch's functional gradient API over the Autodiff layer.

- `grad(outputs, inputs, grad_outputs=None, allow_unused=None, materialize_grads=False)`:
  the gradients of `outputs` (seeded with `grad_outputs`, ones for one-element outputs) with
  respect to `inputs` (leaves or intermediates), returned as a tuple and not added into any
  `.grad`. An input the outputs do not depend on raises `GradError` unless `allow_unused`
  (then None) or `materialize_grads` (then zeros).
- `backward(tensors, grad_tensors=None, inputs=None)`: `Tensor.backward` for several roots at
  once (their gradients add), into `.grad`; `inputs=` limits which tensors receive one.
- `functional.jacobian(func, inputs)` and `functional.vjp`/`jvp`: built from first-order
  passes (a Jacobian runs `func` once per output element: reverse mode without a retained
  graph).

The graph is freed as backward walks it and backward records no graph of its own, so
`retain_graph=True`, `create_graph=True` (gradients of gradients) and the functions that need
them (`hessian`, `hvp`, `vhp`) raise `InvalidArgumentError`: run the forward again instead.
"""
from __future__ import annotations

import sys

from . import creation
from . import functional as F
from .autodiff import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .errors import GradError, InvalidArgumentError, ShapeError
from .tensor import Tensor, _accumulate_one, grad_only_pass, refuse_graph_options

__all__ = ["grad", "backward", "functional", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled"]


def _tensors(fn: str, what: str, value) -> tuple:
    items = (value,) if isinstance(value, Tensor) else tuple(value) if isinstance(
        value, (list, tuple)) else None
    if items is None or not all(isinstance(t, Tensor) for t in items):
        raise InvalidArgumentError(f"{fn}: {what} must be a tensor or a sequence of tensors, "
                                   f"got {type(value).__name__}")
    return items


def _root(fn: str, outputs: tuple, seeds) -> tuple:
    """One tensor to backpropagate from, and its seed (a primitive or None), standing for
    every output with its seed: `sum((o * g).sum())` when there are several (the seed each
    output receives is exactly its g)."""
    if seeds is None:
        seeds = (None,) * len(outputs)
    else:
        seeds = (seeds,) if isinstance(seeds, Tensor) or seeds is None else tuple(seeds)
        if len(seeds) != len(outputs):
            raise InvalidArgumentError(f"{fn}: got {len(seeds)} gradients for {len(outputs)} "
                                       "outputs; pass one per output (None for a "
                                       "one-element output)")
    pairs = []
    for i, (o, g) in enumerate(zip(outputs, seeds)):
        if not o.requires_grad:
            raise GradError(f"{fn}: output {i} (shape {tuple(o.shape)}) does not require "
                            "grad: nothing it was computed from requires grad")
        if g is None:
            if o.numel() != 1:
                raise ShapeError(f"{fn}: output {i} has shape {tuple(o.shape)}; a gradient "
                                 "can be implied only for a one-element output, pass "
                                 "grad_outputs")
        else:
            g = F.as_tensor(g, o)
            if tuple(g.shape) != tuple(o.shape):
                raise ShapeError(f"{fn}: the gradient for output {i} has shape "
                                 f"{tuple(g.shape)}, expected {tuple(o.shape)}")
            g = F.to(g.detach(), o.dtype)
        pairs.append((o, g))
    if len(pairs) == 1:
        o, g = pairs[0]
        return o, None if g is None else g.primitive
    with enable_grad():
        total = None
        for o, g in pairs:
            term = (o if g is None else o * g).sum()
            total = term if total is None else total + term.to(total.device)
    return total, None


def _run(fn: str, outputs: tuple, seeds, inputs: tuple) -> list:
    """Backpropagate once; the gradient of each input (a Tensor, or None where the outputs
    do not reach it), added into no `.grad`."""
    for i, x in enumerate(inputs):
        if not x.requires_grad:
            raise GradError(f"{fn}: input {i} (shape {tuple(x.shape)}) does not require grad; "
                            "call x.requires_grad_() before computing the outputs")
    root, seed = _root(fn, outputs, seeds)
    found: dict[int, Tensor] = {}
    handles = []
    for i, x in enumerate(inputs):
        if not x.is_leaf:
            def capture(g, i=i):
                found[i] = g if i not in found else found[i] + g
            handles.append(x.register_hook(capture))
    try:
        with grad_only_pass():
            grads = root.device.backend.backward(root.primitive, seed)
    finally:
        for h in handles:
            h.remove()
    out = []
    for i, x in enumerate(inputs):
        g = found.get(i) if not x.is_leaf else grads.get(x)
        out.append(g)
    return out


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, as a tuple (torch.autograd.grad);
    `.grad` attributes are left as they were."""
    refuse_graph_options("autograd.grad", retain_graph, create_graph)
    if is_grads_batched:
        raise InvalidArgumentError("autograd.grad: is_grads_batched=True is not supported; "
                                   "loop over the batch of grad_outputs (one forward each)")
    if materialize_grads and allow_unused is False:
        raise InvalidArgumentError("autograd.grad: materialize_grads=True needs allow_unused "
                                   "left as None or True")
    outs = _tensors("autograd.grad", "outputs", outputs)
    ins = _tensors("autograd.grad", "inputs", inputs)
    if not outs or not ins:
        raise InvalidArgumentError("autograd.grad: outputs and inputs must not be empty")
    grads = _run("autograd.grad", outs, grad_outputs, ins)
    result = []
    for i, (x, g) in enumerate(zip(ins, grads)):
        if g is None:
            if materialize_grads:
                g = creation.zeros_like(x)
            elif not allow_unused:
                raise GradError(f"autograd.grad: input {i} (shape {tuple(x.shape)}) was not "
                                "used to compute the outputs; pass allow_unused=True to get "
                                "None for it")
        result.append(g)
    return tuple(result)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Backpropagate from every tensor of `tensors` (seeded with `grad_tensors`) and add the
    gradients into `.grad` (torch.autograd.backward); with `inputs`, only into those
    tensors (leaves or intermediates)."""
    refuse_graph_options("autograd.backward", retain_graph, create_graph)
    if grad_variables is not None:
        if grad_tensors is not None:
            raise InvalidArgumentError("autograd.backward: pass grad_tensors, not also "
                                       "grad_variables")
        grad_tensors = grad_variables
    outs = _tensors("autograd.backward", "tensors", tensors)
    if inputs is None:
        root, seed = _root("autograd.backward", outs, grad_tensors)
        if seed is None:
            root.backward()
        else:
            root.backward(Tensor(seed, root.device))
        return
    accumulate_into(outs, grad_tensors, inputs, "autograd.backward")


def accumulate_into(outputs: tuple, seeds, inputs, fn: str) -> None:
    """`backward(inputs=...)`: add the pass's gradients into the `.grad` of `inputs` only
    (an input the outputs do not reach keeps its `.grad`, as torch)."""
    ins = _tensors(fn, "inputs", inputs)
    if not ins:
        raise InvalidArgumentError(f"{fn}: inputs= must not be empty")
    grads = _run(fn, outputs, seeds, ins)
    with no_grad():
        for x, g in zip(ins, grads):
            if g is not None:
                _accumulate_one(x, g.primitive)


sys.modules[Tensor.__module__].BACKWARD_INPUTS = accumulate_into   # Tensor.backward(inputs=)


class _Functional:
    """`lazyt.autograd.functional`: Jacobians and vector products of a function."""

    @staticmethod
    def _inputs(fn: str, inputs) -> tuple[tuple, bool]:
        single = isinstance(inputs, Tensor)
        items = _tensors(fn, "inputs", inputs)
        return tuple(x.detach().requires_grad_() for x in items), single

    @staticmethod
    def _outputs(fn: str, out) -> tuple[tuple, bool]:
        single = isinstance(out, Tensor)
        return _tensors(fn, "the function's outputs", out), single

    def jacobian(self, func, inputs, create_graph=False, strict=False, vectorize=False,
                 strategy="reverse-mode"):
        """d func(inputs) / d inputs: for one input and one output a tensor of shape
        `output.shape + input.shape`, else nested tuples (outputs, then inputs), as torch's.
        Reverse mode: `func` runs once per output element (the graph is not retained)."""
        refuse_graph_options("autograd.functional.jacobian", None, create_graph)
        if strategy not in ("reverse-mode", "forward-mode"):
            raise InvalidArgumentError(f"autograd.functional.jacobian: strategy must be "
                                       f"'reverse-mode' or 'forward-mode', got {strategy!r}")
        xs, single_in = self._inputs("autograd.functional.jacobian", inputs)
        with enable_grad():
            outs, single_out = self._outputs("autograd.functional.jacobian", func(*xs))
        shapes = [tuple(o.shape) for o in outs]
        rows: list[list[list]] = [[[] for _ in xs] for _ in outs]
        for k, shape in enumerate(shapes):
            n = 1
            for d in shape:
                n *= d
            for j in range(n):
                if k or j:      # the first element reuses the call made for the shapes
                    xs_j = tuple(x.detach().requires_grad_() for x in xs)
                    with enable_grad():
                        outs, _ = self._outputs("autograd.functional.jacobian", func(*xs_j))
                else:
                    xs_j = xs
                o = outs[k]
                if not o.requires_grad:
                    if strict:
                        raise GradError(f"autograd.functional.jacobian: output {k} does not "
                                        "depend on the inputs (strict=True)")
                    for i, x in enumerate(xs):
                        rows[k][i].append(creation.zeros_like(x))
                    continue
                with enable_grad():
                    pick = o.reshape(-1)[j]
                got = _run("autograd.functional.jacobian", (pick,), None, xs_j)
                for i, (x, g) in enumerate(zip(xs, got)):
                    if g is None and strict:
                        raise GradError(f"autograd.functional.jacobian: output {k} does not "
                                        f"depend on input {i} (strict=True)")
                    rows[k][i].append(creation.zeros_like(x) if g is None else g.detach())
        table = []
        for k, shape in enumerate(shapes):
            per_in = []
            for i, x in enumerate(xs):
                per_in.append(F.stack(rows[k][i]).reshape(*shape, *x.shape) if rows[k][i]
                              else creation.zeros((*shape, *x.shape), dtype=x.dtype,
                                                  device=x.device))
            table.append(per_in[0] if single_in else tuple(per_in))
        return table[0] if single_out else tuple(table)

    def vjp(self, func, inputs, v=None, create_graph=False, strict=False):
        """`(func(inputs), v^T J)`: one forward and one backward pass."""
        refuse_graph_options("autograd.functional.vjp", None, create_graph)
        xs, single_in = self._inputs("autograd.functional.vjp", inputs)
        with enable_grad():
            outs, single_out = self._outputs("autograd.functional.vjp", func(*xs))
        if v is None and not all(o.numel() == 1 for o in outs):
            raise InvalidArgumentError("autograd.functional.vjp: v may be left out only when "
                                       "func returns one-element tensors")
        seeds = None if v is None else (v,) if isinstance(v, Tensor) else tuple(v)
        if not any(o.requires_grad for o in outs):
            got = [None] * len(xs)
        else:
            got = _run("autograd.functional.vjp", outs, seeds, xs)
        if strict and any(g is None for g in got):
            raise GradError("autograd.functional.vjp: an input does not reach the outputs "
                            "(strict=True)")
        grads = tuple(creation.zeros_like(x) if g is None else g.detach() for x, g in zip(xs, got))
        values = tuple(o.detach() for o in outs)
        return (values[0] if single_out else values), (grads[0] if single_in else grads)

    def jvp(self, func, inputs, v=None, create_graph=False, strict=False):
        """`(func(inputs), J v)`, from the reverse-mode Jacobian (one pass per output
        element)."""
        refuse_graph_options("autograd.functional.jvp", None, create_graph)
        xs, single_in = self._inputs("autograd.functional.jvp", inputs)
        vs = _tensors("autograd.functional.jvp", "v", v) if v is not None else None
        if vs is None:
            if not all(x.numel() == 1 for x in xs):
                raise InvalidArgumentError("autograd.functional.jvp: v may be left out only "
                                           "for one-element inputs")
            vs = tuple(creation.ones_like(x) for x in xs)
        if len(vs) != len(xs) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(vs, xs)):
            raise ShapeError("autograd.functional.jvp: v must match the inputs' shapes")
        with no_grad():
            outs, single_out = self._outputs("autograd.functional.jvp", func(*xs))
        jac = self.jacobian(func, tuple(xs), strict=strict)
        if single_out:
            jac = (jac,)
        products = []
        for o, row in zip(outs, jac):
            total = None
            for x, vi, J in zip(xs, vs, row):
                term = (J.reshape(o.numel(), x.numel()) @ vi.reshape(-1).to(J.dtype))
                total = term if total is None else total + term
            products.append(total.reshape(*o.shape))
        values = tuple(o.detach() for o in outs)
        return (values[0] if single_out else values), (products[0] if single_out else
                                                       tuple(products))

    @staticmethod
    def _second_order(name: str):
        def refuse(*args, **kwargs):
            raise InvalidArgumentError(
                f"autograd.functional.{name}: needs gradients of gradients, which lazyt does "
                "not record (backward builds no graph of its own); take finite differences of "
                "autograd.grad instead")
        refuse.__name__ = name
        return refuse


functional = _Functional()
functional.hessian = _Functional._second_order("hessian")
functional.hvp = _Functional._second_order("hvp")
functional.vhp = _Functional._second_order("vhp")

# custom autograd functions (torch.autograd.Function), lazyt/autograd_function.py
from .autograd_function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
