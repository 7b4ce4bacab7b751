"""Adapters and devices: which wgpu adapters exist here, in what order `wgpu:N` numbers them, and
the device requested on one with the adapter's own limits (not WebGPU's small defaults)."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass

from ...errors import DeviceError

# Backends whose compute path is complete come first; OpenGL (GLES compute) last.
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 1, "OpenGL": 3}
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}

# The limits a compute backend needs raised to what the adapter offers.
_LIMITS = (
    "max-buffer-size", "max-storage-buffer-binding-size", "max-storage-buffers-per-shader-stage",
    "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z", "max-compute-workgroups-per-dimension",
    "max-uniform-buffer-binding-size", "max-bind-groups",
    "max-dynamic-storage-buffers-per-pipeline-layout",
    "max-dynamic-uniform-buffers-per-pipeline-layout",
)


@dataclass(frozen=True)
class AdapterInfo:
    """What `list_devices` shows of one adapter."""

    index: int
    name: str
    backend: str
    kind: str

    def __str__(self) -> str:
        kind = {"DiscreteGPU": "GPU", "IntegratedGPU": "integrated GPU",
                "VirtualGPU": "virtual GPU"}.get(self.kind, self.kind)
        return f"wgpu:{self.index} {self.name} ({self.backend}, {kind})"


_LOCK = threading.Lock()
_ADAPTERS: list | None = None


def _remove_if_ours(path: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits the handler, not the directory
        shutil.rmtree(path, ignore_errors=True)


def _quiet_runtime_dir() -> None:
    # wgpu's Vulkan loader warns on every start when XDG_RUNTIME_DIR is unset; give it a private
    # directory (the variable is only read); it is removed when the process exits.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = tempfile.mkdtemp(prefix="lazyt-xdg-")
        os.environ["XDG_RUNTIME_DIR"] = path
        atexit.register(_remove_if_ours, path, os.getpid())


def adapters() -> list:
    """The wgpu adapters of this machine, best first (native backends before OpenGL, GPUs
    before CPU); index N of this list is `wgpu:N`. Enumerated once per process."""
    global _ADAPTERS
    with _LOCK:
        if _ADAPTERS is None:
            _quiet_runtime_dir()
            try:
                import wgpu
            except ImportError as e:  # pragma: no cover - checked by lazyt.device first
                raise DeviceError(f"wgpu: the 'wgpu' package is not importable ({e}); install it "
                                  'with: pip install -e ".[wgpu]" in the lazyt checkout') from None
            try:
                found = list(wgpu.gpu.enumerate_adapters_sync())
            except Exception as e:  # a broken driver install: report it, do not crash
                raise DeviceError(f"wgpu: listing the adapters failed: {e}") from None
            order = sorted(range(len(found)), key=lambda i: (
                _BACKEND_RANK.get(found[i].info.get("backend_type", ""), 2),
                _TYPE_RANK.get(found[i].info.get("adapter_type", ""), 4), i))
            _ADAPTERS = [found[i] for i in order]
        return _ADAPTERS


def adapter_info(index: int, adapter) -> AdapterInfo:
    info = adapter.info
    name = info.get("device") or info.get("description") or info.get("vendor") or "unknown"
    return AdapterInfo(index, name, info.get("backend_type", "?"), info.get("adapter_type", "?"))


def list_adapter_infos() -> list:
    return [adapter_info(i, a) for i, a in enumerate(adapters())]


def get_adapter(index: int):
    found = adapters()
    if not found:
        raise DeviceError("wgpu: no wgpu adapter found on this machine (install a GPU driver, or "
                          "mesa-vulkan-drivers for the software Vulkan device)")
    if not 0 <= index < len(found):
        listing = "; ".join(str(a) for a in list_adapter_infos())
        raise DeviceError(f"wgpu: there is no adapter wgpu:{index}; this machine has "
                          f"{len(found)}: {listing}")
    return found[index]


def request_device(adapter):
    """A device on `adapter` with its own limits, and `shader-f16` and `timestamp-query` when
    it has them."""
    features = [f for f in ("shader-f16", "timestamp-query") if f in adapter.features]
    have = adapter.limits
    limits = {k: have[k] for k in _LIMITS if k in have}
    try:
        return adapter.request_device_sync(required_features=features, required_limits=limits)
    except Exception as e:
        raise DeviceError(f"wgpu: could not create a device on {adapter_info(0, adapter).name}: "
                          f"{e}") from None
