"""The numpy backend's fused-block compiler and thread pool under their former import path
(the backend is now the package `lazyt.backends.numpy`: `fused` and `pool`)."""
from .numpy.fused import compile_block, program_for, run_block  # noqa: F401
from .numpy.pool import (PARALLEL_MIN, TILE_BYTES, _get_pool, _nd_tiles, _threads,  # noqa: F401
                         parallel_for)
