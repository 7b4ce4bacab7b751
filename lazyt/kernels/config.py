"""`KernelConfig`: which modules of a model to replace by which kernels.

Keys are a module class name (`"RMSNorm"`: every module of that class), or for module fusion
a tuple of `(class_name, path_pattern)` pairs naming sibling modules
(`(("RMSNorm", "model.layers.*.post_attention_layernorm"), ("MLP", "model.layers.*.mlp"))`;
`*` matches one path segment; all patterns share one parent). Values are `"repo:ClassName"`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..nn.module import Module
from ..nn.serialization import load_checkpoint_state, to_checkpoint_state
from .errors import KernelHubError
from .hub import parse_spec
from .kernelize import Mode, kernelize
from .layout import patch_model


@dataclass(frozen=True)
class KernelEntry:
    """One key/value of a KernelConfig."""

    class_name: str | None  # plain key
    pairs: tuple | None     # fusion key
    value: str

    @property
    def is_fusion(self) -> bool:
        return self.pairs is not None


def _parse_key(key, value: str) -> KernelEntry:
    if isinstance(key, str):
        if not key.isidentifier():
            raise KernelHubError(f"KernelConfig key {key!r}: expected a module class name")
        return KernelEntry(key, None, value)
    if not isinstance(key, tuple) or len(key) < 2 or not all(
            isinstance(p, tuple) and len(p) == 2 and all(isinstance(s, str) for s in p)
            for p in key):
        raise KernelHubError(f"KernelConfig key {key!r}: expected a class name or a tuple of at "
                             "least two (class_name, path_pattern) pairs")
    parents = {}
    for cls_name, pattern in key:
        segs = pattern.split(".")
        if any(not s for s in segs) or segs[-1] == "*":
            raise KernelHubError(f"KernelConfig fusion pattern {pattern!r}: expected a dotted "
                                 "module path ending in an attribute name ('*' matches one "
                                 "segment before it)")
        parents.setdefault(".".join(segs[:-1]), []).append(pattern)
    if len(parents) != 1:
        listing = "; ".join(f"{p or '<root>'!r}: {pats}" for p, pats in parents.items())
        raise KernelHubError(f"KernelConfig fusion key: the patterns must share one parent "
                             f"module, but they have different parents ({listing})")
    attrs = [p.rpartition(".")[2] for _, p in key]
    if len(set(attrs)) != len(attrs):
        raise KernelHubError(f"KernelConfig fusion key {key!r}: names a module twice")
    return KernelEntry(None, tuple(key), value)


class KernelConfig:
    """A mapping of module class names (or fusion tuples) to `"repo:ClassName"` kernels."""

    def __init__(self, kernel_mapping: Mapping):
        if not isinstance(kernel_mapping, Mapping) or not kernel_mapping:
            raise KernelHubError("KernelConfig: expected a non-empty dict of kernels")
        self.kernel_mapping = dict(kernel_mapping)
        self.entries = []
        for key, value in self.kernel_mapping.items():
            parse_spec(value)
            self.entries.append(_parse_key(key, value))

    def __repr__(self) -> str:
        return f"KernelConfig({self.kernel_mapping!r})"

    def patch_model(self, model: Module, kernel_paths=None) -> list:
        """Install the Layouts into `model` (before its weights load); returns their paths."""
        return patch_model(model, self.entries, kernel_paths)

    def kernelize_model(self, model: Module, mode: Mode = Mode.INFERENCE, device=None,
                        use_fallback: bool = True) -> Module:
        return kernelize(model, mode=mode, device=device, use_fallback=use_fallback)

    def apply(self, model: Module, mode: Mode = Mode.INFERENCE, device=None,
              kernel_paths=None, use_fallback: bool = True) -> Module:
        """Kernelize a model that already holds its weights: patch the Layouts, move the
        weights over through the conversion rules, kernelize. Returns `model`."""
        state = to_checkpoint_state(model)
        self.patch_model(model, kernel_paths=kernel_paths)
        load_checkpoint_state(model, state, strict=True)
        return kernelize(model, mode=mode, device=device, use_fallback=use_fallback)
