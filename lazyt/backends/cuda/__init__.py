"""The CUDA backend: CUDA C++ kernels compiled by NVRTC and run through pycuda, matmul through
cuBLAS/cuBLASLt. `lazyt.device("cuda:N")` runs on GPU N of `list_devices()`; it needs
`pip install -e ".[cuda]"` (pycuda, cuda-bindings, nvmath-python) and an NVIDIA driver."""
from __future__ import annotations

import threading

from .backend import CudaBackend
from .client import CudaClient
from .runtime import device_infos

_LOCK = threading.Lock()
_BACKENDS: dict[int, CudaBackend] = {}


def create_backend(index: int = 0) -> CudaBackend:
    """The base backend on GPU `index` (one per GPU per process)."""
    with _LOCK:
        backend = _BACKENDS.get(index)
        if backend is None:
            client = CudaClient(index)
            backend = _BACKENDS[index] = CudaBackend(client, f"cuda:{index}")
        return backend


def list_devices() -> list[str]:
    """One line per GPU: "cuda:0 NVIDIA H200 (sm_90, 139.8 GiB, driver CUDA 13.0), cuBLAS
    130100" (the backend of each GPU is created to open cuBLAS)."""
    lines = []
    for info in device_infos():
        line = str(info)
        backend = create_backend(info.index)
        if backend is not None:
            blas = backend.client.blas
            line += f", cuBLAS {blas.version}" if blas is not None else \
                f", no cuBLAS ({backend.client.blas_error})"
        lines.append(line)
    return lines


#: The CUDA implementation of the Cube family's `ComputeClient` (lazyt.backends.cube.client).
ComputeClient = CudaClient

__all__ = ["ComputeClient", "CudaBackend", "CudaClient", "create_backend", "list_devices"]
