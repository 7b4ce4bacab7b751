"""The wgpu backend: WGSL kernels on any wgpu adapter (Vulkan, Metal, D3D12; mesa's lavapipe
gives a software Vulkan device in CI). `lazyt.device("wgpu:N")` runs on adapter N of
`list_devices()`."""
from __future__ import annotations

import sys
import threading

from ..cube import replay
from .backend import WgpuBackend
from .client import WgpuClient
from .runtime import get_adapter, list_adapter_infos, request_device

# replay's former home: `lazyt.backends.wgpu.replay` is the Cube family's module itself
sys.modules[f"{__name__}.replay"] = replay

_LOCK = threading.Lock()
_BACKENDS: dict[int, WgpuBackend] = {}


def create_backend(index: int = 0) -> WgpuBackend:
    """The base backend on adapter `index` (one per adapter per process)."""
    with _LOCK:
        backend = _BACKENDS.get(index)
        if backend is None:
            adapter = get_adapter(index)
            info = list_adapter_infos()[index]
            client = WgpuClient(request_device(adapter), f"wgpu:{index}",
                                f"{info.name} ({info.backend}, {info.kind})")
            backend = _BACKENDS[index] = WgpuBackend(client, f"wgpu:{index}", info.kind)
        return backend


def list_devices() -> list[str]:
    """One line per adapter: "wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, CPU)"."""
    return [str(info) for info in list_adapter_infos()]


#: The wgpu implementation of the Cube family's `ComputeClient` (lazyt.backends.cube.client).
ComputeClient = WgpuClient

__all__ = ["ComputeClient", "WgpuBackend", "WgpuClient", "create_backend", "list_devices"]
