"""The numpy backend: the embedded default. Primitives are plain `np.ndarray`s, so extension
authors write their numpy impls with ordinary numpy code.

`backend` holds `NumpyBackend` (the kernels), `ufuncs` the op tables, `fused` the compiler of
fused elementwise blocks, `pool` the thread pool they share."""
from .backend import NumpyBackend
from .ufuncs import _erf_series_cf, erf_f32_into, where_into  # noqa: F401

__all__ = ["NumpyBackend", "erf_f32_into", "where_into"]
