"""The CUDA driver through pycuda: initialization, the devices of this machine and their primary
contexts (the context torch and CuPy use too, so one process can share a GPU between them)."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ...errors import DeviceError

#: The oldest pycuda release that builds against and runs on CUDA 13.
MIN_PYCUDA = (2026, 1)

_LOCK = threading.Lock()
_DRIVER: dict = {}
_TLS = threading.local()


def driver():
    """`pycuda.driver`, imported and initialized once (`DeviceError` saying what to install
    when pycuda is missing, too old, or no CUDA driver is present)."""
    drv = _DRIVER.get("drv")
    if drv is not None:
        return drv
    with _LOCK:
        drv = _DRIVER.get("drv")
        if drv is not None:
            return drv
        try:
            import pycuda
            import pycuda.driver as drv
        except ImportError as e:
            raise DeviceError(f"cuda: the cuda backend needs pycuda ({e}); install it with: "
                              'pip install -e ".[cuda]" in the lazyt checkout') from None
        version = tuple(getattr(pycuda, "VERSION", (0, 0))[:2])
        if version < MIN_PYCUDA:
            raise DeviceError(f"cuda: pycuda {'.'.join(map(str, version))} is too old for CUDA "
                              f"13; install pycuda >= {'.'.join(map(str, MIN_PYCUDA))} with: "
                              'pip install -e ".[cuda]" in the lazyt checkout')
        try:
            drv.init()
        except Exception as e:  # no driver, no device
            raise DeviceError(f"cuda: the CUDA driver could not be initialized ({e}); this "
                              "machine needs an NVIDIA GPU and driver") from None
        _DRIVER["drv"] = drv
        return drv


@dataclass(frozen=True)
class CudaDeviceInfo:
    """What `list_devices` shows of one GPU."""

    index: int
    name: str
    arch: str               # "sm_90"
    memory: int             # bytes
    driver: int             # e.g. 13000

    def __str__(self) -> str:
        major, minor = divmod(self.driver // 10, 100)
        return (f"cuda:{self.index} {self.name} ({self.arch}, {self.memory / 2 ** 30:.1f} GiB, "
                f"driver CUDA {major}.{minor})")


def device_infos() -> list[CudaDeviceInfo]:
    drv = driver()
    out = []
    for i in range(drv.Device.count()):
        dev = drv.Device(i)
        major, minor = dev.compute_capability()
        out.append(CudaDeviceInfo(i, dev.name(), f"sm_{major}{minor}", int(dev.total_memory()),
                                  int(drv.get_driver_version())))
    return out


def get_device(index: int):
    drv = driver()
    count = drv.Device.count()
    if count == 0:
        raise DeviceError("cuda: no CUDA device found on this machine")
    if not 0 <= index < count:
        listing = "; ".join(str(d) for d in device_infos())
        raise DeviceError(f"cuda: there is no device cuda:{index}; this machine has {count}: "
                          f"{listing}")
    return drv.Device(index)


class PrimaryContext:
    """The primary context of one device, made current on each thread that uses it."""

    def __init__(self, device):
        self.device = device
        self.context = device.retain_primary_context()

    def activate(self) -> None:
        """Make this context current on the calling thread (a no-op when it already is)."""
        if getattr(_TLS, "ctx", None) is self:
            return
        previous = getattr(_TLS, "ctx", None)
        if previous is not None:
            previous.context.pop()
        self.context.push()
        _TLS.ctx = self

    def release(self) -> None:
        """Pop the context from the calling thread if this module pushed it there."""
        if getattr(_TLS, "ctx", None) is self:
            self.context.pop()
            _TLS.ctx = None


__all__ = ["driver", "device_infos", "get_device", "PrimaryContext", "CudaDeviceInfo",
           "MIN_PYCUDA"]
