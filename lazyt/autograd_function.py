"""`lazyt.autograd.Function`: torch's custom autograd functions, a forward and a backward
written with lazyt's ops, used through `MyFn.apply(...)`.

How it joins the graph: the forward runs without recording, on detached inputs. Each float
output is returned as `value + link`, where `link` is an exact zero built from every input
that requires grad (`where(False, (x + 0).sum(), 0)`). Backward reaches each output's `+` and
then each input's `x + 0`. A gradient hook on the outputs collects their gradients; a hook on
each `x + 0` (whose own gradient is zero) calls the user's `backward` once with the collected
gradients (zeros for outputs the loss did not use, as torch materializes them) and returns the
input's gradient in place of the zero. So the custom gradient composes with everything else
autodiff does, on every device, and runs lazily like any other op.
"""
from __future__ import annotations

from . import creation
from . import dtype as dt
from .autodiff import no_grad
from .errors import GradError, InvalidArgumentError, MissingImplError
from .functional import where
from .tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What `forward` (or `setup_context`) leaves for `backward`: saved tensors, which inputs
    need a gradient, outputs marked non-differentiable, whether missing gradients arrive as
    zeros."""

    def __init__(self, needs_input_grad: tuple):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: tuple = ()
        self._non_differentiable: set = set()

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise InvalidArgumentError(f"save_for_backward: expects tensors or None, got "
                                           f"{type(t).__name__}")
        self._saved = tuple(None if t is None else t.detach() for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def mark_non_differentiable(self, *outputs) -> None:
        self._non_differentiable.update(id(t) for t in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        raise MissingImplError("mark_dirty: lazyt's custom functions cannot modify their "
                               "inputs in place; return a new tensor instead")


def once_differentiable(fn):
    """torch's marker for a backward that is not itself differentiable: lazyt never records
    a backward, so the function is returned as it is."""
    return fn


class Function:
    """Subclass with `@staticmethod forward(ctx, *args)` and `@staticmethod backward(ctx,
    *grads)` (or torch 2's `forward(*args)` with `setup_context(ctx, inputs, output)`), then
    call `MyFn.apply(*args)`. `backward` gets one gradient per output and returns one per
    input of `forward` (None for an input that needs none, or a non-tensor input)."""

    @staticmethod
    def forward(*args, **kwargs):
        raise MissingImplError("Function.forward: a subclass must define forward")

    @staticmethod
    def backward(ctx, *grads):
        raise MissingImplError("Function.backward: a subclass must define backward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        return None

    vjp = backward

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise InvalidArgumentError(f"{type(self).__name__}: call {type(self).__name__}.apply("
                                   "...), not an instance")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .autodiff import is_grad_enabled
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
        split = cls.setup_context is not Function.setup_context     # torch 2's style
        with no_grad():
            if split:
                output = cls.forward(*plain, **kwargs)
                cls.setup_context(ctx, plain, output)
            else:
                output = cls.forward(ctx, *plain, **kwargs)
        if not (is_grad_enabled() and any(needs)):
            return output
        return _connect(cls, ctx, args, output)


def _connect(cls, ctx: FunctionCtx, args: tuple, output):
    single = not isinstance(output, (tuple, list))
    outs = [output] if single else list(output)
    tracked_inputs = [(i, a) for i, a in enumerate(args)
                      if isinstance(a, Tensor) and a.requires_grad]
    state = {"grads": [None] * len(outs), "result": None, "fired": 0}
    probes = []
    link = None
    for i, x in tracked_inputs:
        probe = x + 0                       # a node of its own, whose gradient the hook sets
        probes.append((i, x, probe))
        zero = where(_FALSE(probe), probe.sum(), 0.0)
        link = zero if link is None else link + zero
    result = []
    for k, y in enumerate(outs):
        if not isinstance(y, Tensor) or not y.dtype.is_float or \
                id(y) in ctx._non_differentiable:
            result.append(y)
            continue
        joined = y.detach() + link.to(y.dtype)
        joined.register_hook(_collect(state, k))
        result.append(joined)
    for i, x, probe in probes:
        probe.register_hook(_deliver(cls, ctx, state, outs, len(args), len(probes), i, x))
    if single:
        return result[0]
    return tuple(result) if isinstance(output, tuple) else result


def _FALSE(like: Tensor) -> Tensor:  # noqa: N802 - a constant
    return creation.zeros((), dtype=dt.bool_, device=like.device)


def _collect(state: dict, k: int):
    def hook(g):
        state["grads"][k] = g
    return hook


def _deliver(cls, ctx: FunctionCtx, state: dict, outs: list, n_args: int, n_probes: int,
             index: int, x: Tensor):
    def hook(g):
        if state["result"] is None:
            state["result"] = _run_backward(cls, ctx, state["grads"], outs, n_args)
        grad = state["result"][index]
        state["fired"] += 1
        if state["fired"] == n_probes:                   # ready for another backward pass
            state.update(grads=[None] * len(outs), result=None, fired=0)
        if grad is None:
            return creation.zeros_like(g)
        if not isinstance(grad, Tensor):
            raise GradError(f"{cls.__name__}.backward returned {type(grad).__name__} for "
                            f"input {index}; expected a tensor or None")
        if tuple(grad.shape) != tuple(x.shape):
            try:
                grad = grad.sum_to_size(x.shape)
            except Exception:
                raise GradError(f"{cls.__name__}.backward returned a gradient of shape "
                                f"{grad.shape} for input {index} of shape {x.shape}") from None
        return grad.to(x.dtype).detach()
    return hook


def _run_backward(cls, ctx: FunctionCtx, grads: list, outs: list, n_args: int) -> tuple:
    full = []
    for g, y in zip(grads, outs):
        if g is None and ctx.materialize_grads and isinstance(y, Tensor):
            g = creation.zeros_like(y)
        full.append(g)
    with no_grad():
        result = cls.backward(ctx, *full)
    if not isinstance(result, (tuple, list)):
        result = (result,)
    result = tuple(result)
    if len(result) < n_args or any(r is not None for r in result[n_args:]):
        raise GradError(f"{cls.__name__}.backward returned {len(result)} gradients; expected "
                        f"{n_args}, one per input of forward")
    return result[:n_args]
