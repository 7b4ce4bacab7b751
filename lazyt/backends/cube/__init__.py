"""The Cube family of kernel backends (wgpu, CUDA): what they share, independent of any GPU.

`ComputeClient` (client.py) is the runtime interface and `Renderer` (renderer.py) the
language-neutral generator of elementwise and fused kernels; a runtime adds a client and a
renderer subclass for its language. Kernel-source tools are in source.py.
"""
from .source import (
    DEFAULT_ENTRY,
    LANGS,
    MAX_CUBES_PER_DIM,
    CubeCount,
    CubeDim,
    FileKernelSource,
    KernelId,
    KernelSource,
    KernelSources,
    SourceKernel,
    SourceTemplate,
    TextKernelSource,
    build_info,
    elem_name,
    elem_storage,
    filled_kernel,
    kernel_source,
    with_elem_prelude,
)
from .tensor import CubeTensor, contiguous_strides
from .renderer import Binding, KernelType, Renderer
from .client import ComputeClient, CubeLimits
from .backend import CubeBackend, into_contiguous  # noqa: E402  (needs source and tensor)

__all__ = [
    "CubeBackend", "into_contiguous", "DEFAULT_ENTRY", "LANGS", "MAX_CUBES_PER_DIM", "CubeCount", "CubeDim", "CubeTensor",
    "FileKernelSource", "KernelId", "KernelSource", "KernelSources", "SourceKernel",
    "SourceTemplate", "TextKernelSource", "build_info", "contiguous_strides", "elem_name",
    "elem_storage", "filled_kernel", "kernel_source", "with_elem_prelude", "ComputeClient",
    "CubeLimits", "Renderer", "KernelType", "Binding",
]
