"""Shape rules: the one place that computes output shapes, used by the Tensor API, the backends'
callers and the Fusion layer (which must know shapes without running a kernel)."""
from __future__ import annotations

import math
import operator
from typing import Sequence

from .errors import IndexOutOfRangeError, InvalidArgumentError, ShapeError

Shape = tuple


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def broadcast(op: str, *shapes: Shape) -> Shape:
    """Numpy broadcasting of `shapes`; `ShapeError` naming `op` and the shapes when they clash."""
    if len(shapes) == 2:  # the hot case
        a, b = shapes
        if a == b:
            return a
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if -i <= len(s):
                d = s[i]
                if d != 1:
                    if size != 1 and d != size:
                        raise ShapeError(f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} "
                                         f"do not broadcast (dim {i}: {size} vs {d})")
                    size = d
        out.append(size)
    return tuple(out)


def normalize_dim(op: str, dim: int, ndim: int, *, extra: int = 0) -> int:
    """Dim in [-(ndim+extra), ndim+extra) -> non-negative; `extra=1` for unsqueeze/stack."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise IndexOutOfRangeError(f"{op}: dim must be an int, got {dim!r}")
    n = ndim + extra
    if n == 0:
        if dim in (0, -1):
            return 0
    elif -n <= dim < n:
        return dim % n
    hi = max(n, 1)
    raise IndexOutOfRangeError(f"{op}: dim {dim} is out of range for a tensor of rank {ndim} "
                               f"(expected a dim in [{-hi}, {hi - 1}])")


def normalize_dims(op: str, dims, ndim: int) -> tuple:
    """None -> all dims; int or sequence -> sorted unique non-negative dims."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    elif not isinstance(dims, (tuple, list)):
        try:
            dims = (operator.index(dims),)          # numpy integers
        except TypeError:
            raise InvalidArgumentError(f"{op}: dim must be an int or a tuple of ints, got "
                                       f"{dims!r}") from None
    out = sorted({normalize_dim(op, d, ndim) for d in dims})
    if len(out) != len(tuple(dims)):
        raise ShapeError(f"{op}: repeated dim in {tuple(dims)}")
    return tuple(out)


def reduce(shape: Shape, dims: tuple, keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def matmul(lhs: Shape, rhs: Shape) -> Shape:
    """Batched matmul of rank >= 2 operands; batch dims broadcast like numpy."""
    if len(lhs) < 2 or len(rhs) < 2:
        raise ShapeError(f"matmul: operands need rank >= 2, got {lhs} and {rhs}")
    if lhs[-1] != rhs[-2]:
        raise ShapeError(f"matmul: contraction dims differ: {lhs} @ {rhs} "
                         f"({lhs[-1]} vs {rhs[-2]})")
    batch = broadcast("matmul", lhs[:-2], rhs[:-2])
    return batch + (lhs[-2], rhs[-1])


def reshape(shape: Shape, new: Sequence[int]) -> Shape:
    """Resolve one -1 in `new`; `ShapeError` when the sizes differ."""
    new = tuple(int(d) for d in new)
    n = numel(shape)
    if new.count(-1) > 1:
        raise ShapeError(f"reshape: only one dim may be -1, got {new} for shape {shape}")
    if any(d < -1 for d in new):
        raise ShapeError(f"reshape: negative size in {new} for shape {shape}")
    if -1 in new:
        rest = numel(d for d in new if d != -1)
        if rest == 0 or n % rest:
            raise ShapeError(f"reshape: cannot reshape {shape} ({n} elements) to {new}")
        new = tuple(n // rest if d == -1 else d for d in new)
    if numel(new) != n:
        raise ShapeError(f"reshape: cannot reshape {shape} ({n} elements) to {new} "
                         f"({numel(new)} elements)")
    return new


def permute(shape: Shape, axes: Sequence[int]) -> tuple:
    """Normalized axes; `ShapeError` unless they are a permutation of the dims."""
    nd = len(shape)
    if len(axes) != nd:
        raise ShapeError(f"permute: expected {nd} axes for shape {shape}, got {tuple(axes)}")
    norm = tuple(normalize_dim("permute", a, nd) for a in axes)
    if sorted(norm) != list(range(nd)):
        raise ShapeError(f"permute: {tuple(axes)} is not a permutation of the dims of {shape}")
    return norm


def expand(shape: Shape, target: Sequence[int]) -> Shape:
    """Broadcast `shape` to `target` (-1 keeps a dim; new dims may only be added in front)."""
    target = tuple(int(d) for d in target)
    if len(target) < len(shape):
        raise ShapeError(f"expand: cannot expand {shape} to fewer dims {target}")
    lead = len(target) - len(shape)
    out = []
    for i, t in enumerate(target):
        s = shape[i - lead] if i >= lead else None
        if t == -1:
            if s is None:
                raise ShapeError(f"expand: -1 is not allowed for a new leading dim in {target}")
            t = s
        if s is not None and s != 1 and s != t:
            raise ShapeError(f"expand: cannot expand {shape} to {target} (dim {i}: {s} vs {t})")
        if t < 0:
            raise ShapeError(f"expand: negative size in {target}")
        out.append(t)
    return tuple(out)


def slice_len(start: int, stop: int, step: int, size: int | None = None) -> int:
    """Elements of a normalized `(start, stop, step)` slice (as `slice.indices` gives: a
    negative step may stop at -1, before element 0); with `size`, `ShapeError` when the
    slice is not normalized for a dim of that size."""
    if size is not None:
        lo, hi = (0, size) if step > 0 else (-1, size - 1)
        if not (lo <= start <= hi and lo <= stop <= hi) and len(range(start, stop, step)):
            raise ShapeError(f"slice: ({start}, {stop}, {step}) is not a normalized slice of a "
                             f"dim of size {size}")
    return len(range(start, stop, step))


def cat(shapes: Sequence[Shape], dim: int) -> Shape:
    first = shapes[0]
    total = 0
    for s in shapes:
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != dim):
            raise ShapeError(f"cat: shapes {[tuple(x) for x in shapes]} differ outside dim {dim}")
        total += s[dim]
    return first[:dim] + (total,) + first[dim + 1:]


def gather(op: str, shape: Shape, dim: int, index: Shape) -> Shape:
    """torch.gather: index has the input's rank and fits inside it outside `dim`."""
    if len(index) != len(shape):
        raise ShapeError(f"{op}: index shape {tuple(index)} must have the rank of the input "
                         f"shape {tuple(shape)}")
    for i, (a, b) in enumerate(zip(index, shape)):
        if i != dim and a > b:
            raise ShapeError(f"{op}: index shape {index} exceeds input shape {shape} at dim {i}")
    return tuple(index)
