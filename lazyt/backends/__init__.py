"""Kernel backends, plus the selectors an extension lists in `backend_extension(...)`.

`Numpy` is the numpy backend, `Cube` the family of kernel backends (wgpu, CUDA). `Autodiff` and
`Fusion` are the layers; they are re-exported here lazily so that
`from lazyt.backends import Autodiff, Cube, Fusion, Numpy` works, while the backend modules
themselves never import a layer above them.
"""
from .base import Backend
from .numpy import NumpyBackend

Numpy = NumpyBackend


def __getattr__(name: str):
    if name == "Autodiff":
        from ..autodiff import Autodiff
        return Autodiff
    if name == "Fusion":
        from ..fusion import Fusion
        return Fusion
    if name in ("Cube", "CubeBackend"):
        from .cube import CubeBackend
        return CubeBackend
    raise AttributeError(f"module 'lazyt.backends' has no attribute {name!r}")


__all__ = ["Backend", "NumpyBackend", "Numpy", "Autodiff", "Fusion", "Cube"]
