"""Containers: `Sequential` (calls children in order), `ModuleList` and `ModuleDict` (hold
children under index or key names, e.g. `model.layers.0.mlp`). Their list and dict methods
follow torch's, including which keys survive slicing and deleting."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable as _IterableABC
from itertools import chain
from typing import Iterable, Iterator, Mapping

from ..errors import IndexOutOfRangeError, InvalidArgumentError
from .module import _TREE_EPOCH, Module, ModuleError


def _check_module(op: str, m) -> Module:
    if not isinstance(m, Module):
        raise ModuleError(f"{op}: expected a Module, got {type(m).__name__}")
    return m


def _index(owner: Module, i) -> int:
    """`i` as a non-negative position among `owner`'s children."""
    n = len(owner._modules)
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexOutOfRangeError(f"{type(owner).__name__}: index {i} out of range for "
                                   f"length {n}")
    return i % n


def _renumber(owner: Module, modules: Iterable[Module]) -> None:
    """Re-register `modules` under the keys "0", "1", ... (after a delete or insert)."""
    mods = list(modules)
    owner._modules.clear()
    for j, m in enumerate(mods):
        owner._modules[str(j)] = m
    _TREE_EPOCH[0] += 1


def _delete(owner: Module, i) -> None:
    keys = list(owner._modules)
    for key in (keys[i] if isinstance(i, slice) else [keys[_index(owner, i)]]):
        delattr(owner, key)
    _renumber(owner, owner._modules.values())


class ModuleList(Module):
    """A list of modules registered as children "0", "1", ..."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return type(self)(mods[i])
        return mods[_index(self, i)]

    def __setitem__(self, i: int, m: Module) -> None:
        setattr(self, str(_index(self, i)), _check_module("ModuleList", m))

    def __delitem__(self, i) -> None:
        _delete(self, i)

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList(chain(self, other))

    def append(self, m: Module) -> "ModuleList":
        self.add_module(str(len(self)), _check_module("ModuleList.append", m))
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not isinstance(modules, _IterableABC):
            raise ModuleError(f"ModuleList.extend: expected an iterable of Modules, got "
                              f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, m: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, _check_module("ModuleList.insert", m))
        _renumber(self, mods)

    def pop(self, i) -> Module:
        """Remove and return the module at `i` (later ones are renumbered)."""
        m = self[i]
        del self[i]
        return m

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward; iterate over it")


class Sequential(Module):
    """Calls its children in order, each on the previous one's output. Built from modules
    (keys "0", "1", ...) or from one `OrderedDict` of named modules."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for key, m in modules[0].items():
                self.add_module(key, _check_module("Sequential", m))
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), _check_module("Sequential", m))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, i):
        """A module, or for a slice a Sequential keeping the original keys (as torch)."""
        if isinstance(i, slice):
            return type(self)(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[_index(self, i)]

    def __setitem__(self, i: int, m: Module) -> None:
        setattr(self, list(self._modules)[_index(self, i)], _check_module("Sequential", m))

    def __delitem__(self, i) -> None:
        """Delete by index or slice; the remaining modules are renumbered "0", "1", ..."""
        _delete(self, i)

    def pop(self, i) -> Module:
        m = self[i]
        del self[i]
        return m

    def _other(self, op: str, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise InvalidArgumentError(f"Sequential {op}: expected a Sequential, got "
                              f"{type(other).__name__}")
        return other

    def __add__(self, other: "Sequential") -> "Sequential":
        return Sequential(*self, *self._other("+", other))

    def __iadd__(self, other: "Sequential") -> "Sequential":
        return self.extend(self._other("+=", other))

    def _times(self, op: str, n) -> int:
        if not isinstance(n, int) or isinstance(n, bool):
            raise ModuleError(f"Sequential {op}: expected an int, got {type(n).__name__}")
        if n <= 0:
            raise InvalidArgumentError(f"Sequential {op}: non-positive multiplication factor "
                                       f"{n}")
        return n

    def __mul__(self, n: int) -> "Sequential":
        return Sequential(*(list(self) * self._times("*", n)))

    __rmul__ = __mul__

    def __imul__(self, n: int) -> "Sequential":
        mods = list(self) * (self._times("*=", n) - 1)
        return self.extend(mods)

    def append(self, m: Module) -> "Sequential":
        self.add_module(str(len(self)), _check_module("Sequential.append", m))
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        for m in list(modules):
            self.append(m)
        return self

    def insert(self, index: int, m: Module) -> "Sequential":
        n = len(self)
        if not -n <= index <= n:
            raise IndexOutOfRangeError(f"Sequential.insert: index {index} out of range for "
                                       f"length {n}")
        mods = list(self._modules.values())
        mods.insert(index, _check_module("Sequential.insert", m))
        _renumber(self, mods)
        return self

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleDict(Module):
    """Modules by string key, in insertion order (keys must be valid attribute names without
    dots)."""

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, m: Module) -> None:
        self.add_module(key, _check_module("ModuleDict", m))

    def __delitem__(self, key: str) -> None:
        del self._modules[key]
        _TREE_EPOCH[0] += 1

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        m = self[key]
        del self[key]
        return m

    def update(self, modules) -> None:
        """Add the entries of a mapping, or of an iterable of (key, module) pairs, in order."""
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = modules.items()
        elif isinstance(modules, _IterableABC):
            pairs = list(modules)
            for j, pair in enumerate(pairs):
                if not isinstance(pair, _IterableABC) or len(pair) != 2:
                    raise ModuleError(f"ModuleDict.update: element #{j} should be a "
                                      f"(key, module) pair, got {pair!r}")
        else:
            raise ModuleError(f"ModuleDict.update: expected a mapping or an iterable of "
                              f"(key, module) pairs, got {type(modules).__name__}")
        for key, m in pairs:
            self[key] = m

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward; index it")
