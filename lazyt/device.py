"""Devices: which base backend runs the ops, and which layers (Autodiff, Fusion) sit above it.

A `Device` only names its stack; `lazyt.stack` builds it (on first use), so this module imports
no backend and no layer."""
from __future__ import annotations

import contextvars
import importlib.util
import threading

from . import config
from .errors import DeviceError

BASES = ("cpu", "wgpu", "cuda")
CHECKPOINTING = ("balanced", "none")
# The pip extra that brings each GPU base backend's package.
_EXTRAS = {"wgpu": ("wgpu", "wgpu"), "cuda": ("pycuda", "cuda")}


def install_hint(extra: str) -> str:
    """The command that adds an optional part of lazyt. It installs this project from its
    checkout: `lazyt` on the public package index is an unrelated project."""
    return f'pip install -e ".[{extra}]" in the lazyt checkout'


class Device:
    """A base backend (`cpu` = numpy, `wgpu`, `cuda`) with an index and the layer switches.

    Equal when base, index and switches are equal; equal devices are the same object.
    """

    __slots__ = ("base", "index", "autodiff", "fusion", "checkpointing", "_key", "_stack")

    def __init__(self, base, index, autodiff, fusion, checkpointing):
        self.base = base
        self.index = index
        self.autodiff = autodiff
        self.fusion = fusion
        self.checkpointing = checkpointing
        self._key = (base, index, autodiff, fusion, checkpointing)
        self._stack = None

    def __eq__(self, other):
        return self is other or (isinstance(other, Device) and self._key == other._key)

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        name = self.base if self.index == 0 and self.base == "cpu" else f"{self.base}:{self.index}"
        opts = []
        if not self.autodiff:
            opts.append("autodiff=False")
        if not self.fusion:
            opts.append("fusion=False")
        if self.checkpointing != "balanced":
            opts.append(f"checkpointing={self.checkpointing!r}")
        return f"device({name!r}{''.join(', ' + o for o in opts)})"

    def __str__(self):
        if self.autodiff and self.fusion and self.checkpointing == "balanced":
            return self.base if self.base == "cpu" else f"{self.base}:{self.index}"
        return repr(self)

    @property
    def type(self) -> str:
        return self.base

    @property
    def backend(self):
        """The backend stack: Autodiff(Fusion(base)) by default, built on first use."""
        stack = self._stack
        if stack is None:
            with _LOCK:
                if self._stack is None:
                    self._stack = _BUILDER["build"](self)
            stack = self._stack
        return stack

    @property
    def base_backend(self):
        return _BUILDER["base_backend"](self.base, self.index)


_INTERNED: dict = {}
_LOCK = threading.RLock()


def device(spec="cpu", *, autodiff: bool = True, fusion: bool = True,
           checkpointing: str = "balanced") -> Device:
    """`lazyt.device("cpu")`, `"wgpu"`, `"wgpu:1"`, `"cuda:0"`, with layer switches.

    Passing a Device returns it unchanged (unless switches are given explicitly, which
    then apply on top of it)."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"device: expected a string such as 'cpu' or 'wgpu:0', got {spec!r}")
    name, _, idx = spec.strip().lower().partition(":")
    if name not in BASES:
        raise DeviceError(f"device: unknown device {spec!r}; expected one of {', '.join(BASES)} "
                          "(optionally with ':index')")
    try:
        index = int(idx) if idx else 0
    except ValueError:
        raise DeviceError(f"device: bad index in {spec!r}") from None
    if index < 0:
        raise DeviceError(f"device: negative index in {spec!r}")
    if checkpointing not in CHECKPOINTING:
        raise DeviceError(f"device: checkpointing must be one of {CHECKPOINTING}, "
                          f"got {checkpointing!r}")
    key = (name, index, bool(autodiff), bool(fusion), checkpointing)
    dev = _INTERNED.get(key)
    if dev is None:
        _check_available(name, index)
        with _LOCK:
            dev = _INTERNED.setdefault(key, Device(*key))
    return dev


def devices() -> list:
    """Every device made so far (`lazyt.sync()` drains their stacks)."""
    return list(_INTERNED.values())


def _check_available(base: str, index: int) -> None:
    if base == "cpu":
        if index != 0:
            raise DeviceError(f"device: there is one cpu device, got cpu:{index}")
        return
    module, extra = _EXTRAS[base]
    if importlib.util.find_spec(module) is None:
        raise DeviceError(f"device: the {base} backend needs the '{module}' package; "
                          f"install it with: {install_hint(extra)}")
    if importlib.util.find_spec(f"lazyt.backends.{base}") is None:  # pragma: no cover
        raise DeviceError(f"device: the {base} backend is not part of this lazyt build yet")


#: How stacks are made: `lazyt.stack` registers its functions here when imported.
_BUILDER: dict = {}


def set_stack_builder(build, base_backend) -> None:
    """Register `build(device) -> stack` and `base_backend(base, index) -> backend`."""
    _BUILDER["build"] = build
    _BUILDER["base_backend"] = base_backend


# ------------------------------------------------------------------ the default device
_default: contextvars.ContextVar = contextvars.ContextVar("lazyt_default_device", default=None)


def get_default_device() -> Device:
    """The device new tensors go to: `set_default_device`, else `LAZYT_DEVICE` (read now),
    else cpu."""
    dev = _default.get()
    if dev is not None:
        return dev
    return device(config.device())


def set_default_device(dev) -> None:
    """Set the default device for the current thread/context (None resets it)."""
    _default.set(None if dev is None else device(dev))


def resolve(dev) -> Device:
    return get_default_device() if dev is None else device(dev)
