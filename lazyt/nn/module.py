"""`Module`: the base class of layers and models.

Assigning a `Parameter` or a `Module` to an attribute registers it, so a model's state is
found by walking its attributes (`named_parameters`, `state_dict`). A module remembers the
arguments it was built with (`init_arguments`, `get_config`), which is what `save_pretrained`
writes as `config.json` and what the kernel hub uses to build a Layout with the same arguments.
"""
from __future__ import annotations

import inspect
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, NamedTuple

import numpy as np

from .. import dtype as dt
from ..autodiff import is_grad_enabled
from ..creation import empty_like as _empty_like
from ..creation import tensor as _tensor
from ..device import Device, device as _device
from ..errors import DTypeError, InvalidArgumentError, LazytError, MissingImplError
from ..tensor import Tensor
from .backward_hook import BackwardHookCall
from .parameter import Parameter, is_lazy
from .serialization import from_pretrained, save_pretrained


#: The state-dict key suffix of a module's `get_extra_state()` (torch's name).
_EXTRA_STATE = "_extra_state"


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


#: Bumped whenever any module's hooks, submodules or training flag change: a compiled
#: module's recording key (`Module._compile_key`) is rebuilt only then, not on every call.
_TREE_EPOCH = [0]


class RemovableHandle:
    """What `register_forward_hook` returns: `remove()` takes the hook out (also as a context
    manager)."""

    _next = 0

    def __init__(self, registry: dict):
        RemovableHandle._next += 1
        self.id = RemovableHandle._next
        self._registry = registry
        _TREE_EPOCH[0] += 1

    def remove(self) -> None:
        self._registry.pop(self.id, None)
        _TREE_EPOCH[0] += 1

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
            _TREE_EPOCH[0] += 1
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
            _TREE_EPOCH[0] += 1
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise ModuleError(f"{type(self).__name__}.{name} is a buffer; assign a Tensor "
                                  f"(or None), not {type(value).__name__}")
            buffers[name] = value
        else:
            if name == "training":
                _TREE_EPOCH[0] += 1
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
        _TREE_EPOCH[0] += 1

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

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put `module` at dotted path `target`, replacing the submodule there or (unless
        `strict`) adding it to the existing parent, as torch's `set_submodule`."""
        if target == "":
            raise InvalidArgumentError("set_submodule: cannot set the submodule without a "
                                       "target name")
        if not isinstance(module, Module):
            raise InvalidArgumentError(f"set_submodule: `module` is not a Module, found "
                                       f"{type(module).__name__}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        exists = hasattr(parent, name)
        if strict and not exists:
            raise MissingMemberError(f"set_submodule: {type(parent).__name__} has no attribute "
                                     f"{name!r} (path {target!r}, strict=True)")
        if exists and not isinstance(getattr(parent, name), Module):
            raise MissingMemberError(f"set_submodule: {type(parent).__name__}.{name} is not a "
                                     f"Module (path {target!r})")
        setattr(parent, name, module)

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
    def _local_state(self) -> dict:
        """name -> (registry dict, is_parameter) for this module's own parameters and
        persistent buffers (the entries `state_dict` saves for it)."""
        d = self.__dict__
        local = {name: (d["_parameters"], True) for name, p in d["_parameters"].items()
                 if p is not None}
        for name, b in d["_buffers"].items():
            if b is not None and name not in d["_non_persistent"]:
                local[name] = (d["_buffers"], False)
        return local

    def state_dict(self, *args, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name, as detached tensors (the
        Parameter objects themselves with `keep_vars=True`), plus `<prefix>_extra_state` for
        a module that defines `get_extra_state`. `prefix` is prepended to every key as is
        (`prefix="enc."` gives `enc.weight`); with `destination` the entries are added to that
        dict, which is returned. Positional `(destination, prefix, keep_vars)` are accepted as
        torch still does. Each module's state-dict pre- and post-hooks run around its own and
        its submodules' entries, as torch's."""
        if len(args) > 3:
            raise ModuleError(f"state_dict: takes at most 3 positional arguments "
                              f"(destination, prefix, keep_vars), got {len(args)}")
        if args:
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        out = {} if destination is None else destination
        d = self.__dict__
        hooks = d.get("_state_hooks")
        if hooks:
            for hook in list(hooks["save_pre"].values()):
                hook(self, prefix, keep_vars)
        for name, (reg, _) in self._local_state().items():
            # an uninitialized parameter or buffer (a lazy module's) is given as itself, as torch
            out[prefix + name] = reg[name] if keep_vars or is_lazy(reg[name]) \
                else reg[name].detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            out[prefix + _EXTRA_STATE] = self.get_extra_state()
        for name, child in d["_modules"].items():
            if child is not None:
                child.state_dict(destination=out, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        if hooks:
            local_metadata = {"version": getattr(type(self), "_version", 1)}
            for hook in list(hooks["save_post"].values()):
                if hook(self, out, prefix, local_metadata) is not None:
                    raise ModuleError(f"state_dict: a post-hook of {type(self).__name__} "
                                      "returned a value; it must return None and change the "
                                      "state dict in place")
        return out

    def get_extra_state(self) -> Any:
        """Override (with `set_extra_state`) to save non-tensor state in `state_dict` under
        `<prefix>_extra_state`, as torch's; the base class is never called."""
        raise MissingImplError(f"{type(self).__name__}.get_extra_state: not defined; override "
                               "it together with set_extra_state")

    def set_extra_state(self, state: Any) -> None:
        """Override (with `get_extra_state`) to restore what `get_extra_state` saved; called by
        `load_state_dict` with the `<prefix>_extra_state` entry."""
        raise MissingImplError(f"{type(self).__name__}.set_extra_state: not defined; override "
                               "it together with get_extra_state")

    def _upgrade_state(self, state: dict, prefix: str, version: int | None) -> None:
        """Fill in or rename entries of an older checkpoint's `state` (a copy) for this module
        at key `prefix`; `version` is the checkpoint's torch `_metadata` version, None when
        it has none. Nothing by default (`_BatchNorm` adds `num_batches_tracked`)."""

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> LoadResult:
        """Copy values (Tensors or numpy arrays) into the parameters and buffers, keeping the
        Parameter objects, and hand `<prefix>_extra_state` entries to `set_extra_state`.
        Values take each parameter's dtype and device; with `assign=True` (torch's flag) they
        keep their own dtype and device.

        Each module's load pre-hooks run first (module before its submodules, on the module's
        part of a copy of the state, which they may change); load post-hooks run after the
        values are in, submodules first, with the `LoadResult` whose key lists they may change.
        Any mis-shaped key, an error message a pre-hook added, or with `strict=True` any
        missing or unexpected key left after the post-hooks raises `StateDictError` listing
        all of them. Nothing is changed when it raises, unless post-hooks are registered (the
        values are then in before they run, as torch's). An uninitialized parameter or buffer
        (a lazy module's) takes the loaded value's shape, as torch's."""
        if not isinstance(state_dict, Mapping):
            raise ModuleError(f"load_state_dict: expected a dict-like state, got "
                              f"{type(state_dict).__name__}")
        metadata = getattr(state_dict, "_metadata", None) or {}
        missing: list = []
        unexpected: list = []
        errors: list = []
        loads: list = []
        visited: list = []
        self._plan_load(dict(state_dict), "", metadata, assign,
                        (missing, unexpected, errors, loads, visited))
        post = [(m, list(h["load_post"].values())) for m in visited
                for h in [m.__dict__.get("_state_hooks")] if h and h["load_post"]]
        if errors or (strict and (missing or unexpected) and not post):
            raise StateDictError(self._load_failure(missing, unexpected, errors))
        for entry in loads:
            _load_entry(*entry, assign)
        result = LoadResult(missing, unexpected)
        for m, hooks in post:
            for hook in hooks:
                if hook(m, result) is not None:
                    raise ModuleError(f"load_state_dict: a post-hook of {type(m).__name__} "
                                      "returned a value; it must return None and change the "
                                      "key lists in place")
        if strict and (missing or unexpected):
            raise StateDictError(self._load_failure(missing, unexpected, errors))
        return result

    def _plan_load(self, state: dict, prefix: str, metadata: Mapping, assign: bool,
                   found: tuple) -> None:
        """Run this module's checkpoint upgrade and load pre-hooks on its part of the state
        (keys under `prefix`), then note its missing, unexpected and mis-shaped keys and the
        values to load, then do the same for each submodule (torch's `_load_from_state_dict`
        order); `found` is (missing, unexpected, errors, loads, modules visited)."""
        missing, unexpected, errors, loads, visited = found
        d = self.__dict__
        local_metadata = dict(metadata.get(prefix[:-1], {}))
        if type(self)._upgrade_state is not Module._upgrade_state:
            self._upgrade_state(state, prefix, local_metadata.get("version"))
        if assign:
            local_metadata["assign_to_params_buffers"] = True
        hooks = d.get("_state_hooks")
        if hooks:
            for hook in list(hooks["load_pre"].values()):
                hook(self, state, prefix, local_metadata, True, missing, unexpected, errors)
        local = self._local_state()
        for name, (reg, is_param) in local.items():
            key = prefix + name
            if key not in state:
                missing.append(key)
                continue
            value, cur = state[key], reg[name]
            if not is_lazy(cur):   # any shape fits an uninitialized one (a lazy module's)
                shape = "uninitialized" if is_lazy(value) else value.shape \
                    if isinstance(value, Tensor) else tuple(np.shape(value))
                if shape != cur.shape:
                    errors.append(f"mis-shaped: {key}: checkpoint {shape}, model {cur.shape}")
                    continue
            loads.append((reg, name, is_param, value))
        extra = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state:
                loads.append((self, None, None, state[extra]))
            else:
                missing.append(extra)
        elif extra in state:
            unexpected.append(extra)
        children: dict = {}   # submodule name -> its part of the state
        for key, value in state.items():
            if not key.startswith(prefix) or key == extra:
                continue
            head, dot, _ = key[len(prefix):].partition(".")
            if dot:
                if head in d["_modules"]:   # (a None submodule's keys are dropped, as torch)
                    children.setdefault(head, {})[key] = value
                else:
                    unexpected.append(key)
            elif head not in local:
                unexpected.append(key)
        for name, child in d["_modules"].items():
            if child is not None:
                child._plan_load(children.get(name, {}), f"{prefix}{name}.", metadata, assign,
                                 found)
        visited.append(self)

    def _load_failure(self, missing: list, unexpected: list, errors: list) -> str:
        lines = [f"load_state_dict: the state does not fit {type(self).__name__}:"]
        if missing:
            lines.append(f"  missing keys ({len(missing)}): " + ", ".join(missing))
        if unexpected:
            lines.append(f"  unexpected keys ({len(unexpected)}): " + ", ".join(unexpected))
        lines.extend("  " + e for e in errors)
        return "\n".join(lines)

    def _state_hook(self, kind: str, hook) -> "RemovableHandle":
        if not callable(hook):
            raise ModuleError(f"{type(self).__name__}: a hook must be callable, got "
                              f"{type(hook).__name__}")
        hooks = self.__dict__.setdefault("_state_hooks", {k: {} for k in (
            "save_pre", "save_post", "load_pre", "load_post")})
        handle = RemovableHandle(hooks[kind])
        hooks[kind][handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook) -> "RemovableHandle":
        """`hook(module, prefix, keep_vars)` runs before `state_dict` saves this module's
        entries (it returns None). Returns a handle: `handle.remove()`."""
        return self._state_hook("save_pre", hook)

    def register_state_dict_post_hook(self, hook) -> "RemovableHandle":
        """`hook(module, state_dict, prefix, local_metadata)` runs after this module's and its
        submodules' entries are in `state_dict`; it may change the dict in place and returns
        None. Returns a handle: `handle.remove()`."""
        return self._state_hook("save_post", hook)

    def register_load_state_dict_pre_hook(self, hook) -> "RemovableHandle":
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` runs before `load_state_dict` reads this module's keys;
        it may change `state_dict` (a copy) and append to the lists (an error message makes the
        load raise). Returns a handle: `handle.remove()`."""
        return self._state_hook("load_pre", hook)

    def register_load_state_dict_post_hook(self, hook) -> "RemovableHandle":
        """`hook(module, incompatible_keys)` runs after `load_state_dict` loaded this module
        and its submodules; `incompatible_keys.missing_keys` / `.unexpected_keys` may be
        changed in place (with `strict=True` what is left raises). Returns a handle:
        `handle.remove()`."""
        return self._state_hook("load_post", hook)

    # ------------------------------------------------------------------ mode, device
    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout active) for this module and every submodule."""
        for m in self.modules():
            m.__dict__["training"] = bool(mode)
        _TREE_EPOCH[0] += 1
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

    def type(self, dst_type) -> "Module":  # noqa: A003 - torch's name
        """Cast every parameter and buffer (integer ones too) and every gradient to
        `dst_type` (a dtype or a name such as "torch.DoubleTensor"), in place, as torch's
        `Module.type`. A parameter that requires grad must stay float."""
        def cast(t: Tensor) -> Tensor:
            return t.type(dst_type)

        for name, p in self.named_parameters():
            if not is_lazy(p) and p.requires_grad:
                d = cast(p.detach()).dtype
                if not d.is_float:
                    raise DTypeError(f"Module.type: parameter {name!r} requires grad, so it "
                                     f"must stay float; {dst_type!r} would make it {d.name}")
        return self._replace_tensors(cast)

    def to_empty(self, *, device=None, recurse: bool = True) -> "Module":
        """Replace every parameter's data and every buffer with an uninitialized tensor of the
        same shape and dtype on `device` (default: where each is), as torch's `to_empty`
        (which moves a module built on the meta device to a real one); only this module's
        own tensors with `recurse=False`."""
        dev = None if device is None else _device(device)
        return self._replace_tensors(lambda t: _empty_like(t, device=dev), recurse)

    def share_memory(self) -> "Module":
        """torch's `share_memory`: every parameter and buffer's `share_memory_()`, which is a
        no-op for lazyt tensors (DataLoader workers and other processes get tensors pickled
        as host arrays). Returns self."""
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
        return self

    def _replace_tensors(self, fn, recurse: bool = True) -> "Module":
        """Give every parameter (the Parameter object stays; its gradient too) and buffer the
        value `fn(tensor)`, in this module and (with `recurse`) every submodule, as torch's
        `_apply`. Uninitialized ones (a lazy module's) are left as they are."""
        for m in (self.modules() if recurse else (self,)):
            md = m.__dict__
            for p in md["_parameters"].values():
                if p is not None and not is_lazy(p):
                    grad = p.grad
                    p._rebind(fn(p.detach()))
                    if grad is not None:
                        p.grad = fn(grad)
            for name, b in list(md["_buffers"].items()):
                if b is not None and not is_lazy(b):
                    md["_buffers"][name] = fn(b)
        return self

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
        d = self.__dict__
        hooks = d.get("_hooks")
        if not hooks and "_compiled_call" not in d:
            return self.forward(*args, **kwargs)
        compiled = d.get("_compiled_call")
        if compiled is None or (is_grad_enabled() and _tracks_grad(self, (args, kwargs))):
            # a compiled call's outputs are detached (lazyt.compile): a call autodiff must
            # see (and backward hooks with it) runs plainly, as torch's compiled module trains
            return self._call_impl(*args, **kwargs)
        return compiled(self._compile_key(), *args, **kwargs)

    def _compile_key(self) -> tuple:
        """What a compiled call's recording depends on besides its arguments: every module's
        training flag and hooks (a change records again, as torch.compile's guards). Rebuilt
        only after a hook, submodule or training flag anywhere changed (`_TREE_EPOCH`)."""
        d = self.__dict__
        cached = d.get("_compile_key_cache")
        if cached is not None and cached[0] == _TREE_EPOCH[0]:
            return cached[1]
        key = tuple((m.training, *(tuple(r) for r in m.__dict__.get("_hooks", {}).values()))
                    for m in self.modules())
        d["_compile_key_cache"] = (_TREE_EPOCH[0], key)
        return key

    def _call_impl(self, *args, **kwargs):
        """The call with this module's hooks (what `compile` compiles, as torch's)."""
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
        backward = None
        if (hooks["backward"] or hooks["backward_pre"]) and is_grad_enabled():
            backward = BackwardHookCall(self, [h for h, _ in hooks["backward"].values()],
                                        [h for h, _ in hooks["backward_pre"].values()])
            args = backward.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(hooks["post"].values()):
            changed = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if changed is not None:
                out = changed
        if backward is not None:
            out = backward.wrap_outputs(out)
        return out

    def compile(self, *args, **kwargs) -> None:  # noqa: A003 - torch's name
        """Make calls of this module (its hooks included) go through `lazyt.compile`, with
        these arguments (torch.compile's keywords), as torch's `Module.compile`; the module
        itself stays as it is (`state_dict`, `parameters`, attributes). A call autodiff tracks
        (grad enabled and a parameter or argument requiring grad) runs uncompiled, since a
        compiled call's outputs are detached; changing a module's hooks or training mode
        records again."""
        from ..capture import compile as _compile
        call_impl = self._call_impl

        def _call_impl(key, *args, **kwargs):   # `key`: `_compile_key()`, in the signature
            return call_impl(*args, **kwargs)
        self.__dict__["_compiled_call"] = _compile(_call_impl, *args, **kwargs)

    def __getstate__(self) -> dict:
        """The module's attributes less its compiled call, as torch's: a pickled or deep-copied
        module is not compiled (the recordings hold this module's tensors)."""
        state = self.__dict__.copy()
        state.pop("_compiled_call", None)
        state.pop("_compile_key_cache", None)
        return state

    def _add_hook(self, kind: str, hook, prepend: bool, with_kwargs: bool,
                  always_call: bool = False) -> "RemovableHandle":
        if not callable(hook):
            raise ModuleError(f"{type(self).__name__}: a hook must be callable, got "
                              f"{type(hook).__name__}")
        if always_call:
            raise ModuleError(f"{type(self).__name__}: always_call=True is not supported")
        hooks = self.__dict__.setdefault("_hooks", {k: {} for k in (
            "pre", "post", "backward", "backward_pre")})
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

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> "RemovableHandle":
        """`hook(module, grad_output)` runs in each backward pass through a call of this
        module once the gradients w.r.t. its outputs are known (`grad_output`: a tuple, one
        entry per output, None for a non-tensor or unused one); a non-None result (a tuple of
        the same length) replaces them. Returns a handle: `handle.remove()`."""
        return self._add_hook("backward_pre", hook, prepend, False)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> "RemovableHandle":
        """`hook(module, grad_input, grad_output)` runs in each backward pass through a call of
        this module once the gradients w.r.t. its positional tensor arguments (`grad_input`,
        None for a non-tensor) are known; a non-None result (a tuple of the same length)
        replaces them. When no argument requires grad it runs with the output gradients, all
        `grad_input` None. Returns a handle: `handle.remove()`."""
        self._backward_kind(True)
        return self._add_hook("backward", hook, prepend, False)

    def register_backward_hook(self, hook) -> "RemovableHandle":
        """torch's deprecated backward hook: lazyt runs it as `register_full_backward_hook`
        (gradients w.r.t. the module's inputs and outputs), with a FutureWarning."""
        self._backward_kind(False)
        warnings.warn("register_backward_hook is deprecated in favor of "
                      "register_full_backward_hook (as in torch); lazyt runs it as a full "
                      "backward hook (grad_input is the gradient w.r.t. the module's inputs)",
                      FutureWarning, stacklevel=2)
        return self._add_hook("backward", hook, False, False)

    def _backward_kind(self, full: bool) -> None:
        """torch's rule: one module takes full or deprecated backward hooks, not both."""
        d = self.__dict__
        if d.get("_full_backward_hooks", full) is not full:
            raise InvalidArgumentError("Cannot use both regular backward hooks and full "
                                       f"backward hooks on a single Module "
                                       f"({type(self).__name__}). Please use only one of them.")
        d["_full_backward_hooks"] = full

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


def _tracks_grad(module: Module, args) -> bool:
    """Whether autodiff tracks a call of `module` on `args` (nested in lists, tuples and
    dicts): a parameter or an argument requires grad."""
    if any(p.requires_grad for p in module.parameters()):
        return True
    todo = [args]
    while todo:
        a = todo.pop()
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            todo.extend(a)
        elif isinstance(a, dict):
            todo.extend(a.values())
    return False


def _load_entry(reg, name, is_param, value, assign: bool) -> None:
    """Load one planned value: into a parameter or buffer slot, or (`reg` a module, `name`
    None) through the module's `set_extra_state`."""
    if name is None:
        reg.set_extra_state(value)
        return
    cur = reg[name]
    if is_lazy(value):  # uninitialized into uninitialized: nothing to load
        return
    if not isinstance(value, Tensor):
        value = _tensor(np.asarray(value), device=cur.device)
    value = value.detach() if assign else value.detach().to(cur.dtype, device=cur.device)
    if is_param:
        cur._rebind(value)  # an uninitialized one is materialized with value's shape
    else:
        reg[name] = value


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
