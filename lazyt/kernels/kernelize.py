"""`kernelize`: swap each Layout's forward for its kernel's, or fall back to the original
forward where the kernel cannot run (no implementation for the device, or no backward in
training mode)."""
from __future__ import annotations

import enum
import warnings
from types import MethodType

from ..device import Device, device as _device, get_default_device
from ..nn.module import Module
from .errors import KernelFallbackWarning, KernelHubError
from .layout import binding_of


class Mode(enum.Enum):
    """What the kernelized model is used for: TRAINING needs kernels with a backward."""

    INFERENCE = "inference"
    TRAINING = "training"


def supports_device(kernel: type, dev: Device) -> bool:
    """A kernel runs on `dev` when its `supports_device(dev)` classmethod says so, else when
    `dev.type` is in its `devices` attribute (absent or None: every device)."""
    hook = getattr(kernel, "supports_device", None)
    if callable(hook):
        return bool(hook(dev))
    devices = getattr(kernel, "devices", None)
    return devices is None or dev.type in devices


def _why_not(kernel: type, mode: Mode, dev: Device) -> str | None:
    if not supports_device(kernel, dev):
        return (f"has no implementation for device {dev} "
                f"(devices: {getattr(kernel, 'devices', None)})")
    if mode is Mode.TRAINING and not getattr(kernel, "has_backward", True):
        return "has no backward (has_backward = False), which Mode.TRAINING needs"
    return None


def kernelize(model: Module, mode: Mode = Mode.INFERENCE, device=None,
              use_fallback: bool = True) -> Module:
    """Give every Layout in `model` its kernel's forward for `mode` on `device` (default: the
    model's device). A kernel that cannot run there keeps the original forward with a
    `KernelFallbackWarning`, or raises `KernelHubError` when `use_fallback=False`.
    Can be called again (e.g. with another mode); returns `model`."""
    if not isinstance(mode, Mode):
        raise KernelHubError(f"kernelize: mode must be Mode.INFERENCE or Mode.TRAINING, got "
                             f"{mode!r}")
    dev = _device(device) if device is not None else (model.get_device() or get_default_device())
    fallbacks: dict = {}
    for path, layout in model.named_modules():
        binding = binding_of(layout)
        if binding is None:
            continue
        reason = _why_not(binding.kernel, mode, dev)
        if reason is None:
            layout.__dict__["forward"] = MethodType(binding.kernel.forward, layout)
            binding.active = True
            continue
        if not use_fallback:
            raise KernelHubError(f"kernelize: kernel {binding.kernel.__name__} at {path!r} "
                                 f"{reason}; use_fallback=False forbids the original forward")
        layout.__dict__["forward"] = binding.fallback_forward(layout)
        binding.active = False
        fallbacks.setdefault((binding.kernel.__name__, reason), []).append(path)
    for (name, reason), paths in fallbacks.items():
        warnings.warn(f"kernelize: kernel {name} {reason}; using the original forward at "
                      f"{', '.join(paths)}", KernelFallbackWarning, stacklevel=2)
    return model
