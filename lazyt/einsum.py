"""torch.einsum: Einstein summation over any equation torch accepts (implicit or explicit
output, repeated subscripts for diagonals and traces, `...` for broadcast dims, size-1 dims
broadcasting against any size), and torch's sublist form, as a composite of diagonal, sum,
permute, reshape, multiply and matmul, so autodiff differentiates it.

Operands are contracted left to right, as torch does without a contraction path. Before each
pairwise step a subscript no later operand or the output needs is summed away; subscripts
shared by the pair and needed later are batch dims of one matmul, shared ones not needed
later are its contraction, and the rest are its rows and columns.
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

from . import dtype as dt
from .dispatch import DispatchTensor, common_device
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .functional import matmul, to
from .layout import diagonal
from .mathops import tensor_arg
from .tensor import Tensor

__all__ = ["einsum"]

_ELLIPSIS = "..."


# ---------------------------------------------------------------------- parsing
def _parse_term(term: str, where: str) -> list:
    """The subscripts of one term: letters, and `_ELLIPSIS` at most once."""
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise InvalidArgumentError(f"einsum(): found '.' in {where} that is not part "
                                           "of an ellipsis '...'")
            if _ELLIPSIS in out:
                raise InvalidArgumentError(f"einsum(): {where} has more than one ellipsis")
            out.append(_ELLIPSIS)
            i += 3
            continue
        if not (c.isascii() and c.isalpha()):
            raise InvalidArgumentError(f"einsum(): invalid subscript {c!r} in {where}: "
                                       "subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


def _sublist_equation(args: tuple):
    """torch's sublist form `einsum(op1, [0, 1], op2, [1, 2], [0, 2])` as an equation:
    subscript i < 26 is 'A' + i, else 'a' + i - 26; `...` is Python's Ellipsis."""
    def letters(sub) -> str:
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
                continue
            try:
                s = operator.index(s)
            except TypeError:
                raise InvalidArgumentError(f"einsum(): sublist subscripts must be ints in "
                                           f"[0, 52) or Ellipsis, got {s!r}") from None
            if not 0 <= s < 52:
                raise InvalidArgumentError(f"einsum(): sublist subscript {s} is not in "
                                           "[0, 52)")
            out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
        return "".join(out)
    operands, terms = list(args[0::2]), [letters(s) for s in args[1::2]]
    out = None
    if len(args) % 2:          # a trailing output sublist
        out = letters(args[-1])
        operands = operands[:-1]
    eq = ",".join(terms[:len(operands)])
    return (eq if out is None else f"{eq}->{out}"), operands


# ---------------------------------------------------------------------- per operand
def _label_operand(i: int, x: Tensor, term: list, n_ell: int) -> list:
    """The labels of `x`'s dims: letters, and ints 0..n_ell-1 for the ellipsis dims
    (right-aligned across operands, as broadcasting aligns them)."""
    letters = [s for s in term if s != _ELLIPSIS]
    if _ELLIPSIS not in term:
        if len(letters) != x.ndim:
            raise ShapeError(f"einsum(): the {len(letters)} subscripts of operand {i} do not "
                             f"match its {x.ndim} dims (shape {x.shape}) and no ellipsis was "
                             "given")
        return letters
    e = x.ndim - len(letters)
    if e < 0:
        raise ShapeError(f"einsum(): operand {i} has {len(letters)} subscripts, more than its "
                         f"{x.ndim} dims (shape {x.shape})")
    at = term.index(_ELLIPSIS)
    return term[:at] + list(range(n_ell - e, n_ell)) + term[at + 1:]


def _take_diagonals(i: int, x: Tensor, labels: list):
    """A subscript repeated within one operand selects the diagonal of those dims."""
    labels = list(labels)
    while True:
        seen = {}
        for p, lab in enumerate(labels):
            if lab in seen:
                q = seen[lab]
                if x.shape[q] != x.shape[p]:
                    raise ShapeError(f"einsum(): subscript {lab} is repeated for operand {i} "
                                     f"but the sizes don't match, {x.shape[q]} != "
                                     f"{x.shape[p]} (shape {x.shape})")
                x = diagonal(x, 0, q, p)
                labels = [l for k, l in enumerate(labels) if k not in (p, q)] + [lab]
                break
            seen[lab] = p
        else:
            return x, labels


def _sum_out(x: Tensor, labels: list, keep) -> tuple:
    """Sum the dims whose label is not in `keep`."""
    dims = tuple(p for p, lab in enumerate(labels) if lab not in keep)
    if not dims:
        return x, labels
    return x.sum(dims), [lab for lab in labels if lab in keep]


def _permute(x: Tensor, labels: list, order: list) -> Tensor:
    perm = [labels.index(lab) for lab in order]
    return x if perm == list(range(len(perm))) else x.permute(*perm)


def _size(x: Tensor, labels: list, lab) -> int:
    return x.shape[labels.index(lab)]


# ---------------------------------------------------------------------- pairwise contraction
def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep) -> tuple:
    """`a` and `b` multiplied and summed over the subscripts they share that `keep` lacks."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    summed = [lab for lab in la if lab in lb and lab not in keep]
    rows = [lab for lab in la if lab not in lb]
    cols = [lab for lab in lb if lab not in la]
    # a summed dim of size 1 on one side broadcasts: sum the other side over it first
    for lab in summed:
        na, nb = _size(a, la, lab), _size(b, lb, lab)
        if na == 1 and nb != 1:
            b = b.sum(lb.index(lab), keepdim=True)
        elif nb == 1 and na != 1:
            a = a.sum(la.index(lab), keepdim=True)
    if not summed:  # an elementwise or outer product: broadcast multiply
        a = _permute(a, la, batch + rows)
        b = _permute(b, lb, batch + cols)
        nb = len(batch)
        a = a.reshape(a.shape + (1,) * len(cols))
        b = b.reshape(b.shape[:nb] + (1,) * len(rows) + b.shape[nb:])
        return a * b, batch + rows + cols
    sizes_a = [_size(a, la, lab) for lab in batch]
    sizes_b = [_size(b, lb, lab) for lab in batch]
    rows_n = [_size(a, la, lab) for lab in rows]
    cols_n = [_size(b, lb, lab) for lab in cols]
    k = math.prod(_size(a, la, lab) for lab in summed)
    m, n = math.prod(rows_n), math.prod(cols_n)
    a = _permute(a, la, batch + rows + summed).reshape(tuple(sizes_a) + (m, k))
    b = _permute(b, lb, batch + summed + cols).reshape(tuple(sizes_b) + (k, n))
    out = matmul(a, b)
    return out.reshape(out.shape[:-2] + tuple(rows_n) + tuple(cols_n)), batch + rows + cols


# ---------------------------------------------------------------------- einsum
def einsum(*args) -> Tensor:
    """torch.einsum(equation, *operands): sums the products of the operands' elements over
    the subscripts missing from the output. Without `->` the output is the ellipsis dims
    followed by the subscripts used once, in alphabetical order (uppercase first); with an
    explicit output lacking `...`, the ellipsis dims are summed. Also takes the operands as
    one list, and torch's sublist form `einsum(a, [0, 1], b, [1, 2], [0, 2])`."""
    if not args:
        raise InvalidArgumentError("einsum(): expected an equation and at least one operand")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise InvalidArgumentError("einsum(): must provide at least one operand")
    ts = []
    for i, o in enumerate(operands):
        if not isinstance(o, (Tensor, DispatchTensor)):
            raise DTypeError(f"einsum(): operand {i} must be a lazyt.Tensor, got "
                             f"{type(o).__name__}")
        ts.append(tensor_arg("einsum", o))
    common_device("einsum", ts)
    out_dtype = ts[0].dtype
    for t in ts[1:]:
        out_dtype = dt.promote(out_dtype, t.dtype)
    ts = [to(t, out_dtype) for t in ts]

    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise InvalidArgumentError(f"einsum(): equation {equation!r} has more than one '->'")
    terms = [_parse_term(t, f"the subscripts of operand {i}")
             for i, t in enumerate(lhs.split(","))]
    if len(terms) != len(ts):
        more = "more" if len(ts) > len(terms) else "fewer"
        raise InvalidArgumentError(f"einsum(): {more} operands were provided ({len(ts)}) than "
                                   f"specified in the equation {equation!r} ({len(terms)})")
    n_ell = max([t.ndim - len([s for s in term if s != _ELLIPSIS])
                 for t, term in zip(ts, terms) if _ELLIPSIS in term], default=0)
    labelled = [_label_operand(i, t, term, n_ell) for i, (t, term) in enumerate(zip(ts, terms))]
    output = _output_labels(terms, rhs if arrow else None, n_ell)
    parts = [_take_diagonals(i, t, lab) for i, (t, lab) in enumerate(zip(ts, labelled))]
    _check_sizes([t for t, _ in parts], [lab for _, lab in parts])
    needed_after = []  # labels that operands i+1.. or the output use
    acc = set(output)
    for _, lab in reversed(parts):
        needed_after.append(set(acc))
        acc |= set(lab)
    needed_after.reverse()

    x, lx = _sum_out(*parts[0], needed_after[0])
    for i in range(1, len(parts)):
        y, ly = parts[i]
        y, ly = _sum_out(y, ly, needed_after[i] | set(lx))
        x, lx = _contract(x, lx, y, ly, needed_after[i])
    x, lx = _sum_out(x, lx, set(output))
    return _permute(x, lx, output)


def _output_labels(terms: list, rhs: str | None, n_ell: int) -> list:
    ell = list(range(n_ell))
    letters = [s for term in terms for s in term if s != _ELLIPSIS]
    if rhs is None:
        once = sorted(s for s in set(letters) if letters.count(s) == 1)
        return ell + once
    out_term = _parse_term(rhs, "the output")
    out = []
    for s in out_term:
        if s == _ELLIPSIS:
            out.extend(ell)
            continue
        if s in out:
            raise InvalidArgumentError(f"einsum(): output subscript {s} appears more than once "
                                       "in the output")
        if s not in letters:
            raise InvalidArgumentError(f"einsum(): output subscript {s} does not appear in the "
                                       "equation for any input operand")
        out.append(s)
    return out


def _check_sizes(ts: Sequence[Tensor], labelled: list) -> None:
    """A subscript's dims agree across operands, or are 1 (and broadcast)."""
    size, first = {}, {}
    for i, (t, labels) in enumerate(zip(ts, labelled)):
        for lab, n in zip(labels, t.shape):
            if n == 1:
                continue
            if lab in size and size[lab] != n:
                name = "an ellipsis dim" if isinstance(lab, int) else f"subscript {lab}"
                raise ShapeError(f"einsum(): operands do not broadcast: {name} has size "
                                 f"{size[lab]} in operand {first[lab]} and {n} in operand {i} "
                                 f"(shapes {[tuple(x.shape) for x in ts]})")
            size.setdefault(lab, n)
            first.setdefault(lab, i)
