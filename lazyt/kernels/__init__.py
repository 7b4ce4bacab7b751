"""`lazyt.kernels`: the kernel hub. Swap modules of a model for kernels from repos found
offline, with Layouts that hold the kernels' parameters, reversible checkpoint conversion
and module fusion (see `KernelConfig`, `kernelize`). Sits above `lazyt.nn`."""
from .config import KernelConfig, KernelEntry
from .conversion import (Chunk, Concatenate, ConversionOp, ConversionRule, MergeModulelist,
                         Transpose, WeightConverter, WeightRenaming, convert_state, revert_state)
from .errors import ConversionError, KernelFallbackWarning, KernelHubError
from .hub import ENV_VAR, kernel_roots, load_kernel, load_repo
from .kernelize import Mode, kernelize, supports_device
from .layout import KernelBinding, LayoutAdapter, binding_of

__all__ = [
    "KernelConfig", "KernelEntry", "Mode", "kernelize", "supports_device", "load_kernel",
    "load_repo", "kernel_roots", "ENV_VAR", "WeightRenaming", "WeightConverter", "Concatenate",
    "Chunk", "Transpose", "MergeModulelist", "ConversionOp", "ConversionRule", "convert_state",
    "revert_state", "KernelHubError", "ConversionError", "KernelFallbackWarning",
    "KernelBinding", "LayoutAdapter", "binding_of",
]
