"""Building a device's backend stack: the base backend with the layers its switches ask for,
`Autodiff(Fusion(base), checkpointing)` by default. The one module that knows every layer;
`lazyt.device` names stacks and asks this module for them."""
from __future__ import annotations

import importlib
import threading

from .device import Device, set_stack_builder
from .autodiff import Autodiff
from .backends.base import Backend
from .backends.numpy import NumpyBackend
from .fusion import Fusion

_BASES: dict = {}
_LOCK = threading.Lock()


def base_backend(base: str, index: int) -> Backend:
    """The base backend of `base:index`, one per process (GPU modules imported on first use)."""
    key = (base, index)
    b = _BASES.get(key)
    if b is None:
        with _LOCK:
            b = _BASES.get(key)
            if b is None:
                if base == "cpu":
                    b = NumpyBackend()
                else:  # wgpu, cuda: optional dependencies, imported when asked for
                    b = importlib.import_module(f"lazyt.backends.{base}").create_backend(index)
                _BASES[key] = b
    return b


def build(dev: Device) -> Backend:
    """The stack of `dev`: its base backend, then Fusion and Autodiff where switched on."""
    backend = base_backend(dev.base, dev.index)
    if dev.fusion:
        backend = Fusion(backend)
    if dev.autodiff:
        backend = Autodiff(backend, checkpointing=dev.checkpointing)
    return backend


set_stack_builder(build, base_backend)
