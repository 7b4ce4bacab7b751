"""Kernel backends, plus the selectors an extension lists in `backend_extension(...)`.

`Numpy` is the numpy backend, `Cube` the family of kernel backends (wgpu, CUDA); `Autodiff` and
`Fusion` select the layers (which register themselves; this package imports no layer), so
`from lazyt.backends import Autodiff, Cube, Fusion, Numpy` works.
"""
from .base import Backend
from .cube import CubeBackend
from .numpy import NumpyBackend
from .selectors import Autodiff, Fusion

Numpy = NumpyBackend
Cube = CubeBackend

__all__ = ["Backend", "NumpyBackend", "CubeBackend", "Numpy", "Cube", "Autodiff", "Fusion"]
