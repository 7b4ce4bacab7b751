"""`Module`: the base class of layers and models.

Assigning a `Parameter` or a `Module` to an attribute registers it, so a model's state is
found by walking its attributes (`named_parameters`, `state_dict`). A module remembers the
arguments it was built with (`init_arguments`, `get_config`), which is what `save_pretrained`
writes as `config.json` and what the kernel hub uses to build a Layout with the same arguments.
"""
from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, NamedTuple

import numpy as np

from .. import dtype as dt
from ..creation import tensor as _tensor
from ..device import Device, device as _device
from ..errors import DTypeError, LazytError
from ..tensor import Tensor
from .parameter import Parameter, is_lazy
from .serialization import from_pretrained, save_pretrained


class StateDictError(LazytError, ValueError):
    """`load_state_dict` got keys the module lacks, lacks keys it has, or mis-shaped values."""


class ModuleError(LazytError, TypeError):
    """A module attribute assigned a value of the wrong kind, or a missing submodule path."""


class MissingMemberError(ModuleError, AttributeError):
    """A submodule, parameter or buffer path that names nothing (an AttributeError too, as
    torch raises)."""


class LoadResult(NamedTuple):
    """What `load_state_dict(strict=False)` skipped."""

    missing_keys: list
    unexpected_keys: list


class RemovableHandle:
    """What `register_forward_hook` returns: `remove()` takes the hook out (also as a context
    manager)."""

    _next = 0

    def __init__(self, registry: dict):
        RemovableHandle._next += 1
        self.id = RemovableHandle._next
        self._registry = registry

    def remove(self) -> None:
        self._registry.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class Module:
    """Base class of every layer and model: subclass it, assign parameters and submodules in
    `__init__`, write `forward`; calling the module calls `forward`."""

    training: bool

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        d = self.__dict__
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent"] = set()
        d["_modules"] = {}
        d["training"] = True
        d["_init_args"] = args
        d["_init_kwargs"] = kwargs
        return self

    def __init__(self) -> None:
        """Nothing to do: the registries are set up in `__new__`, so `super().__init__()` is
        optional (but customary)."""

    # ------------------------------------------------------------------ attribute registration
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params, buffers, modules = d["_parameters"], d["_buffers"], d["_modules"]
        if isinstance(value, Parameter):
            if name not in params:
                self._forget(name)
            params[name] = value  # a replaced entry keeps its place (state_dict order)
        elif isinstance(value, Module):
            if name not in modules:
                self._forget(name)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise ModuleError(f"{type(self).__name__}.{name} is a Parameter; assign a "
                                  f"Parameter (or None), not {type(value).__name__}. To change "
                                  f"its value use .{name}.assign(tensor)")
            params[name] = None
        elif name in modules:
            if value is not None:
                raise ModuleError(f"{type(self).__name__}.{name} is a submodule; assign a "
                                  f"Module (or None), not {type(value).__name__}")
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise ModuleError(f"{type(self).__name__}.{name} is a buffer; assign a Tensor "
                                  f"(or None), not {type(value).__name__}")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        d = self.__dict__
        for reg in (d["_parameters"], d["_buffers"], d["_modules"]):
            reg.pop(name, None)
        d["_non_persistent"].discard(name)
        d.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            r = d.get(reg)
            if r is not None and name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        if name in d["_parameters"] or name in d["_buffers"] or name in d["_modules"]:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        d = self.__dict__
        return sorted(set(super().__dir__()) | set(d["_parameters"]) | set(d["_buffers"])
                      | set(d["_modules"]))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` under `name` (same as assigning it as an attribute)."""
        if param is not None and not isinstance(param, Parameter):
            raise ModuleError(f"register_parameter: {name!r} needs a Parameter, got "
                              f"{type(param).__name__} (wrap it: nn.Parameter(tensor))")
        self._forget(name)
        self.__dict__["_parameters"][name] = param

    def register_buffer(self, name: str, value: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is part of the module's state but not trained (moved by `to`, saved
        in `state_dict` unless `persistent=False`)."""
        if value is not None and not isinstance(value, Tensor):
            raise ModuleError(f"register_buffer: {name!r} needs a Tensor, got "
                              f"{type(value).__name__}")
        self._forget(name)
        self.__dict__["_buffers"][name] = value
        if not persistent:
            self.__dict__["_non_persistent"].add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise ModuleError(f"add_module: {name!r} needs a Module, got {type(module).__name__}")
        self._forget(name)
        self.__dict__["_modules"][name] = module

    register_module = add_module

    # ------------------------------------------------------------------ constructor arguments
    @property
    def init_arguments(self) -> tuple:
        """`(args, kwargs)` this module was constructed with."""
        return self.__dict__["_init_args"], dict(self.__dict__["_init_kwargs"])

    def get_config(self) -> dict:
        """The constructor arguments by name, defaults filled in (`type(m)(**m.get_config())`
        builds an equal module). Raises when `__init__` takes `*args`."""
        args, kwargs = self.init_arguments
        sig = inspect.signature(type(self).__init__)
        try:
            bound = sig.bind(None, *args, **kwargs)
        except TypeError as e:
            raise ModuleError(f"get_config: {type(self).__name__} was built with arguments that "
                              f"do not bind to its __init__ signature: {e}") from None
        bound.apply_defaults()
        config = {}
        for i, (name, value) in enumerate(bound.arguments.items()):
            if i == 0:
                continue  # self
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise ModuleError(f"get_config: {type(self).__name__}.__init__ takes "
                                      f"*{name}; its arguments have no names")
            elif kind is inspect.Parameter.VAR_KEYWORD:
                config.update(value)
            else:
                config[name] = value
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "Module":
        """Build the module from `get_config()` output (override to translate other configs)."""
        return cls(**config)

    # ------------------------------------------------------------------ traversal
    def named_children(self) -> Iterator[tuple]:
        """(name, child) for each direct submodule; a child registered under two names is
        yielded once, under the first (as torch)."""
        seen: set = set()
        for name, m in self.__dict__["_modules"].items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple]:
        """(path, module) for this module and every submodule, depth first ("" is self); a
        module reachable by several paths comes once unless `remove_duplicate=False`. `memo`
        holds the ids of modules to skip (torch's argument order)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self.__dict__["_modules"].items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def get_submodule(self, path: str) -> "Module":
        """The submodule at dotted `path` ("" is self)."""
        m = self
        if not path:
            return m
        walked = []
        for part in path.split("."):
            child = m.__dict__["_modules"].get(part)
            if child is None:
                raise MissingMemberError(f"get_submodule: {type(m).__name__} at "
                                         f"{'.'.join(walked) or '<root>'!r} has no "
                                         f"submodule {part!r} (path {path!r})")
            walked.append(part)
            m = child
        return m

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool,
                       skip=None):
        seen: set = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for path, m in mods:
            for name, value in m.__dict__[registry].items():
                if value is None or id(value) in seen:
                    continue
                if skip is not None and name in skip(m):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple]:
        """(dotted name, Parameter) for every parameter (shared ones once, unless
        `remove_duplicate=False`)."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> "Module":
        """Call `fn(module)` on every submodule (children first) and on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ state
    def _state_modules(self, prefix: str = "") -> Iterator[tuple]:
        """(key prefix, module) for self and every submodule by every path (a shared module
        once per name, as torch's `state_dict`); the prefix is prepended as is."""
        yield prefix, self
        for name, child in self.__dict__["_modules"].items():
            if child is not None:
                yield from child._state_modules(f"{prefix}{name}.")

    def _state_slots(self, prefix: str = "") -> dict:
        """key -> (registry dict, attribute name, is_parameter) for every parameter and
        persistent buffer (the entries `state_dict` saves)."""
        slots: dict = {}
        for path, m in self._state_modules(prefix):
            d = m.__dict__
            for name, p in d["_parameters"].items():
                if p is not None:
                    slots[path + name] = (d["_parameters"], name, True)
            for name, b in d["_buffers"].items():
                if b is not None and name not in d["_non_persistent"]:
                    slots[path + name] = (d["_buffers"], name, False)
        return slots

    def state_dict(self, *args, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name, as detached tensors (the
        Parameter objects themselves with `keep_vars=True`). `prefix` is prepended to every
        key as is (`prefix="enc."` gives `enc.weight`); with `destination` the entries are
        added to that dict, which is returned. Positional `(destination, prefix, keep_vars)`
        are accepted as torch still does."""
        if len(args) > 3:
            raise ModuleError(f"state_dict: takes at most 3 positional arguments "
                              f"(destination, prefix, keep_vars), got {len(args)}")
        if args:
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        out = {} if destination is None else destination
        for k, (reg, name, _) in self._state_slots(prefix).items():
            # an uninitialized parameter or buffer (a lazy module's) is given as itself, as torch
            out[k] = reg[name] if keep_vars or is_lazy(reg[name]) else reg[name].detach()
        return out

    def _upgrade_state(self, state: dict, prefix: str, version: int | None) -> None:
        """Fill in or rename entries of an older checkpoint's `state` (a copy) for this module
        at key `prefix`; `version` is the checkpoint's torch `_metadata` version, None when
        it has none. Nothing by default (`_BatchNorm` adds `num_batches_tracked`)."""

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> LoadResult:
        """Copy values (Tensors or numpy arrays) into the parameters and buffers, keeping the
        Parameter objects. Values take each parameter's dtype and device; with `assign=True`
        (torch's flag) they keep their own dtype and device.

        With `strict=True` any missing, unexpected or mis-shaped key raises `StateDictError`
        listing all of them, and nothing is changed. An uninitialized parameter or buffer (a
        lazy module's) takes the loaded value's shape, as torch's."""
        state_dict = self._upgraded(state_dict)
        slots = self._state_slots()
        missing = [k for k in slots if k not in state_dict]
        unexpected = [k for k in state_dict if k not in slots]
        mis_shaped = []
        for k, (reg, name, _) in slots.items():
            if k in state_dict:
                value = state_dict[k]
                if is_lazy(reg[name]):  # any shape fits an uninitialized one (a lazy module's)
                    continue
                if is_lazy(value):
                    mis_shaped.append((k, "uninitialized", reg[name].shape))
                    continue
                shape = value.shape if isinstance(value, Tensor) else tuple(np.shape(value))
                if shape != reg[name].shape:
                    mis_shaped.append((k, shape, reg[name].shape))
        if mis_shaped or (strict and (missing or unexpected)):
            lines = [f"load_state_dict: the state does not fit {type(self).__name__}:"]
            if missing:
                lines.append(f"  missing keys ({len(missing)}): " + ", ".join(missing))
            if unexpected:
                lines.append(f"  unexpected keys ({len(unexpected)}): " + ", ".join(unexpected))
            for k, got, want in mis_shaped:
                lines.append(f"  mis-shaped: {k}: checkpoint {got}, model {want}")
            raise StateDictError("\n".join(lines))
        for k, (reg, name, is_param) in slots.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            cur = reg[name]
            if is_lazy(value):  # uninitialized into uninitialized: nothing to load
                continue
            if not isinstance(value, Tensor):
                value = _tensor(np.asarray(value), device=cur.device)
            value = value.detach() if assign else \
                value.detach().to(cur.dtype, device=cur.device)
            if is_param:
                cur._rebind(value)  # an uninitialized one is materialized with value's shape
            else:
                reg[name] = value
        return LoadResult(missing, unexpected)

    def _upgraded(self, state_dict: Mapping[str, Any]) -> dict:
        """A copy of `state_dict` after every submodule's `_upgrade_state`."""
        state = dict(state_dict)
        metadata = getattr(state_dict, "_metadata", None) or {}
        for path, m in self._state_modules():
            if type(m)._upgrade_state is not Module._upgrade_state:
                m._upgrade_state(state, path, metadata.get(path[:-1], {}).get("version"))
        return state

    # ------------------------------------------------------------------ mode, device
    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout active) for this module and every submodule."""
        for m in self.modules():
            m.__dict__["training"] = bool(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def to(self, *args, device=None, dtype=None) -> "Module":
        """Move parameters and buffers to `device` and/or cast float ones to `dtype`, in place
        (the Parameter objects stay the same). `m.to("cpu")`, `m.to(lazyt.float16)`."""
        for a in args:
            if isinstance(a, (dt.DType, type, np.dtype)) or (isinstance(a, str)
                                                             and _is_dtype_name(a)):
                dtype = a
            else:
                device = a
        dev = None if device is None else _device(device)
        d = None if dtype is None else dt.as_dtype(dtype)
        if d is not None and not d.is_float:
            raise ModuleError(f"Module.to: only a float dtype can be given, got {d.name}")

        def move(t: Tensor) -> Tensor:
            if dev is not None:
                t = t.to(device=dev)
            if d is not None and t.dtype.is_float:
                t = t.to(d)
            return t

        for m in self.modules():
            md = m.__dict__
            for p in md["_parameters"].values():
                if p is not None and ((dev is not None and p.device is not dev) or (
                        d is not None and p.dtype.is_float and p.dtype is not d)):
                    p._rebind(move(p.detach()))
            for name, b in list(md["_buffers"].items()):
                if b is not None:
                    md["_buffers"][name] = move(b)
        return self

    def float(self) -> "Module":  # noqa: A003 - torch's name
        """Cast float parameters and buffers to float32 (in place)."""
        return self.to(dt.float32)

    def double(self) -> "Module":
        """Cast float parameters and buffers to float64 (in place)."""
        return self.to(dt.float64)

    def half(self) -> "Module":
        """Cast float parameters and buffers to float16 (in place)."""
        return self.to(dt.float16)

    def cpu(self) -> "Module":
        """Move parameters and buffers to the cpu device (in place)."""
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        """Move parameters and buffers to the cuda device (in place)."""
        return self.to("cuda" if device is None else f"cuda:{device}"
                       if isinstance(device, int) else device)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set `requires_grad` on every parameter (freeze a part of a model with False)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's `.grad` (None, or zeros with `set_to_none=False`), as the
        optimizer's `zero_grad` does."""
        from ..creation import zeros
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else zeros(p.shape, dtype=p.dtype,
                                                        device=p.device)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target` ("encoder.layer.0.weight")."""
        return self._member("_parameters", "parameter", target)

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target` ("bn.running_mean")."""
        return self._member("_buffers", "buffer", target)

    def _member(self, registry: str, what: str, target: str):
        mod, _, name = target.rpartition(".")
        owner = self.get_submodule(mod) if mod else self
        value = owner.__dict__[registry].get(name)
        if value is None:
            raise MissingMemberError(f"{type(owner).__name__} has no {what} {name!r} (path "
                                     f"{target!r})")
        return value

    def get_device(self) -> Device | None:
        """The device of the first parameter (or buffer); None for a module without state.
        (A method, so subclasses stay free to use a `device` attribute.)"""
        for p in self.parameters():
            return p.device
        for b in self.buffers():
            return b.device
        return None

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward method")

    def __call__(self, *args, **kwargs):
        hooks = self.__dict__.get("_hooks")
        if not hooks:
            return self.forward(*args, **kwargs)
        for hook, with_kwargs in list(hooks["pre"].values()):
            if with_kwargs:
                changed = hook(self, args, kwargs)
                if changed is not None:
                    args, kwargs = changed
                continue
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        out = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(hooks["post"].values()):
            changed = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if changed is not None:
                out = changed
        return out

    def _add_hook(self, kind: str, hook, prepend: bool, with_kwargs: bool,
                  always_call: bool = False) -> "RemovableHandle":
        if not callable(hook):
            raise ModuleError(f"{type(self).__name__}: a hook must be callable, got "
                              f"{type(hook).__name__}")
        if always_call:
            raise ModuleError(f"{type(self).__name__}: always_call=True is not supported")
        hooks = self.__dict__.setdefault("_hooks", {"pre": {}, "post": {}})
        handle = RemovableHandle(hooks[kind])
        registry = hooks[kind]  # changed in place: every handle keeps pointing at it
        entry = {handle.id: (hook, bool(with_kwargs))}
        ordered = {**entry, **registry} if prepend else {**registry, **entry}
        registry.clear()
        registry.update(ordered)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> "RemovableHandle":
        """`hook(module, args)` runs before `forward`; a non-None result replaces the
        positional arguments (a tuple, or one value). With `with_kwargs`, `hook(module, args,
        kwargs)` and a non-None result is the pair `(args, kwargs)`. `prepend` runs it before
        the hooks already there. Returns a handle: `handle.remove()`."""
        return self._add_hook("pre", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> "RemovableHandle":
        """`hook(module, args, output)` (with `with_kwargs`: `hook(module, args, kwargs,
        output)`) runs after `forward`; a non-None result replaces the output. `prepend` runs
        it before the hooks already there. Returns a handle: `handle.remove()`."""
        return self._add_hook("post", hook, prepend, with_kwargs, always_call)

    # ------------------------------------------------------------------ checkpoints
    def save_pretrained(self, directory) -> None:
        """Write `model.safetensors` and `config.json` (the constructor arguments) to
        `directory`, with the checkpoint's original key names even after kernels changed
        the layout."""
        save_pretrained(self, directory)

    @classmethod
    def from_pretrained(cls, directory, device=None, use_kernels: bool = False,
                        kernel_config=None, kernel_paths=None, dtype=None) -> "Module":
        """Build `cls.from_config(config.json)` and load `model.safetensors` (see
        `lazyt.nn.serialization.from_pretrained`)."""
        return from_pretrained(cls, directory, device=device, use_kernels=use_kernels,
                               kernel_config=kernel_config, kernel_paths=kernel_paths,
                               dtype=dtype)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self.named_children():
            child = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _is_dtype_name(name: str) -> bool:
    try:
        dt.as_dtype(name)
        return True
    except DTypeError:
        return False


@contextmanager
def _substituted(module: Module, state: Mapping[str, Tensor]):
    """Temporarily replace parameters/buffers of `module` by the tensors in `state`."""
    saved = []
    try:
        for key, value in state.items():
            path, _, name = key.rpartition(".")
            m = module.get_submodule(path)
            d = m.__dict__
            reg = d["_parameters"] if name in d["_parameters"] else d["_buffers"]
            if name not in reg:
                raise StateDictError(f"functional_call: {type(module).__name__} has no parameter "
                                     f"or buffer {key!r}")
            saved.append((reg, name, reg[name]))
            reg[name] = value
        yield module
    finally:
        for reg, name, old in reversed(saved):
            reg[name] = old


def functional_call(module: Module, state: Mapping[str, Tensor], *args, **kwargs):
    """Call `module(*args, **kwargs)` with some of its parameters/buffers replaced by the
    tensors in `state` (dotted names); gradients flow to those tensors. The module is
    unchanged afterwards."""
    with _substituted(module, state):
        return module(*args, **kwargs)
