"""Checkpoint key conversion rules (a Layout's `conversion_mapping`), reversible.

A rule maps keys of a *source* state (as the checkpoint names them) to keys of a *target*
state (as the Layout names its parameters) and back:

- `WeightRenaming(source_patterns, target_patterns)`: renames, pattern by pattern.
- `WeightConverter(source_patterns, target_patterns, operations=[...])`: gathers the tensors
  of several source keys, runs them through `operations` and stores the results under the
  target keys. Operations: `Concatenate(dim)`, `Chunk(dim)`, `Transpose(dim0, dim1)`,
  `MergeModulelist(dim)`.

Patterns are dotted keys in which `*` matches one segment. A converter's target patterns all
have the same number `k` of `*`; the first `k` captures of a source key name the instance
(e.g. the layer index), further captures index a module list (merged by `MergeModulelist`).

Operations run on *groups*: one list of tensors per source pattern (one tensor each unless a
pattern matched a module list). Reverting walks the operations backwards and needs the shapes
of the source tensors (`source_shapes`) to split concatenations where they were joined.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..functional import cat, stack
from ..tensor import Tensor
from .errors import ConversionError

Groups = list  # list[list[Tensor | tuple]]


# ---------------------------------------------------------------------- patterns
def _segments(pattern: str) -> list:
    if not isinstance(pattern, str) or not pattern or any(not s for s in pattern.split(".")):
        raise ConversionError(f"conversion pattern must be a non-empty dotted key, got "
                              f"{pattern!r}")
    return pattern.split(".")


def match(pattern: str, key: str) -> tuple | None:
    """The segments `*` captured when `key` matches `pattern`, else None."""
    ps, ks = pattern.split("."), key.split(".")
    if len(ps) != len(ks):
        return None
    caps = []
    for p, k in zip(ps, ks):
        if p == "*":
            caps.append(k)
        elif p != k:
            return None
    return tuple(caps)


def fill(pattern: str, captures: Sequence[str]) -> str:
    """`pattern` with its `*` replaced by `captures` in order."""
    caps = iter(captures)
    return ".".join(next(caps) if s == "*" else s for s in pattern.split("."))


def _stars(pattern: str) -> int:
    return pattern.split(".").count("*")


def _index_key(caps: tuple) -> tuple:
    """Sort module-list captures numerically when they are numbers."""
    return tuple((0, int(c), "") if c.isdigit() else (1, 0, c) for c in caps)


def _flat(groups: Groups) -> list:
    return [x for g in groups for x in g]


def _as_list(patterns) -> list:
    if isinstance(patterns, str):
        return [patterns]
    patterns = list(patterns)
    if not patterns:
        raise ConversionError("conversion rule: needs at least one pattern")
    return patterns


# ---------------------------------------------------------------------- operations
class ConversionOp:
    """One step of a `WeightConverter`: forward on tensors, forward on shapes, and revert."""

    def convert(self, groups: Groups, n_targets: int) -> Groups:
        raise NotImplementedError

    def convert_shapes(self, groups: Groups, n_targets: int) -> Groups:
        raise NotImplementedError

    def revert(self, groups: Groups, in_shapes: Groups) -> Groups:
        """Undo `convert`; `in_shapes` are the shapes `convert` received."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _norm_dim(op: str, dim: int, ndim: int) -> int:
    if not -ndim <= dim < ndim:
        raise ConversionError(f"{op}: dim {dim} is out of range for a tensor of rank {ndim}")
    return dim % ndim


class Concatenate(ConversionOp):
    """Join all tensors (across source patterns, in pattern order) along `dim`."""

    def __init__(self, dim: int = 0):
        self.dim = dim

    def convert(self, groups, n_targets):
        return [[cat(_flat(groups), self.dim)]]

    def convert_shapes(self, groups, n_targets):
        shapes = _flat(groups)
        d = _norm_dim("Concatenate", self.dim, len(shapes[0]))
        first = shapes[0]
        for s in shapes[1:]:
            if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first))
                                           if i != d):
                raise ConversionError(f"Concatenate(dim={self.dim}): shapes {shapes} do not "
                                      "fit together")
        return [[first[:d] + (sum(s[d] for s in shapes),) + first[d + 1:]]]

    def revert(self, groups, in_shapes):
        (t,) = _flat(groups)
        sizes = [s[_norm_dim("Concatenate", self.dim, len(s))] for s in _flat(in_shapes)]
        pieces = iter(t.split(sizes, self.dim) if len(sizes) > 1 else (t,))
        return [[next(pieces) for _ in g] for g in in_shapes]


class Chunk(ConversionOp):
    """Split one tensor along `dim` into equal pieces, one per target pattern (or `chunks`)."""

    def __init__(self, dim: int = 0, chunks: int | None = None):
        self.dim = dim
        self.chunks = chunks

    def _n(self, groups, n_targets) -> int:
        if len(_flat(groups)) != 1:
            raise ConversionError(f"Chunk(dim={self.dim}): needs exactly one tensor, got "
                                  f"{len(_flat(groups))} (put Concatenate or MergeModulelist "
                                  "first)")
        return self.chunks or n_targets

    def convert(self, groups, n_targets):
        n = self._n(groups, n_targets)
        (t,) = _flat(groups)
        self.convert_shapes([[t.shape]], n)
        return [[piece] for piece in t.chunk(n, self.dim)]

    def convert_shapes(self, groups, n_targets):
        n = self._n(groups, n_targets)
        (s,) = _flat(groups)
        d = _norm_dim("Chunk", self.dim, len(s))
        if s[d] % n:
            raise ConversionError(f"Chunk(dim={self.dim}): size {s[d]} of shape {s} does not "
                                  f"split into {n} equal pieces")
        return [[s[:d] + (s[d] // n,) + s[d + 1:]] for _ in range(n)]

    def revert(self, groups, in_shapes):
        return [[cat(_flat(groups), self.dim)]]


class Transpose(ConversionOp):
    """Swap two dims of every tensor (stored contiguous, as a checkpoint needs)."""

    def __init__(self, dim0: int = 0, dim1: int = 1):
        self.dim0 = dim0
        self.dim1 = dim1

    def _t(self, t: Tensor) -> Tensor:
        return t.transpose(self.dim0, self.dim1).contiguous()

    def convert(self, groups, n_targets):
        return [[self._t(t) for t in g] for g in groups]

    def convert_shapes(self, groups, n_targets):
        out = []
        for g in groups:
            row = []
            for s in g:
                a = _norm_dim("Transpose", self.dim0, len(s))
                b = _norm_dim("Transpose", self.dim1, len(s))
                s = list(s)
                s[a], s[b] = s[b], s[a]
                row.append(tuple(s))
            out.append(row)
        return out

    def revert(self, groups, in_shapes):
        return self.convert(groups, 0)


class MergeModulelist(ConversionOp):
    """Stack the tensors of each source pattern's module list (`experts.*.w`) along a new
    `dim`, in index order."""

    def __init__(self, dim: int = 0):
        self.dim = dim

    def convert(self, groups, n_targets):
        return [[stack(g, self.dim)] for g in groups]

    def convert_shapes(self, groups, n_targets):
        out = []
        for g in groups:
            if any(s != g[0] for s in g):
                raise ConversionError(f"MergeModulelist(dim={self.dim}): shapes {g} differ")
            d = self.dim % (len(g[0]) + 1)
            out.append([g[0][:d] + (len(g),) + g[0][d:]])
        return out

    def revert(self, groups, in_shapes):
        out = []
        for g, shapes in zip(groups, in_shapes):
            (t,) = g
            d = self.dim % t.ndim
            out.append([p.squeeze(d) for p in t.split(1, d)][:len(shapes)])
        return out


# ---------------------------------------------------------------------- rules
class ConversionRule:
    """A rule of a `conversion_mapping`."""

    source_patterns: list
    target_patterns: list

    def convert(self, state: dict) -> dict:
        """Take the keys this rule matches out of `state` (mutated) and return their targets."""
        raise NotImplementedError

    def revert(self, state: dict, source_shapes: Mapping[str, tuple]) -> dict:
        """Take target keys out of `state` (mutated) and return their source keys."""
        raise NotImplementedError


class WeightRenaming(ConversionRule):
    """Rename keys: `source_patterns[i]` -> `target_patterns[i]` (strings or equal-length
    lists; `*` captures carry over in order)."""

    def __init__(self, source_patterns, target_patterns):
        self.source_patterns = _as_list(source_patterns)
        self.target_patterns = _as_list(target_patterns)
        if len(self.source_patterns) != len(self.target_patterns):
            raise ConversionError(f"WeightRenaming: {len(self.source_patterns)} source patterns "
                                  f"but {len(self.target_patterns)} target patterns")
        for s, t in zip(self.source_patterns, self.target_patterns):
            _segments(s), _segments(t)
            if _stars(s) != _stars(t):
                raise ConversionError(f"WeightRenaming: {s!r} and {t!r} have different numbers "
                                      "of '*'")

    @staticmethod
    def _move(state: dict, froms: list, tos: list) -> dict:
        out = {}
        for key in list(state):
            for f, t in zip(froms, tos):
                caps = match(f, key)
                if caps is not None:
                    out[fill(t, caps)] = state.pop(key)
                    break
        return out

    def convert(self, state: dict) -> dict:
        return self._move(state, self.source_patterns, self.target_patterns)

    def revert(self, state: dict, source_shapes=None) -> dict:
        return self._move(state, self.target_patterns, self.source_patterns)

    def __repr__(self) -> str:
        return f"WeightRenaming({self.source_patterns!r}, {self.target_patterns!r})"


class WeightConverter(ConversionRule):
    """Many source keys -> `operations` -> many target keys (see the module docstring)."""

    def __init__(self, source_patterns, target_patterns, operations: Sequence[ConversionOp] = ()):
        self.source_patterns = _as_list(source_patterns)
        self.target_patterns = _as_list(target_patterns)
        self.operations = list(operations)
        for p in self.source_patterns + self.target_patterns:
            _segments(p)
        for op in self.operations:
            if not isinstance(op, ConversionOp):
                raise ConversionError(f"WeightConverter: operations must be ConversionOps "
                                      f"(Concatenate, Chunk, Transpose, MergeModulelist), got "
                                      f"{op!r}")
        stars = {_stars(t) for t in self.target_patterns}
        if len(stars) != 1:
            raise ConversionError(f"WeightConverter: target patterns {self.target_patterns} "
                                  "have different numbers of '*'")
        self.k = stars.pop()
        for s in self.source_patterns:
            if _stars(s) < self.k:
                raise ConversionError(f"WeightConverter: source pattern {s!r} has fewer '*' than "
                                      f"the targets ({self.k})")

    def _collect(self, keys, patterns) -> dict:
        """instance captures -> one list of (index captures, key) per pattern."""
        found: dict = {}
        for key in keys:
            for i, p in enumerate(patterns):
                caps = match(p, key)
                if caps is not None:
                    inst, idx = caps[:self.k], caps[self.k:]
                    found.setdefault(inst, [[] for _ in patterns])[i].append((idx, key))
                    break
        for lists in found.values():
            for lst in lists:
                lst.sort(key=lambda ik: _index_key(ik[0]))
        return found

    def _incomplete(self, inst, lists, patterns, what: str):
        absent = [p for p, lst in zip(patterns, lists) if not lst]
        if absent:
            where = f" (instance {'.'.join(inst)})" if inst else ""
            raise ConversionError(f"{self!r}: no {what} key matches {absent}{where}; found "
                                  + ", ".join(k for lst in lists for _, k in lst))

    def _shape_history(self, shapes: Groups) -> list:
        history = [shapes]
        for op in self.operations:
            shapes = op.convert_shapes(shapes, len(self.target_patterns))
            history.append(shapes)
        return history

    def convert(self, state: dict) -> dict:
        out = {}
        for inst, lists in self._collect(list(state), self.source_patterns).items():
            self._incomplete(inst, lists, self.source_patterns, "source")
            groups = [[state.pop(k) for _, k in lst] for lst in lists]
            self._shape_history([[t.shape for t in g] for g in groups])  # validates shapes
            for op in self.operations:
                groups = op.convert(groups, len(self.target_patterns))
            if len(groups) != len(self.target_patterns) or any(len(g) != 1 for g in groups):
                raise ConversionError(f"{self!r}: the operations produce "
                                      f"{[len(g) for g in groups]} tensors per group, but there "
                                      f"are {len(self.target_patterns)} target patterns")
            for (t,), pattern in zip(groups, self.target_patterns):
                out[fill(pattern, inst)] = t
        return out

    def revert(self, state: dict, source_shapes: Mapping[str, tuple]) -> dict:
        out = {}
        sources = self._collect(list(source_shapes), self.source_patterns)
        for inst, lists in self._collect(list(state), self.target_patterns).items():
            self._incomplete(inst, lists, self.target_patterns, "target")
            src = sources.get(inst)
            if src is None:
                raise ConversionError(f"{self!r}: cannot revert instance {'.'.join(inst)!r}: "
                                      "no source shapes are known for it")
            self._incomplete(inst, src, self.source_patterns, "source")
            history = self._shape_history([[tuple(source_shapes[k]) for _, k in lst]
                                           for lst in src])
            groups = [[state.pop(k) for _, k in lst] for lst in lists]
            for op, in_shapes in zip(reversed(self.operations), reversed(history[:-1])):
                groups = op.revert(groups, in_shapes)
            for lst, g in zip(src, groups):
                for (_, key), t in zip(lst, g):
                    out[key] = t
        return out

    def __repr__(self) -> str:
        return (f"WeightConverter({self.source_patterns!r}, {self.target_patterns!r}, "
                f"operations={self.operations!r})")


def convert_state(rules: Sequence[ConversionRule], state: Mapping[str, Any]) -> dict:
    """Source (checkpoint) keys -> target keys; keys no rule matches pass through."""
    remaining = dict(state)
    out = {}
    for rule in rules:
        out.update(rule.convert(remaining))
    out.update(remaining)
    return out


def revert_state(rules: Sequence[ConversionRule], state: Mapping[str, Any],
                 source_shapes: Mapping[str, tuple]) -> dict:
    """Target keys -> source (checkpoint) keys; `source_shapes` names every source key and
    its shape (the original module's parameters)."""
    remaining = dict(state)
    out = {}
    for rule in reversed(list(rules)):
        out.update(rule.revert(remaining, source_shapes))
    out.update(remaining)
    return out


def check_rules(rules: Any, owner: str) -> list:
    """`rules` as a list of ConversionRules; a clear error naming `owner` otherwise."""
    if rules is None:
        return []
    if isinstance(rules, ConversionRule):
        return [rules]
    try:
        rules = list(rules)
    except TypeError:
        raise ConversionError(f"{owner}.conversion_mapping must be a list of WeightRenaming / "
                              f"WeightConverter rules, got {type(rules).__name__}") from None
    for r in rules:
        if not isinstance(r, ConversionRule):
            raise ConversionError(f"{owner}.conversion_mapping: expected WeightRenaming / "
                                  f"WeightConverter rules, got {r!r}")
    return rules
