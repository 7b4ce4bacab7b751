"""Containers: `Sequential` (calls children in order), `ModuleList` and `ModuleDict` (hold
children under index or key names, e.g. `model.layers.0.mlp`)."""
from __future__ import annotations

from typing import Iterable, Iterator, Mapping

from ..errors import IndexOutOfRangeError
from .module import Module, ModuleError


def _check_module(op: str, m) -> Module:
    if not isinstance(m, Module):
        raise ModuleError(f"{op}: expected a Module, got {type(m).__name__}")
    return m


class ModuleList(Module):
    """A list of modules registered as children "0", "1", ..."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise IndexOutOfRangeError(f"{type(self).__name__}: index {i} out of range for "
                                       f"length {n}")
        return i % n

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return type(self)(mods[i]) if type(self) is ModuleList else ModuleList(mods[i])
        return mods[self._index(i)]

    def __setitem__(self, i: int, m: Module) -> None:
        setattr(self, str(self._index(i)), _check_module("ModuleList", m))

    def __delitem__(self, i: int) -> None:
        mods = list(self._modules.values())
        del mods[self._index(i)]
        self._modules.clear()
        for j, m in enumerate(mods):
            self._modules[str(j)] = m

    def append(self, m: Module) -> "ModuleList":
        self.add_module(str(len(self)), _check_module("ModuleList.append", m))
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, m: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, _check_module("ModuleList.insert", m))
        self._modules.clear()
        for j, mm in enumerate(mods):
            self._modules[str(j)] = mm

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward; iterate over it")


class Sequential(ModuleList):
    """Calls its children in order, each on the previous one's output."""

    def __init__(self, *modules: Module):
        super().__init__(modules)

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[self._index(i)]

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleDict(Module):
    """Modules by string key (keys must be valid attribute names without dots)."""

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        if modules is not None:
            for k, m in modules.items():
                self[k] = m

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, m: Module) -> None:
        self.add_module(key, _check_module("ModuleDict", m))

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

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

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward; index it")
