"""Shared fixtures: the `device` fixture runs the op suite on every backend stack present, and
`check` compares a lazyt tensor with a numpy reference on values, dtype and shape."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt


def _built(spec: str):
    """The device when it can be created and its backend stack built, else None.

    A DeviceError (package, backend module or adapter missing) means the device is absent here.
    Any other exception is a bug; test_device.py::test_gpu_devices_build_or_raise_device_error
    reports it, so leaving the device out of the op suite here hides nothing."""
    try:
        dev = lazyt.device(spec)
        dev.backend  # noqa: B018 - builds the stack
    except Exception:
        return None
    return dev


def _available_devices() -> list:
    """(id, Device) for every stack present here; the one place that lists them."""
    devices = [
        ("cpu", lazyt.device("cpu")),                        # Autodiff(Fusion(numpy)) by default
        ("cpu-nofusion", lazyt.device("cpu", fusion=False)),
    ]
    wgpu = _built("wgpu")
    if wgpu is not None:
        devices.append(("wgpu", wgpu))
    return devices


DEVICES = _available_devices()

# dtypes a device stack rejects with DTypeError (DESIGN.md, "Dtypes per backend"): on those
# devices a test parametrized with such a dtype is expected to fail with exactly DTypeError.
UNSUPPORTED_DTYPES = {"wgpu": {np.dtype(np.float64)}}


def _param_dtype(value):
    try:
        if isinstance(value, lazyt.DType):
            return value.np
        if isinstance(value, (np.dtype, type)):
            return np.dtype(value)
    except TypeError:
        pass
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is None or "device" not in spec.params:
            continue
        unsupported = UNSUPPORTED_DTYPES.get(spec.params["device"].base, set())
        used = {_param_dtype(v) for k, v in spec.params.items() if k != "device"}
        bad = used & unsupported
        if bad:
            item.add_marker(pytest.mark.xfail(
                raises=lazyt.DTypeError, strict=True,
                reason=f"{spec.params['device']} does not support {sorted(map(str, bad))}"))


@pytest.fixture(params=[d for _, d in DEVICES], ids=[name for name, _ in DEVICES])
def device(request):
    """Each device stack present; op tests create their tensors on it."""
    return request.param


# numpy dtype of a reference array -> the lazyt dtype the tensor must have
NP_TO_LAZYT = {
    np.dtype(np.float16): lazyt.float16,
    np.dtype(np.float32): lazyt.float32,
    np.dtype(np.float64): lazyt.float64,
    np.dtype(np.int32): lazyt.int32,
    np.dtype(np.int64): lazyt.int64,
    np.dtype(np.bool_): lazyt.bool_,
}
LAZYT_TO_NP = {v: k for k, v in NP_TO_LAZYT.items()}

_TOL = {
    np.dtype(np.float16): dict(rtol=2e-3, atol=2e-3),
    np.dtype(np.float32): dict(rtol=2e-5, atol=1e-6),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
}


def assert_tensor(t, expected, *, rtol=None, atol=None, device=None):
    """`t` is a lazyt.Tensor whose shape, dtype and values equal the numpy array `expected`
    (floats to a dtype-dependent tolerance, ints and bools exactly)."""
    assert isinstance(t, lazyt.Tensor), f"expected a lazyt.Tensor, got {type(t).__name__}"
    expected = np.asarray(expected)
    assert isinstance(t.shape, tuple), f"shape should be a tuple, got {type(t.shape).__name__}"
    assert t.shape == expected.shape, f"shape {t.shape} != expected {expected.shape}"
    assert t.dtype == NP_TO_LAZYT[expected.dtype], f"dtype {t.dtype} != expected {expected.dtype}"
    if device is not None:
        assert t.device == device, f"device {t.device!r} != expected {device!r}"
    got = t.numpy()
    assert isinstance(got, np.ndarray)
    assert got.dtype == expected.dtype, f"numpy() dtype {got.dtype} != {expected.dtype}"
    assert got.shape == expected.shape, f"numpy() shape {got.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        tol = dict(_TOL[expected.dtype])
        if rtol is not None:
            tol["rtol"] = rtol
        if atol is not None:
            tol["atol"] = atol
        np.testing.assert_allclose(got, expected, equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.fixture
def check():
    """`check(tensor, numpy_expected, rtol=, atol=, device=)`: see `assert_tensor`."""
    return assert_tensor


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
