"""Fixtures of the wgpu backend tests: the base backend on adapter 0 (numpy in, numpy out).

The whole directory is skipped, with the reason, only when no wgpu adapter can be created; in
CI mesa's software Vulkan device (lavapipe) exists, so these tests run there.
"""
from __future__ import annotations

import numpy as np
import pytest

import lazyt

_SKIP = None
try:
    import wgpu  # noqa: F401
except ImportError as e:
    _SKIP = f"the wgpu package is not installed ({e})"
else:
    try:
        from lazyt.backends.wgpu import create_backend
        _BACKEND = create_backend(0)
    except lazyt.DeviceError as e:
        _SKIP = f"no wgpu adapter can be created here: {e}"


def pytest_collection_modifyitems(config, items):
    if _SKIP is None:
        return
    for item in items:
        if "backends/wgpu" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.skip(reason=_SKIP))


@pytest.fixture(scope="session")
def backend():
    """The WgpuBackend of adapter 0 (primitives are CubeTensors)."""
    return _BACKEND


@pytest.fixture
def up(backend):
    """`up(array)`: upload a numpy array to the backend."""
    return backend.from_numpy


@pytest.fixture
def down(backend):
    """`down(tensor)`: read a CubeTensor back as numpy."""
    return backend.to_numpy


TOL = {np.dtype(np.float16): dict(rtol=2e-3, atol=2e-3),
       np.dtype(np.float32): dict(rtol=2e-5, atol=1e-6)}


def _close(got: np.ndarray, expected: np.ndarray, **tol) -> None:
    """Same shape and dtype; floats to the dtype's tolerance (NaN equal to NaN), else exact."""
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, equal_nan=True, **{**TOL[expected.dtype], **tol})
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.fixture
def close():
    """`close(got, expected, **tol)`: shape, dtype and values (see `_close`)."""
    return _close


@pytest.fixture
def rng():
    return np.random.default_rng(7)
