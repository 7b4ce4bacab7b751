"""Shared fixtures: the `device` fixture runs the op suite on every backend stack present, and
`check` compares a lazyt tensor with a numpy reference on values, dtype and shape."""
from __future__ import annotations

import os

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
    for name in ("wgpu", "cuda"):
        dev = _built(name)
        if dev is not None:
            devices.append((name, dev))
    wanted = os.environ.get("LAZYT_TEST_DEVICES", "").strip()
    if wanted:  # e.g. LAZYT_TEST_DEVICES=cuda: run the op suite on these stacks only
        names = {w.strip() for w in wanted.split(",") if w.strip()}
        devices = [(n, d) for n, d in devices if n in names or n.split("-")[0] in names]
        if not devices:
            raise pytest.UsageError(f"LAZYT_TEST_DEVICES={wanted!r}: none of these devices "
                                    "is present here")
    return devices


DEVICES = _available_devices()

# What a device documents it cannot hold (DESIGN.md, "Dtypes per backend"): there an op whose
# operands or result need such a dtype raises DTypeError (wgpu: no float64; int64 stored as
# 32-bit with a range check). A test that hits exactly that on such a device is reported as
# xfail with the message, not as a pass and not as a failure; any other error still fails.
DEVICE_LIMITS = {"wgpu": ("float64 is not supported", "does not fit")}


def _documented_limit(item, exc) -> str | None:
    spec = getattr(item, "callspec", None)
    dev = spec.params.get("device") if spec is not None else None
    if dev is None or not isinstance(exc, lazyt.DTypeError):
        return None
    msg = str(exc)
    if any(p in msg for p in DEVICE_LIMITS.get(dev.base, ())):
        return msg
    return None


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    __tracebackhide__ = True
    try:
        return (yield)
    except lazyt.DTypeError as e:
        msg = _documented_limit(pyfuncitem, e)
        if msg is None:
            raise
    # outside the except block: no chained traceback for pytest to render (that is slow)
    pytest.xfail(f"documented device limit: {msg}")


@pytest.fixture(params=[d for _, d in DEVICES], ids=[name for name, _ in DEVICES])
def device(request):
    """Each device stack present; op tests create their tensors on it."""
    return request.param


# numpy dtype of a reference array -> the lazyt dtype the tensor must have
NP_TO_LAZYT = {
    np.dtype(np.float16): lazyt.float16,
    np.dtype(np.float32): lazyt.float32,
    np.dtype(np.float64): lazyt.float64,
    np.dtype(np.uint8): lazyt.uint8,
    np.dtype(np.int8): lazyt.int8,
    np.dtype(np.int16): lazyt.int16,
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
