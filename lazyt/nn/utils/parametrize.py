"""torch's `nn.utils.parametrize`: a tensor of a module computed from stored originals.

`register_parametrization(m, "weight", P)` moves `m.weight` to
`m.parametrizations.weight.original` and gives `m` a class of its own (`ParametrizedLinear`,
a subclass of its class) with a property `weight` that returns `P(original)` on every access,
so gradients reach the original through ordinary autodiff. Assigning `m.weight = X` stores
`P.right_inverse(X)` instead. State-dict keys are torch's (`parametrizations.weight.original`,
`parametrizations.weight.0.<buffer of P>`)."""
from __future__ import annotations

import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Callable, Iterator

from ... import capture_state as _capture
from ...autodiff import no_grad
from ...errors import DTypeError, InvalidArgumentError, MissingImplError, ShapeError
from ...tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..module import Module, ModuleError
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block each parametrized tensor is computed once, at its first access, and
    reused (a weight used at every step of an RNN loop); the values are dropped on leaving."""
    global _cache, _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(dest: Tensor, src: Tensor) -> None:
    """torch's `dest.set_(src)`: the same tensor object holds `src`'s value from now on (any
    shape), so optimizers holding `dest` keep working."""
    src = src.detach()
    if isinstance(dest, Parameter):
        dest._rebind(src)
        return
    if src.shape == dest.shape and src.dtype is dest.dtype:
        with no_grad():
            dest.copy_(src)
        return
    tracked = dest.requires_grad
    _capture.saw(dest)
    dest.primitive, dest.device = src.primitive, src.device
    if tracked:
        dest.require_grad(True)


def _is_tensor_list(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


class ParametrizationList(ModuleList):
    """`module.parametrizations[name]`: the parametrizations of one tensor, applied in order,
    and the tensor(s) they start from: `original`, or `original0`, `original1`, ... when the
    first one's `right_inverse` returns several. Made by `register_parametrization`."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise InvalidArgumentError("ParametrizationList: needs one or more parametrization "
                                       "modules, got none")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not _is_tensor_list(new):
            raise InvalidArgumentError(f"register_parametrization: right_inverse must return a "
                                       f"Tensor or a sequence of tensors, got "
                                       f"{type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype is not original.dtype:
                raise DTypeError(f"register_parametrization: when right_inverse returns one "
                                 f"tensor it may not change the dtype: original "
                                 f"{original.dtype.name}, right_inverse(original) "
                                 f"{new.dtype.name}")
            if new.device != original.device:
                raise InvalidArgumentError(f"register_parametrization: when right_inverse "
                                           f"returns one tensor it may not change the device: "
                                           f"original on {original.device}, "
                                           f"right_inverse(original) on {new.device}")
            _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise InvalidArgumentError(f"register_parametrization: right_inverse must "
                                               f"return a sequence of tensors, got element {i} "
                                               f"of type {type(value).__name__}")
                if isinstance(original, Parameter):
                    value = Parameter(value, original.trainable)
                else:
                    value = value.detach().require_grad(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", value)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise InvalidArgumentError(f"register_parametrization: a parametrization must "
                                           f"return a tensor, got {type(z).__name__}")
            if z.dtype is not original_dtype:
                raise DTypeError(f"register_parametrization: a parametrization may not change "
                                 f"the dtype unless unsafe=True: unparametrized "
                                 f"{original_dtype.name}, parametrized {z.dtype.name}")
            if z.shape != original_shape:
                raise ShapeError(f"register_parametrization: a parametrization may not change "
                                 f"the shape unless unsafe=True: unparametrized "
                                 f"{original_shape}, parametrized {z.shape}")

    def __getitem__(self, i):
        if isinstance(i, slice):  # a ParametrizationList needs its originals: a plain list
            return ModuleList(list(self)[i])
        return super().__getitem__(i)

    def right_inverse(self, value: Tensor) -> None:
        """Store `value` in the originals: through each parametrization's `right_inverse`,
        last registered first (what assigning `module.weight = value` does)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise MissingImplError(f"right_inverse: parametrization "
                                           f"{type(module).__name__} does not implement "
                                           "right_inverse, so the tensor cannot be assigned")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise InvalidArgumentError(f"right_inverse: should return a tensor, got "
                                               f"{type(value).__name__}")
                if value.dtype is not self.original.dtype:
                    raise DTypeError(f"right_inverse: returned a tensor of dtype "
                                     f"{value.dtype.name} while original has dtype "
                                     f"{self.original.dtype.name}")
                _set(self.original, value)
                return
            if not _is_tensor_list(value):
                raise InvalidArgumentError(f"right_inverse: must return a sequence of tensors, "
                                           f"got {type(value).__name__}")
            if len(value) != self.ntensors:
                raise InvalidArgumentError(f"right_inverse: must return a sequence of "
                                           f"{self.ntensors} tensors, got {len(value)}")
            for i, t in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(t, Tensor):
                    raise InvalidArgumentError(f"right_inverse: element {i} is a "
                                               f"{type(t).__name__}, expected a tensor")
                if t.dtype is not original_i.dtype:
                    raise DTypeError(f"right_inverse: tensor {i} has dtype {t.dtype.name} "
                                     f"while original{i} has dtype {original_i.dtype.name}")
                _set(original_i, t)

    def forward(self) -> Tensor:
        first, *rest = list(self)
        if self.is_tensor:
            x = first(self.original)
        else:
            x = first(*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in rest:
            x = module(x)
        return x


# ---------------------------------------------------------------------- the injected class
def _default_deepcopy(self, memo):
    """torch's deepcopy of a parametrized module (its `__getstate__` refuses pickling)."""
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    object.__setattr__(replica, "__dict__", deepcopy(self.__dict__, memo))
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self):
    raise ModuleError(f"{type(self).__name__}: a parametrized module is saved only through "
                      "state_dict() (as in torch); pickle its state_dict instead")


def _setattr(self, name: str, value) -> None:
    """`module.weight = X` on a parametrized `weight` goes through `right_inverse`."""
    if name in self.__dict__["_modules"].get("parametrizations", {}) and \
            isinstance(getattr(type(self), name, None), property):
        if isinstance(value, (Parameter, Module)) or not isinstance(value, Tensor):
            raise ModuleError(f"{type(self).__name__}.{name} is parametrized: assign a plain "
                              f"tensor (stored through right_inverse), not "
                              f"{type(value).__name__}, or call remove_parametrizations first")
        self.parametrizations[name].right_inverse(value)
        return
    type(self).__mro__[1].__setattr__(self, name, value)


def _upgrade_state(self, state: dict, prefix: str, version) -> None:
    """The base class's checkpoint upgrade, then the renames the parametrizations asked for
    (weight_norm reads old `weight_g`/`weight_v` keys)."""
    type(self).__mro__[1]._upgrade_state(self, state, prefix, version)
    for upgrade in self.__dict__.get("_state_upgrades", ()):
        upgrade(state, prefix)


def _inject_new_class(module: Module) -> None:
    """Give `module` a class of its own, `Parametrized<Class>`, to hold the properties."""
    cls = module.__class__
    members = {"__getstate__": _getstate, "__setattr__": _setattr,
               "_upgrade_state": _upgrade_state, "__module__": cls.__module__}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise ModuleError(f"register_parametrization: {type(module).__name__} still has an "
                          f"attribute {tensor_name!r}")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), tensor_name)
        value = _cache.get(key)
        if value is None:
            value = _cache[key] = parametrization()
        return value

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _add_state_upgrade(module: Module, upgrade: Callable[[dict, str], None]) -> None:
    """Run `upgrade(state, prefix)` on checkpoints loaded into the parametrized `module`
    (torch's load_state_dict pre-hook)."""
    module.__dict__.setdefault("_state_upgrades", []).append(upgrade)


# ---------------------------------------------------------------------- public functions
def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` the output of `parametrization` applied to a stored original
    (the parameter or buffer it was; registering again on the same name chains another
    parametrization after the first). A `right_inverse(X)` method on `parametrization` gives
    the original from a value (identity without it; returning several tensors stores
    `original0`, `original1`, ... passed to forward in that order). `unsafe=True` skips the
    checks that the dtype and shape are kept. Returns the module."""
    if not isinstance(module, Module):
        raise ModuleError(f"register_parametrization: expected a Module, got "
                          f"{type(module).__name__}")
    if not isinstance(parametrization, Module):
        raise ModuleError(f"register_parametrization: the parametrization must be a Module, "
                          f"got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_chained(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise InvalidArgumentError(f"register_parametrization: {type(module).__name__}."
                                       f"{tensor_name} is None; there is nothing to "
                                       "parametrize")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise InvalidArgumentError(f"register_parametrization: {type(module).__name__} has no "
                                   f"parameter, buffer or parametrized tensor named "
                                   f"{tensor_name!r}")
    return module


def _check_chained(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A parametrization chained after others keeps the dtype and shape, in both directions."""
    y = getattr(module, tensor_name)
    x = parametrization(y)
    if not isinstance(x, Tensor):
        raise InvalidArgumentError(f"register_parametrization: a parametrization must return "
                                   f"a tensor, got {type(x).__name__}")
    if x.dtype is not y.dtype:
        raise DTypeError(f"register_parametrization: a parametrization may not change the "
                         f"dtype unless unsafe=True: module.{tensor_name} is {y.dtype.name}, "
                         f"parametrization(module.{tensor_name}) is {x.dtype.name}")
    if x.shape != y.shape:
        raise ShapeError(f"register_parametrization: a parametrization may not change the "
                         f"shape unless unsafe=True: module.{tensor_name} is {y.shape}, "
                         f"parametrization(module.{tensor_name}) is {x.shape}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise InvalidArgumentError(f"register_parametrization: parametrization.right_inverse "
                                   f"must return a tensor, got {type(z).__name__}")
    if z.dtype is not y.dtype:
        raise DTypeError(f"register_parametrization: parametrization.right_inverse must keep "
                         f"the dtype of module.{tensor_name} ({y.dtype.name}) unless "
                         f"unsafe=True, got {z.dtype.name}")
    if z.shape != y.shape:
        raise ShapeError(f"register_parametrization: parametrization.right_inverse must keep "
                         f"the shape of module.{tensor_name} {y.shape} unless unsafe=True, "
                         f"got {z.shape}")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization on `tensor_name` (on any tensor for None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Take the parametrizations off `module.<tensor_name>`: it is a parameter (or buffer)
    again, holding the current parametrized value (`leave_parametrized=True`) or the
    original. The original's tensor object is kept, so an optimizer holding it still updates
    the module. Returns the module."""
    if not is_parametrized(module, tensor_name):
        raise InvalidArgumentError(f"remove_parametrizations: {type(module).__name__} has no "
                                   f"parametrization on {tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set(original, value)
    else:
        if not leave_parametrized:
            raise InvalidArgumentError(f"remove_parametrizations: {tensor_name!r} is "
                                       f"parametrized by {plist.ntensors} tensors, so it cannot "
                                       "be left unparametrized; pass leave_parametrized=True")
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__dict__.pop("_state_upgrades", None)
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization (`Linear` for `ParametrizedLinear`)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register `from_module`'s parametrizations (of `tensor_name`, or all) on `to_module`,
    sharing the parametrization modules and the original tensors; a tensor `to_module`
    lacks is created first. Returns `to_module`."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not is_parametrized(from_module, name):
            raise InvalidArgumentError(f"transfer_parametrizations_and_params: "
                                       f"{type(from_module).__name__} has no parametrization "
                                       f"on {name!r}")
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if source.is_tensor:
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
