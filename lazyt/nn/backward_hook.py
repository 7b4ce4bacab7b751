"""Module backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`), as
torch's `BackwardHook` runs them.

When a module with such hooks is called, its tensor arguments and its outputs each pass through
an identity `lazyt.autograd.Function`. The outputs' identity sees every output's gradient at
once: the pre-hooks run there and may replace them. The inputs' identity sees every input's
gradient at once, after all of the module's backward: the full hooks run there with those and
the output gradients, and may replace the input gradients. Modules without backward hooks
never build these nodes.
"""
from __future__ import annotations

import warnings

from ..autodiff import is_grad_enabled
from ..autograd_function import Function
from ..errors import GradError
from ..tensor import Tensor


class _Identity(Function):
    """Passes tensors through unchanged; its backward hands the gradients to the call's hooks."""

    @staticmethod
    def forward(ctx, call: "BackwardHookCall", side: str, *tensors):
        ctx.call, ctx.side = call, side
        # inputs that need no gradient stay out of autodiff, as torch marks them
        ctx.mark_non_differentiable(*[t for t, need in zip(tensors, ctx.needs_input_grad[2:])
                                      if not need])
        # an output the loss did not use reaches the pre-hooks as None (torch's raw
        # gradients); on the inputs' side torch's identity materializes zeros
        ctx.set_materialize_grads(side == "in")
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        call = ctx.call
        new = call.input_grads(grads) if ctx.side == "in" else call.output_grads(grads)
        return (None, None, *new)


class BackwardHookCall:
    """One module call's backward hooks: wraps its inputs and outputs and, in backward, calls
    `pre_hooks(module, grad_output)` then `hooks(module, grad_input, grad_output)`."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None

    # ------------------------------------------------------------------ forward
    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_index = _wrap(self, "in", args)
        return args

    def wrap_outputs(self, out):
        single = not isinstance(out, tuple)
        if single and not isinstance(out, Tensor):
            warnings.warn(f"For backward hooks to be called, module output should be a Tensor "
                          f"or a tuple of Tensors but received {type(out)}", stacklevel=3)
        values = (out,) if single else out
        self.n_outputs = len(values)
        values, self.output_index = _wrap(self, "out", values)
        return values[0] if single else values

    # ------------------------------------------------------------------ backward
    def output_grads(self, grads: tuple) -> tuple:
        name = type(self.module).__name__
        grad_outputs = _pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, grad_outputs)
            if new is None:
                continue
            grad_outputs = _checked(new, len(grad_outputs), f"{name}: a backward pre-hook",
                                    "grad_output")
        self.grad_outputs = grad_outputs
        if self.input_index is None:   # no input needs a gradient: the full hooks run now
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients "
                              f"({name})", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise GradError(f"{name}: a backward hook of a module whose inputs need "
                                    "no gradient must return None (or a tuple of None)")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_index)

    def input_grads(self, grads: tuple) -> tuple:
        if self.grad_outputs is None:   # the gradient did not come through the outputs
            return grads
        name = type(self.module).__name__
        grad_inputs = _pack(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            new = hook(self.module, grad_inputs, self.grad_outputs)
            if new is None:
                continue
            grad_inputs = _checked(new, len(grad_inputs), f"{name}: a backward hook",
                                   "grad_input")
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_index)


def _wrap(call: BackwardHookCall, side: str, values: tuple) -> tuple:
    """(values with each tensor replaced by its identity-wrapped one, the tensors' positions);
    `values` unchanged and None when no tensor needs a gradient."""
    index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not (is_grad_enabled() and any(values[i].requires_grad for i in index)):
        return values, None
    wrapped = _Identity.apply(call, side, *[values[i] for i in index])
    out = list(values)
    for i, w in zip(index, wrapped):
        out[i] = w
    return (tuple(out) if type(values) is tuple else type(values)(*out)), index


def _pack(index: list, grads: tuple, size: int) -> tuple:
    res = [None] * size
    for i, g in zip(index, grads):
        res[i] = g
    return tuple(res)


def _checked(new, expected: int, who: str, what: str) -> tuple:
    if not isinstance(new, (tuple, list)):
        raise GradError(f"{who} returned {type(new).__name__}; expected None or a tuple of "
                        f"{expected} {what} entries (tensors or None)")
    if len(new) != expected:
        raise GradError(f"{who} returned an invalid number of {what}, got {len(new)}, but "
                        f"expected {expected}")
    for g in new:
        if g is not None and not isinstance(g, Tensor):
            raise GradError(f"{who} returned {type(g).__name__} in {what}; expected tensors "
                            "or None")
    return tuple(new)
