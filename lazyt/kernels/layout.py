"""Patching Layouts into a model, before its weights load.

A Layout holds a kernel's parameters in the kernel's own layout. It replaces

- one module: built with the same constructor arguments (`Layout(*args, **kwargs)`), or
- several sibling modules (module fusion): built from them in tuple order
  (`Layout(norm, mlp)`); it takes the first one's place and the others become `Identity`.

Each Layout gets a checkpoint adapter (`lazyt.nn.serialization`) that maps the checkpoint's
keys to the Layout's through its `conversion_mapping` and back, and remembers the modules it
replaced (without registering them), which serve as the original forward when the kernel
cannot run. Conversion rules name source keys relative to the replaced module (`weight`), or
for fusion by the Layout's `__init__` argument names (`norm.weight`, `mlp.gate_proj.weight`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import MethodType

from ..nn.linear import Identity
from ..nn.module import Module, functional_call
from ..nn.serialization import ADAPTER_ATTR
from .conversion import check_rules, convert_state, match, revert_state
from .errors import KernelHubError
from .hub import load_kernel

BINDING_ATTR = "_kernel_binding"


def _ns(name: str, rest: str) -> str:
    return f"{name}.{rest}" if name else rest


class LayoutAdapter:
    """Checkpoint adapter of one Layout; keys are relative to the Layout's parent module."""

    def __init__(self, layout_attr: str, child_attrs: tuple, source_names: tuple, rules: list,
                 source_shapes: dict):
        self.layout_attr = layout_attr
        self.child_attrs = child_attrs
        self.source_names = source_names
        self.rules = rules
        self.source_shapes = source_shapes

    def from_checkpoint(self, state: dict) -> dict:
        source = {}
        for key in list(state):
            for name, attr in zip(self.source_names, self.child_attrs):
                if key.startswith(attr + "."):
                    source[_ns(name, key[len(attr) + 1:])] = state.pop(key)
                    break
        for k, v in convert_state(self.rules, source).items():
            state[f"{self.layout_attr}.{k}"] = v
        return state

    def to_source(self, own: dict) -> dict:
        """The Layout's own state (keys relative to it) -> the replaced modules' keys."""
        return revert_state(self.rules, own, self.source_shapes)

    def to_checkpoint(self, state: dict) -> dict:
        prefix = self.layout_attr + "."
        own = {k[len(prefix):]: state.pop(k) for k in list(state) if k.startswith(prefix)}
        attr_of = dict(zip(self.source_names, self.child_attrs))
        for k, v in self.to_source(own).items():
            if self.source_names == ("",):
                state[f"{self.child_attrs[0]}.{k}"] = v
            else:
                name, _, rest = k.partition(".")
                if name not in attr_of:
                    raise KernelHubError(f"{self.layout_attr}: reverted key {k!r} names none of "
                                         f"the fused modules {list(self.source_names)}")
                state[f"{attr_of[name]}.{rest}"] = v
        return state


@dataclass
class KernelBinding:
    """What `kernelize` needs to know about one patched Layout."""

    kernel: type
    path: str
    originals: tuple
    source_names: tuple
    adapter: LayoutAdapter
    active: bool = field(default=False)

    def fallback_forward(self, layout: Module):
        """The forward to use when the kernel cannot run: the Layout class's own `forward` when
        it defines one (a reference written for its parameters; needed when fused modules are
        not applied one after the other), else the replaced modules' forward (in tuple order)
        on the Layout's weights converted back on every call. Both are differentiable with
        respect to the Layout's parameters."""
        own_forward = _own_forward(type(layout))
        if own_forward is not None:
            return MethodType(own_forward, layout)

        def forward(*args, **kwargs):
            own = dict(layout.named_parameters(remove_duplicate=False))
            own.update({k: v for k, v in layout.state_dict().items() if k not in own})
            source = self.adapter.to_source(own)
            out = None
            for i, (name, orig) in enumerate(zip(self.source_names, self.originals)):
                sub = {k[len(name) + 1:] if name else k: v for k, v in source.items()
                       if not name or k.startswith(name + ".")}
                orig.train(layout.training)
                here, there = layout.get_device(), orig.get_device()
                if here is not None and there is not None and here != there:
                    orig.to(here)
                out = functional_call(orig, sub, *args, **kwargs) if i == 0 \
                    else functional_call(orig, sub, out)
            return out

        return forward


def _own_forward(cls: type):
    """`cls.forward` unless it is inherited from `Module` (which only raises)."""
    for klass in cls.__mro__:
        if klass is Module:
            return None
        if "forward" in vars(klass):
            return vars(klass)["forward"]
    return None


def _forward_params(cls: type) -> list:
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    return [(p.name, p.kind) for p in params]


def _signature(cls: type) -> str:
    return str(inspect.signature(cls.forward))


def check_forward_signature(kernel: type, module_cls: type, where: str) -> None:
    """The kernel's forward must take the same arguments as the forward it replaces."""
    if _forward_params(kernel) != _forward_params(module_cls):
        raise KernelHubError(f"kernel {kernel.__name__}.forward{_signature(kernel)} does not match "
                             f"{module_cls.__name__}.forward{_signature(module_cls)}, which it "
                             f"replaces at {where!r} (names and kinds of the arguments must be "
                             "equal)")


def _layout_arg_names(layout_cls: type, attrs: tuple) -> tuple:
    params = list(inspect.signature(layout_cls.__init__).parameters.values())[1:]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return attrs
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    if len(required) > len(attrs) or len(positional) < len(attrs):
        raise KernelHubError(f"{layout_cls.__name__}.__init__"
                             f"{inspect.signature(layout_cls.__init__)} cannot take the "
                             f"{len(attrs)} fused modules {list(attrs)} in order")
    return tuple(p.name for p in positional[:len(attrs)])


def _reference(children) -> tuple:
    for child in children:
        for p in child.parameters():
            return p.device, (p.dtype if p.dtype.is_float else None)
    return None, None


def install_layout(model: Module, parent_path: str, attrs: tuple, kernel: type,
                   layout_cls: type) -> Module:
    """Replace `parent.<attrs>` by one Layout (fusion when several attrs); return it."""
    parent = model.get_submodule(parent_path)
    children = tuple(getattr(parent, a) for a in attrs)
    first_path = f"{parent_path}.{attrs[0]}" if parent_path else attrs[0]
    check_forward_signature(kernel, type(children[0]), first_path)
    if len(children) == 1:
        names = ("",)
        args, kwargs = children[0].init_arguments
        try:
            layout = layout_cls(*args, **kwargs)
        except TypeError as e:
            raise KernelHubError(f"{layout_cls.__name__} must take the same constructor "
                                 f"arguments as {type(children[0]).__name__}, which it replaces "
                                 f"at {first_path!r}: {e}") from None
    else:
        names = _layout_arg_names(layout_cls, attrs)
        layout = layout_cls(*children)
    if not isinstance(layout, Module):  # pragma: no cover - load_kernel checks the class
        raise KernelHubError(f"{layout_cls.__name__} is not a lazyt.nn.Module")
    dev, dtype = _reference(children)
    if dev is not None:
        layout.to(device=dev, dtype=dtype)
    layout.train(children[0].training)

    rules = check_rules(getattr(layout_cls, "conversion_mapping", None), layout_cls.__name__)
    source = {_ns(name, k): v for name, child in zip(names, children)
              for k, v in child.state_dict().items()}
    adapter = LayoutAdapter(attrs[0], attrs, names, rules, {k: v.shape for k, v in source.items()})
    expected = {k: v.shape for k, v in convert_state(rules, source).items()}
    actual = {k: v.shape for k, v in layout.state_dict().items()}
    if expected != actual:
        diff = [f"{k}: converted {expected.get(k)}, Layout {actual.get(k)}"
                for k in sorted(set(expected) | set(actual)) if expected.get(k) != actual.get(k)]
        raise KernelHubError(f"{layout_cls.__name__} at {first_path!r}: its conversion_mapping "
                             f"does not turn the replaced modules' state into the Layout's: "
                             + "; ".join(diff))

    _drop_weights(children, keep=layout)
    binding = KernelBinding(kernel, first_path, children, names, adapter)
    layout.__dict__[ADAPTER_ATTR] = adapter
    layout.__dict__[BINDING_ATTR] = binding
    setattr(parent, attrs[0], layout)
    for a in attrs[1:]:
        setattr(parent, a, Identity())
    # Until kernelize decides, the Layout runs the kernel's forward (as transformers injects).
    layout.__dict__["forward"] = MethodType(kernel.forward, layout)
    return layout


def _drop_weights(originals, keep: Module) -> None:
    """The replaced modules keep their structure but not their weights (the fallback passes
    the Layout's in), except parameters the Layout itself holds."""
    kept = {id(p) for p in keep.parameters()}
    for original in originals:
        for m in original.modules():
            for name, p in list(m.named_parameters(recurse=False)):
                if id(p) not in kept:
                    m.register_parameter(name, None)


def binding_of(module: Module) -> KernelBinding | None:
    return module.__dict__.get(BINDING_ATTR)


def _class_name_sites(model: Module, class_name: str, skip) -> list:
    sites = []
    for path, m in model.named_modules():
        if type(m).__name__ != class_name or skip(path):
            continue
        if not path:
            raise KernelHubError(f"KernelConfig key {class_name!r} matches the model itself; "
                                 "only submodules can be replaced")
        parent, _, attr = path.rpartition(".")
        sites.append((parent, (attr,)))
    return sites


def _fusion_sites(model: Module, pairs: tuple, skip) -> list:
    modules = dict(model.named_modules())
    parent_pattern = pairs[0][1].rpartition(".")[0]
    per_pattern = []
    for cls_name, pattern in pairs:
        found, wrong = set(), []
        for path, m in modules.items():
            if skip(path) or match(pattern, path) is None:
                continue
            if type(m).__name__ == cls_name:
                found.add(path.rpartition(".")[0])
            else:
                wrong.append(f"{path} is {type(m).__name__}")
        if not found:
            hint = f" ({'; '.join(wrong[:3])})" if wrong else ""
            raise KernelHubError(f"KernelConfig fusion pattern ({cls_name!r}, {pattern!r}) "
                                 f"matches no module{hint}")
        per_pattern.append(found)
    parents = set.intersection(*per_pattern)
    if not parents:
        raise KernelHubError(f"KernelConfig fusion key {pairs}: the patterns match, but never "
                             f"all under one parent {parent_pattern!r}")
    attrs = tuple(p.rpartition(".")[2] for _, p in pairs)
    order = {path: i for i, path in enumerate(modules)}
    return [(parent, attrs) for parent in sorted(parents, key=order.__getitem__)]


def patch_model(model: Module, entries, kernel_paths=None) -> list:
    """Install the Layouts of `entries` (a KernelConfig's, fusion keys first); returns the
    paths of the installed Layouts."""
    entries = sorted(entries, key=lambda e: not e.is_fusion)
    kernels = [load_kernel(e.value, kernel_paths) for e in entries]  # repo errors change nothing
    installed: list = []
    for entry, (kernel, layout_cls) in zip(entries, kernels):
        layouts = [p for p, m in model.named_modules() if binding_of(m) is not None]

        def skip(path: str) -> bool:  # Layouts and what they hold are not replaced again
            return any(path == p or path.startswith(p + ".") for p in layouts)

        if entry.is_fusion:
            sites = _fusion_sites(model, entry.pairs, skip)
        else:
            sites = _class_name_sites(model, entry.class_name, skip)
            if not sites:
                raise KernelHubError(f"KernelConfig key {entry.class_name!r} matches no module "
                                     f"of {type(model).__name__}")
        for parent, attrs in sites:
            install_layout(model, parent, attrs, kernel, layout_cls)
            installed.append(f"{parent}.{attrs[0]}" if parent else attrs[0])
    return installed
