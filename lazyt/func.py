"""`lazyt.func`: torch.func's transforms — `vmap`, `grad`, `grad_and_value`, `vjp`, `jvp`,
`jacrev`, `jacfwd`, `linearize`, `hessian` — and `functional_call` / `stack_module_state`, which
run a module with other tensors in place of its parameters and buffers.

How they run, and what that costs (torch batches and nests these; lazyt loops and refuses):
- `vmap(func)` calls `func` once per example on slices of the mapped inputs and stacks the
  results, so it is correct for any function (Python control flow on shapes included) and its
  cost grows with the batch size. The ops are recorded lazily and run together at the next
  read; nothing is vectorized across examples.
- `grad`/`grad_and_value`/`vjp` run one forward and one backward pass, on detached copies of
  the differentiated arguments (the caller's tensors and their `.grad` are untouched).
- `jacrev`, `jacfwd`, `jvp` and `linearize` are exact and all reverse mode: one forward and one
  backward pass per output element (lazyt frees the graph as backward walks it and has no
  forward mode). `jacfwd` is `jacrev`; `linearize` pays once and then contracts the Jacobian.
- Gradients are not differentiable: `hessian`, and a transform whose result depends on the
  arguments of an enclosing transform (`grad(grad(f))`, `jacrev(jacrev(f))`, `vjp_fn(...,
  create_graph=True)`), raise `MissingImplError` instead of giving silent zeros.

Other differences from torch: randomness='error' is checked after each call of `func`, on
lazyt's process generator only (an explicit `lazyt.Generator` is not watched); an in-place op
on a mapped input inside `vmap` changes the slice, not the caller's tensor; an output with
out_dims None is accepted when it is equal for every example; `vjp_fn` called again, and
`jacrev` past the first row, run `func` again (replaying its random draws); aux outputs may
hold non-tensors; `hessian(f)` raises at once, not when the function it would return is called.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import autograd
from . import creation
from . import data as _data
from . import functional as F
from .autodiff import enable_grad
from .autodiff.ops import AutodiffTensor
from .errors import (DTypeError, IndexOutOfRangeError, InvalidArgumentError, MissingImplError,
                     ShapeError)
from .nn.module import Module
from .sampling import default_generator
from .tensor import Tensor

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "linearize", "functional_call", "stack_module_state", "functionalize"]

_RANDOMNESS = ("error", "different", "same")


# ---------------------------------------------------------------------- pytrees
@dataclass(frozen=True)
class _Spec:
    """The structure of a pytree (torch's TreeSpec): `kind` None for a leaf, else the
    container type (tuple, list, dict, OrderedDict or a namedtuple), dict `keys` in order."""

    kind: type | None
    keys: tuple = ()
    children: tuple = ()

    @functools.cached_property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) \
            if self.keys or self.kind in (dict, OrderedDict) else \
            ", ".join(str(c) for c in self.children)
        return f"{self.kind.__name__}({inner})"


_LEAF = _Spec(None)


def _is_node(x) -> bool:
    """Containers torch's pytree walks into (exact types: a subclass of list is a leaf)."""
    t = type(x)
    return t in (tuple, list, dict, OrderedDict) or (issubclass(t, tuple)
                                                    and hasattr(t, "_fields"))


def _flatten(tree) -> tuple[list, _Spec]:
    leaves: list = []

    def walk(t) -> _Spec:
        if not _is_node(t):
            leaves.append(t)
            return _LEAF
        if isinstance(t, dict):
            keys = tuple(t.keys())
            return _Spec(type(t), keys, tuple(walk(t[k]) for k in keys))
        return _Spec(type(t), (), tuple(walk(c) for c in t))

    return leaves, walk(tree)


def _unflatten(leaves, spec: _Spec):
    it = iter(leaves)

    def build(s: _Spec):
        if s.kind is None:
            return next(it)
        items = [build(c) for c in s.children]
        if s.kind in (dict, OrderedDict):
            return s.kind(zip(s.keys, items))
        if s.kind in (tuple, list):
            return s.kind(items)
        return s.kind(*items)                                     # a namedtuple

    return build(spec)


def _tree_map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([fn(x) for x in leaves], spec)


def _broadcast(prefix, spec: _Spec) -> list | None:
    """`prefix` (in_dims / out_dims) spread over the leaves of `spec`: a leaf of `prefix`
    stands for every leaf below it. None when the structures do not match (torch's
    `_broadcast_to_and_flatten`)."""
    if not _is_node(prefix):
        return [prefix] * spec.num_leaves
    if spec.kind is None or type(prefix) is not spec.kind:
        return None
    if isinstance(prefix, dict):
        if set(prefix) != set(spec.keys):
            return None
        parts = [prefix[k] for k in spec.keys]
    else:
        if len(prefix) != len(spec.children):
            return None
        parts = list(prefix)
    out: list = []
    for p, s in zip(parts, spec.children):
        got = _broadcast(p, s)
        if got is None:
            return None
        out += got
    return out


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _describe(x) -> str:
    if isinstance(x, Tensor):
        return f"a {x.dtype.name} tensor of shape {tuple(x.shape)}"
    return f"{type(x).__name__}"


# ---------------------------------------------------------------------- random numbers
def _rng_snapshot() -> tuple:
    """lazyt's process generator and its state: compared to see whether `func` drew random
    numbers, restored for randomness='same' (explicit `lazyt.Generator`s are not watched)."""
    g = default_generator.numpy_generator()
    return g, g.bit_generator.state


def _rng_restore(snap: tuple) -> None:
    g, state = snap
    _data._generator[0] = g
    g.bit_generator.state = state


def _drew(snap: tuple) -> bool:
    g, state = snap
    now = default_generator.numpy_generator()
    return now is not g or now.bit_generator.state != state


# ---------------------------------------------------------------------- vmap
def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """torch.func.vmap: `func` mapped over dim `in_dims` of its positional inputs (an int, or
    a tuple with one entry per argument: an int, None for unmapped, or a pytree of those
    matching the argument), its outputs stacked at `out_dims`. `func` runs once per example
    (see the module docstring); `chunk_size` is checked and changes nothing."""
    if randomness not in _RANDOMNESS:
        raise InvalidArgumentError(f"vmap: randomness must be 'error', 'different' or 'same', "
                                   f"got {randomness!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(
            chunk_size, int) or chunk_size <= 0):
        raise InvalidArgumentError(f"vmap: chunk_size should be None or an int greater than 0, "
                                   f"got {chunk_size!r}")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)

    return vmapped


def _vmap_inputs(name: str, in_dims, args: tuple) -> tuple[int, list, list, _Spec]:
    """The batch size, the flat arguments, their mapped dims (normalized, None where not
    mapped) and the arguments' structure; torch's checks and messages."""
    head = f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>)"
    if isinstance(in_dims, bool) or not isinstance(in_dims, (int, tuple)):
        raise InvalidArgumentError(f"{head}: expected in_dims to be an int or a (possibly "
                                   f"nested) tuple matching the structure of the inputs, got "
                                   f"{type(in_dims).__name__}")
    if not args:
        raise InvalidArgumentError(f"vmap({name})(<inputs>): got no inputs; vmap over a "
                                   "function without inputs is not supported")
    leaves, spec = _flatten(args)
    dims = _broadcast(in_dims, spec)
    if dims is None:
        raise InvalidArgumentError(f"{head}: in_dims is not compatible with the structure of "
                                   f"the inputs: in_dims has structure {_flatten(in_dims)[1]} "
                                   f"but the inputs have structure {spec}")
    for i, (a, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if isinstance(d, bool) or not isinstance(d, int):
            raise InvalidArgumentError(f"{head}: got in_dim={d!r} for an input; an in_dim is "
                                       "an int dimension or None")
        if not isinstance(a, Tensor):
            raise InvalidArgumentError(f"{head}: got in_dim={d} for an input of type "
                                       f"{type(a).__name__}; vmap maps over tensors only, use "
                                       "None as that input's in_dim")
        if not -a.ndim <= d < a.ndim:
            raise InvalidArgumentError(f"{head}: got in_dim={d} for an input of shape "
                                       f"{tuple(a.shape)}, expected -{a.ndim} <= in_dim < "
                                       f"{a.ndim}")
        dims[i] = d % a.ndim
    sizes = [a.shape[d] for a, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise InvalidArgumentError(f"{head}: expected at least one tensor to vmap over (every "
                                   "in_dim is None)")
    if any(s != sizes[0] for s in sizes):
        raise ShapeError(f"{head}: expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], leaves, dims, spec


def _check_out_dims(name: str, out_dims) -> None:
    leaves = [out_dims] if isinstance(out_dims, int) else _flatten(out_dims)[0]
    for d in leaves:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
            raise InvalidArgumentError(f"vmap({name}, ..., out_dims={out_dims!r}): out_dims "
                                       "must be an int, None or a tuple (pytree) of those, one "
                                       "per output")


def _vmap_call(func, in_dims, out_dims, randomness: str, args: tuple, kwargs: dict):
    name = _name(func)
    _check_out_dims(name, out_dims)
    size, leaves, dims, spec = _vmap_inputs(name, in_dims, args)
    start = _rng_snapshot()

    def call(example: list):
        if randomness == "same":
            _rng_restore(start)
        before = _rng_snapshot()
        out = func(*_unflatten(example, spec), **kwargs)
        if randomness == "error" and _drew(before):
            raise InvalidArgumentError(
                f"vmap({name}, ...): {name} drew random numbers from lazyt's generator while "
                "randomness='error'; pass randomness='different' (each example its own draws) "
                "or 'same' (every example the same draws), or draw outside vmap")
        return out

    if size == 0:       # no example to run: one call on zeros gives the outputs' shapes
        dummy = [a if d is None else creation.zeros(
            tuple(a.shape[:d]) + tuple(a.shape[d + 1:]), dtype=a.dtype, device=a.device)
            for a, d in zip(leaves, dims)]
        outs = [call(dummy)]
        _rng_restore(start)
    else:
        outs = [call([a if d is None else a.select(d, b) for a, d in zip(leaves, dims)])
                for b in range(size)]
    return _vmap_outputs(name, out_dims, outs, size)


def _vmap_outputs(name: str, out_dims, outs: list, size: int):
    flat, ospec = _flatten(outs[0])
    flats = [flat]
    for b, out in enumerate(outs[1:], 1):
        f, s = _flatten(out)
        if s != ospec:
            raise InvalidArgumentError(f"vmap({name}, ...): {name} returned outputs of "
                                       f"structure {ospec} for example 0 but {s} for example "
                                       f"{b}; the structure must not depend on the data")
        flats.append(f)
    if ospec.kind is None and isinstance(flat[0], Tensor) and isinstance(out_dims, tuple) \
            and len(out_dims) == 1:
        odims = list(out_dims)
    else:
        odims = _broadcast(out_dims, ospec)
    if odims is None:
        raise InvalidArgumentError(f"vmap({name}, ..., out_dims={out_dims!r})(<inputs>): "
                                   "out_dims is not compatible with the structure of the "
                                   f"outputs: out_dims has structure {_flatten(out_dims)[1]} "
                                   f"but the outputs have structure {ospec}")
    result = []
    for k, d in enumerate(odims):
        column = [f[k] for f in flats]
        first = column[0]
        if d is None:
            result.append(_unbatched(name, column))
            continue
        if not isinstance(first, Tensor) or not all(isinstance(c, Tensor) for c in column):
            bad = next(c for c in column if not isinstance(c, Tensor))
            raise InvalidArgumentError(f"vmap({name}, ...): {name} must only return tensors, "
                                       f"got {type(bad).__name__}; set that output's out_dims "
                                       "entry to None to return it as it is")
        nd = first.ndim
        if not -(nd + 1) <= d <= nd:
            raise IndexOutOfRangeError(f"vmap({name}, ..., out_dims={out_dims!r}): out_dim {d} "
                                       f"is out of range for per-example outputs of shape "
                                       f"{tuple(first.shape)} (expected a dim in "
                                       f"[{-(nd + 1)}, {nd}])")
        shapes = {tuple(c.shape) for c in column}
        if len(shapes) > 1:
            raise ShapeError(f"vmap({name}, ...): output {k} has shapes {sorted(shapes)} for "
                             "different examples; under vmap an output's shape must not depend "
                             "on the data")
        if size == 0:
            pos = d % (nd + 1)
            shape = tuple(first.shape[:pos]) + (0,) + tuple(first.shape[pos:])
            result.append(creation.zeros(shape, dtype=first.dtype, device=first.device))
        else:
            result.append(F.stack(column, dim=d))
    return _unflatten(result, ospec)


def _unbatched(name: str, column: list):
    """An output with out_dim None: the same for every example (compared by value), as torch
    requires of an output that is not batched."""
    first = column[0]
    if all(c is first for c in column):
        return first
    if isinstance(first, Tensor):
        ref = first.numpy()
        same = all(isinstance(c, Tensor) and tuple(c.shape) == ref.shape
                   and np.array_equal(c.numpy(), ref, equal_nan=ref.dtype.kind == "f")
                   for c in column[1:])
    else:
        same = all(not isinstance(c, Tensor) and c == first for c in column[1:])
    if not same:
        raise InvalidArgumentError(f"vmap({name}, ...): {name} returned an output that differs "
                                   "between examples (it is batched) where out_dims is None")
    return first


# ---------------------------------------------------------------------- differentiation
# The node ids of the differentiated copies of every transform whose function is running:
# a nested transform whose inputs or outputs reach one would need gradients of gradients.
_ACTIVE: list[frozenset] = []


@contextmanager
def _differentiating(copies: list):
    ids = frozenset(c.device.backend.node_id(c.primitive) for c in copies) - {None}
    _ACTIVE.append(ids)
    try:
        yield
    finally:
        _ACTIVE.pop()


def _reaches(tensors: list, ids: frozenset) -> bool:
    """Whether the autodiff graph of any of `tensors` contains a node of `ids` (parents
    always have smaller ids than their children, which bounds the walk)."""
    low = min(ids)
    todo = [t.primitive.node for t in tensors
            if isinstance(t, Tensor) and type(t.primitive) is AutodiffTensor]
    seen: set = set()
    while todo:
        node = todo.pop()
        if node is None or node.id < low or node.id in seen:
            continue
        if node.id in ids:
            return True
        seen.add(node.id)
        todo.extend(p for p in node.parents if p is not None)
    return False


def _refuse_nested(fn: str, tensors: list) -> None:
    if not _ACTIVE:
        return
    ids = frozenset().union(*_ACTIVE)
    if ids and _reaches(tensors, ids):
        raise MissingImplError(
            f"{fn}: called inside another lazyt.func transform (grad, vjp, jvp, jacrev, jacfwd) "
            "on values that depend on the arguments it differentiates: that needs gradients of "
            "gradients (grad of grad, a Hessian), which lazyt does not record (backward builds "
            "no graph of its own). Differentiate once, or take finite differences of grad")


def _argnums(fn: str, argnums, n: int):
    def one(a) -> int:
        if isinstance(a, bool) or not isinstance(a, int):
            raise InvalidArgumentError(f"{fn}: argnums must be an int or a tuple of ints, got "
                                       f"{argnums!r}")
        if not -n <= a < n:
            raise InvalidArgumentError(f"{fn}: got argnums={argnums!r}, but only {n} positional "
                                       "inputs")
        return a % n

    if isinstance(argnums, tuple):
        if not argnums:
            raise InvalidArgumentError(f"{fn}: argnums must not be empty")
        got = tuple(one(a) for a in argnums)
        if len(set(got)) != len(got):
            raise InvalidArgumentError(f"{fn}: argnums elements must be unique, got {argnums}")
        return got
    return one(argnums)


@dataclass(frozen=True)
class _Forward:
    """One differentiated call of `func`: its output and aux, the differentiated copies and
    their structure; `rerun()` runs it again on fresh copies (same random draws) for another
    backward pass, since backward frees the graph."""

    output: Any
    aux: Any
    copies: list
    spec: _Spec
    rerun: Callable


def _forward(fn: str, func, args: tuple, kwargs: dict, argnums, has_aux: bool,
             randomness: str = "different") -> _Forward:
    """Run `func(*args, **kwargs)` with the arguments at `argnums` (all of them when None)
    replaced by detached copies that require grad."""
    args = list(args)
    diff = tuple(args) if argnums is None else args[argnums] if isinstance(argnums, int) \
        else tuple(args[i] for i in argnums)
    leaves, spec = _flatten(diff)
    if not leaves:
        raise InvalidArgumentError(f"{fn}: expected the differentiated arguments to hold at "
                                   "least one tensor")
    for x in leaves:
        if not isinstance(x, Tensor):
            raise InvalidArgumentError(f"{fn}: the differentiated arguments must be tensors "
                                       f"(or pytrees of tensors), got {_describe(x)}")
        if not x.dtype.is_float:
            raise DTypeError(f"{fn}: only floating-point tensors can be differentiated, got "
                             f"{_describe(x)}")
    start = _rng_snapshot()

    def run():
        copies = [x.detach().requires_grad_() for x in leaves]
        new = _unflatten(copies, spec)
        call = list(args)
        if argnums is None:
            call = list(new)
        elif isinstance(argnums, int):
            call[argnums] = new
        else:
            for i, v in zip(argnums, new):
                call[i] = v
        before = _rng_snapshot()
        with enable_grad(), _differentiating(copies):
            out = func(*call, **kwargs)
        if randomness == "error" and _drew(before):
            raise InvalidArgumentError(f"{fn}: the function drew random numbers from lazyt's "
                                       "generator while randomness='error'; pass "
                                       "randomness='same' or 'different'")
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise InvalidArgumentError(f"{fn}: with has_aux=True the function must return "
                                           f"a tuple (output, aux), got {type(out).__name__}")
            out, aux = out
            aux = _tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, aux)
        return out, aux, copies

    def rerun() -> tuple[list, list]:
        now = _rng_snapshot()
        _rng_restore(start)
        try:
            out, _, copies = run()
        finally:
            _rng_restore(now)
        return _flatten(out)[0], copies

    out, aux, copies = run()
    _refuse_nested(fn, leaves + _flatten(out)[0])
    return _Forward(out, aux, copies, spec, rerun)


def _pull(outputs: list, seeds: list, copies: list) -> list:
    """One backward pass: the gradients of `outputs` (seeded with `seeds`, None for a
    one-element output) w.r.t. `copies`, zeros where they are not reached."""
    pairs = [(o, s) for o, s in zip(outputs, seeds) if o.requires_grad]
    if not pairs:
        return [creation.zeros_like(c).detach() for c in copies]
    outs = [o for o, _ in pairs]
    seeds = [s for _, s in pairs]
    got = autograd.grad(outs, copies, grad_outputs=None if all(s is None for s in seeds)
                        else seeds, allow_unused=True)
    return [creation.zeros_like(c).detach() if g is None else g for c, g in zip(copies, got)]


def _output_tensors(fn: str, out) -> tuple[list, _Spec]:
    leaves, spec = _flatten(out)
    if not leaves or (len(leaves) == 1 and leaves[0] is None):
        raise InvalidArgumentError(f"{fn}: expected the function to return one or more tensors, "
                                   f"got {out!r}")
    for o in leaves:
        if not isinstance(o, Tensor):
            raise InvalidArgumentError(f"{fn}: expected the function to return only tensors, "
                                       f"got {type(o).__name__}")
        if not o.dtype.is_float:
            raise DTypeError(f"{fn}: every output must be a floating-point tensor, got "
                             f"{_describe(o)}")
    return leaves, spec


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: `(gradient, value)` of a function returning a 0-d tensor;
    the gradient w.r.t. the argument(s) at `argnums` (pytrees of tensors, gradients of the same
    structure; zeros where unused). With `has_aux`, `func` returns `(value, aux)` and this
    returns `(gradient, (value, aux))`."""
    return _grad_and_value(func, argnums, has_aux, "grad_and_value")


def _grad_and_value(func: Callable, argnums, has_aux: bool, name: str) -> Callable:
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        fn = f"{name}({_name(func)})(*args)"
        nums = _argnums(fn, argnums, len(args))
        fw = _forward(fn, func, args, kwargs, nums, has_aux)
        out = fw.output
        if not isinstance(out, Tensor):
            raise InvalidArgumentError(f"{fn}: expected f(*args) to return a tensor, got "
                                       f"{type(out).__name__}")
        if out.ndim != 0:
            raise ShapeError(f"{fn}: expected f(*args) to return a scalar (0-d) tensor, got shape "
                             f"{tuple(out.shape)}; for other outputs use vjp or jacrev")
        g = _unflatten(_pull([out], [None], fw.copies), fw.spec)
        value = out.detach()
        return (g, (value, fw.aux)) if has_aux else (g, value)

    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad: the gradient of a function returning a 0-d tensor w.r.t. the
    argument(s) at `argnums` (`(gradient, aux)` with `has_aux`). See `grad_and_value`."""
    gv = _grad_and_value(func, argnums, has_aux, "grad")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """torch.func.vjp: `(func(*primals), vjp_fn)` (with `aux` third if `has_aux`);
    `vjp_fn(cotangents)` gives a tuple with one gradient per primal. The first call uses the
    recorded graph; later calls run `func` again (lazyt frees a graph once walked), with the
    same random draws."""
    fn = "vjp(f, *primals)"
    fw = _forward(fn, func, primals, {}, None, has_aux)
    outs, ospec = _output_tensors(fn, fw.output)
    pending = [outs, fw.copies]

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph=None):
        if create_graph:
            raise MissingImplError("vjp_fn: create_graph=True needs gradients of gradients, "
                                   "which lazyt does not record")
        cots, cspec = _flatten(cotangents)
        if cspec != ospec:
            raise InvalidArgumentError(f"vjp_fn: expected the cotangents to have the structure "
                                       f"of the outputs, {ospec}, got {cspec}")
        seeds = []
        for i, (c, o) in enumerate(zip(cots, outs)):
            if not isinstance(c, Tensor):
                raise InvalidArgumentError(f"vjp_fn: cotangent {i} must be a tensor, got "
                                           f"{type(c).__name__}")
            if tuple(c.shape) != tuple(o.shape):
                raise ShapeError(f"vjp_fn: cotangent {i} has shape {tuple(c.shape)}, but output "
                                 f"{i} has shape {tuple(o.shape)}")
            seeds.append(F.to(c.detach(), o.dtype))
        _refuse_nested("vjp_fn", cots)   # the result is not differentiable w.r.t. them
        if pending[0] is not None:
            cur, copies = pending
            pending[0] = pending[1] = None
        else:
            cur, copies = fw.rerun()
        return _unflatten(_pull(cur, seeds, copies), fw.spec)

    values = _unflatten([o.detach() for o in outs], ospec)
    return (values, vjp_fn, fw.aux) if has_aux else (values, vjp_fn)


def _jacobian(fn: str, func, args: tuple, argnums, has_aux: bool,
              randomness: str = "different"):
    """The output leaves, their structure, the Jacobian blocks `J[k][i]` (output k's shape +
    input i's shape) and the forward: one forward and backward pass per output element."""
    fw = _forward(fn, func, args, {}, argnums, has_aux, randomness)
    outs, ospec = _output_tensors(fn, fw.output)
    fresh = True
    blocks = []
    for k, o in enumerate(outs):
        n = o.numel()
        rows: list[list] = [[] for _ in fw.copies]
        if o.requires_grad:
            for j in range(n):
                if fresh:
                    cur, copies, fresh = outs, fw.copies, False
                else:
                    cur, copies = fw.rerun()
                with enable_grad():
                    pick = cur[k].reshape(-1)[j]
                for i, g in enumerate(_pull([pick], [None], copies)):
                    rows[i].append(g)
        per_in = []
        for i, x in enumerate(fw.copies):
            shape = tuple(o.shape) + tuple(x.shape)
            per_in.append(F.stack(rows[i]).reshape(shape) if rows[i] else
                          creation.zeros(shape, dtype=x.dtype, device=x.device))
        blocks.append(per_in)
    return outs, ospec, blocks, fw


def _jac_wrapper(name: str, func, argnums, has_aux: bool, randomness: str) -> Callable:
    @functools.wraps(func)
    def wrapper(*args):
        fn = f"{name}({_name(func)})(*args)"
        nums = _argnums(fn, argnums, len(args))
        outs, ospec, blocks, fw = _jacobian(fn, func, args, nums, has_aux, randomness)
        jac = _unflatten([_unflatten(b, fw.spec) for b in blocks], ospec)
        return (jac, fw.aux) if has_aux else jac

    return wrapper


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """torch.func.jacrev: the Jacobian of `func` w.r.t. the argument(s) at `argnums`, each
    block of shape `output.shape + input.shape`, nested as torch's (outputs, then arguments).
    One forward and one backward pass per output element; `chunk_size` changes nothing."""
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(
            chunk_size, int) or chunk_size <= 0):
        raise InvalidArgumentError(f"jacrev: chunk_size should be None or an int greater than "
                                   f"0, got {chunk_size!r}")
    return _jac_wrapper("jacrev", func, argnums, has_aux, "different")


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """torch.func.jacfwd: the same Jacobian as `jacrev`, computed the same way (lazyt has no
    forward mode: one forward and backward pass per output element, not per input element).
    randomness='error' refuses random draws; 'same' and 'different' both replay one draw."""
    if randomness not in _RANDOMNESS:
        raise InvalidArgumentError(f"jacfwd: randomness must be 'error', 'different' or "
                                   f"'same', got {randomness!r}")
    return _jac_wrapper("jacfwd", func, argnums, has_aux, randomness)


def _tangents(fn: str, primals, tangents) -> tuple[list, list]:
    if not isinstance(primals, tuple):
        raise InvalidArgumentError(f"{fn}: expected primals to be a tuple (f(*primals) must be "
                                   f"a valid call), got {type(primals).__name__}")
    ps, pspec = _flatten(primals)
    ts, tspec = _flatten(tangents)
    if pspec != tspec:
        raise InvalidArgumentError(f"{fn}: expected primals and tangents to have the same "
                                   f"structure, got {pspec} and {tspec}")
    for what, items in (("primals", ps), ("tangents", ts)):
        if not items:
            raise InvalidArgumentError(f"{fn}: expected {what} to hold at least one tensor")
        for x in items:
            if not isinstance(x, Tensor):
                raise InvalidArgumentError(f"{fn}: expected {what} to hold only tensors, got "
                                           f"{type(x).__name__}")
    for i, (p, t) in enumerate(zip(ps, ts)):
        if tuple(p.shape) != tuple(t.shape):
            raise ShapeError(f"{fn}: tangent {i} has shape {tuple(t.shape)}, but its primal has "
                             f"shape {tuple(p.shape)}")
    return ps, ts


def _contract(outs: list, blocks: list, copies: list, ts: list) -> list:
    """J v for each output: the Jacobian blocks contracted with the tangents (differentiable
    w.r.t. the tangents, as J does not depend on them)."""
    products = []
    for o, per_in in zip(outs, blocks):
        total = None
        for x, J, t in zip(copies, per_in, ts):
            if x.numel() == 0 or o.numel() == 0:
                continue
            term = J.reshape(o.numel(), x.numel()) @ F.to(t, J.dtype).reshape(-1)
            total = term if total is None else total + term
        products.append(creation.zeros_like(o).detach() if total is None
                        else total.reshape(tuple(o.shape)))
    return products


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """torch.func.jvp: `(func(*primals), J @ tangents)` (with `aux` third if `has_aux`).
    Exact, computed in reverse mode: one forward and backward pass per output element."""
    fn = "jvp(f, primals, tangents)"
    if strict:
        raise MissingImplError(f"{fn}: strict=True is not implemented (nor in torch)")
    _, ts = _tangents(fn, primals, tangents)
    outs, ospec, blocks, fw = _jacobian(fn, func, primals, None, has_aux)
    values = _unflatten([o.detach() for o in outs], ospec)
    products = _unflatten(_contract(outs, blocks, fw.copies, ts), ospec)
    return (values, products, fw.aux) if has_aux else (values, products)


def linearize(func: Callable, *primals):
    """torch.func.linearize: `(func(*primals), jvp_fn)`, `jvp_fn(*tangents)` the JVP at
    `primals`. The Jacobian is computed once here (one pass per output element) and each
    `jvp_fn` call is a matrix-vector product."""
    fn = "linearize(f, *primals)"
    outs, ospec, blocks, fw = _jacobian(fn, func, primals, None, False)

    def jvp_fn(*tangents):
        _, ts = _tangents("linearize's jvp_fn(*tangents)", primals, tangents)
        return _unflatten(_contract(outs, blocks, fw.copies, ts), ospec)

    return _unflatten([o.detach() for o in outs], ospec), jvp_fn


def hessian(func: Callable, argnums=0) -> Callable:
    """torch.func.hessian: refused (`MissingImplError`); it needs gradients of gradients."""
    raise MissingImplError(
        "hessian: second derivatives need gradients of gradients (torch builds the Hessian as "
        "jacfwd(jacrev(f))), which lazyt does not record: backward builds no graph of its own. "
        "Take finite differences of lazyt.func.grad(f) instead")


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """torch.func.functionalize: `func` itself, as lazyt tensors are values, never views of
    a shared storage, so there is no aliasing mutation to remove."""
    if remove not in ("mutations", "mutations_and_views"):
        raise InvalidArgumentError(f"functionalize: remove must be 'mutations' or "
                                   f"'mutations_and_views', got {remove!r}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------- modules
_MISSING = object()


def _merged(fn: str, dicts) -> tuple[dict, bool]:
    if isinstance(dicts, dict):
        return dicts, True
    if isinstance(dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in dicts):
            raise InvalidArgumentError(f"{fn}: expected every element of "
                                       "parameter_and_buffer_dicts to be a dict")
        seen: dict = {}
        for d in dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise InvalidArgumentError(f"{fn}: {repeated} appeared in several dictionaries; "
                                       "which value to use is ambiguous")
        return {k: v for d in dicts for k, v in d.items()}, False
    raise InvalidArgumentError(f"{fn}: expected parameter_and_buffer_dicts to be a dict or a "
                               f"list/tuple of dicts, got {type(dicts).__name__}")


def _named_tensors(module: Module) -> dict:
    out = dict(module.named_parameters(remove_duplicate=False))
    out.update(module.named_buffers(remove_duplicate=False))
    return out


def _untied(fn: str, module: Module, given: dict) -> dict:
    """`given` with every name tied to a given name (the same Parameter registered under
    several names) filled in with that value, as torch's `tie_weights=True`."""
    groups: dict = {}
    for name, t in _named_tensors(module).items():
        groups.setdefault(id(t), set()).add(name)
    tied = {n: names for names in groups.values() if len(names) > 1 for n in names}
    out = dict(given)
    for name in given:
        if name not in tied:
            continue
        names = tied[name]
        values = {id(given[n]) for n in names if n in given}
        if len(values) > 1:
            raise InvalidArgumentError(f"{fn}: got several values for the keys {sorted(names)}, "
                                       "which are tied; pass one, or tie_weights=False")
        for n in names:
            out[n] = given[name]
    return out


def _swap(fn: str, module: Module, key: str, value):
    """Put `value` in the slot `key` names; returns what was there (`_MISSING`: nothing)."""
    path, _, name = key.rpartition(".")
    if not name:
        raise InvalidArgumentError(f"{fn}: a key must name a parameter or buffer, got {key!r}")
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise InvalidArgumentError(f"{fn}: the value for {key!r} must be a tensor, got "
                                   f"{type(value).__name__}")
    m = module.get_submodule(path)
    d = m.__dict__
    for reg in (d["_parameters"], d["_buffers"]):
        if name in reg:
            old = reg[name]
            if value is _MISSING:
                del reg[name]
            else:
                reg[name] = value
            return old
    old = d.get(name, _MISSING)
    if value is _MISSING:
        d.pop(name, None)
    else:
        d[name] = value
    return old


def functional_call(module: Module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """torch.func.functional_call: `module(*args, **kwargs)` with the tensors of
    `parameter_and_buffer_dicts` (a dict of dotted names, or a list/tuple of such dicts) in
    place of its parameters and buffers, restored afterwards even on an error. Gradients flow
    to the given tensors, so `grad(lambda p: loss(functional_call(model, p, (x,))))(params)`
    differentiates w.r.t. `params`."""
    fn = "functional_call"
    if not isinstance(module, Module):
        raise InvalidArgumentError(f"{fn}: expected a lazyt.nn.Module, got "
                                   f"{type(module).__name__}")
    given, single = _merged(fn, parameter_and_buffer_dicts)
    state = _untied(fn, module, given) if tie_weights else dict(given)
    if strict:
        valid = set(_named_tensors(module))
        missing, unexpected = sorted(valid - set(state)), sorted(set(state) - valid)
        msgs = ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected
                else []) + ([f"Missing key(s): {', '.join(map(repr, missing))}."] if missing
                            else [])
        if msgs:
            raise InvalidArgumentError(f"{fn}: error(s) in reparametrizing for "
                                       f"{type(module).__name__}:\n\t" + "\n\t".join(msgs))
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    kwargs = {} if kwargs is None else kwargs
    saved: list = []
    try:
        for key, value in state.items():
            saved.append((key, _swap(fn, module, key, value)))
        return module(*args, **kwargs)
    finally:
        for key, old in reversed(saved):
            now = _swap(fn, module, key, old)
            if single and key in given and now is not state[key] and now is not _MISSING:
                given[key] = now        # the module assigned a new value: hand it back


def stack_module_state(models) -> tuple[dict, dict]:
    """torch.func.stack_module_state: the parameters and buffers of same-class `models`
    stacked along a new leading dim, `(params, buffers)` keyed by name, for
    `vmap(functional_call)` over an ensemble. Stacked parameters are new leaves that require
    grad when the models' parameters do."""
    fn = "stack_module_state"
    models = list(models)
    if not models:
        raise InvalidArgumentError(f"{fn}: expected at least one model, got 0")
    if len({m.training for m in models}) > 1:
        raise InvalidArgumentError(f"{fn}: expected all models in the same training/eval mode")
    if len({type(m) for m in models}) > 1:
        raise InvalidArgumentError(f"{fn}: expected all models to be of the same class, got "
                                   f"{sorted({type(m).__name__ for m in models})}")

    def stacked(items: list, name: str) -> Tensor:
        flags = {t.requires_grad for t in items}
        if len(flags) > 1:
            raise InvalidArgumentError(f"{fn}: expected {name} of every model to have the same "
                                       "requires_grad")
        out = F.stack([t.detach() for t in items])
        return out.requires_grad_() if flags.pop() else out

    per = [dict(m.named_parameters()) for m in models]
    params = {k: stacked([p[k] for p in per], k) for k in per[0]}
    per = [dict(m.named_buffers()) for m in models]
    buffers = {k: stacked([b[k] for b in per], k) for k in per[0]}
    return params, buffers
