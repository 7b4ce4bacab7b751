"""Fixtures for the autodiff tests: the device stacks with an Autodiff layer (both
checkpointing strategies without fusion, and the default stack once the Fusion layer exists)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt


def _fusion_available() -> bool:
    try:
        from lazyt.fusion import Fusion  # noqa: F401
    except ImportError:
        return False
    return True


FUSION = _fusion_available()

AD_DEVICES = [
    ("nofusion-balanced", lazyt.device("cpu", fusion=False)),
    ("nofusion-none", lazyt.device("cpu", fusion=False, checkpointing="none")),
]
if FUSION:
    AD_DEVICES += [
        ("fusion-balanced", lazyt.device("cpu")),
        ("fusion-none", lazyt.device("cpu", checkpointing="none")),
    ]
# One device per fusion setting, for the slower tests.
AD_DEVICES_SHORT = [d for d in AD_DEVICES if d[0].endswith("balanced")]


def _wgpu_built() -> bool:
    """The wgpu stack can be built here (package and adapter present); CI has llvmpipe."""
    try:
        lazyt.device("wgpu").backend  # noqa: B018 - builds the stack or raises
    except Exception:
        return False
    return True


# wgpu stacks with an Autodiff layer (float32 only there: wgpu has no float64). Two of the four
# combinations keep the added time small while covering both fusion and both checkpointing
# settings.
WGPU_AD_DEVICES = [
    ("wgpu-fusion-balanced", lazyt.device("wgpu")),
    ("wgpu-nofusion-none", lazyt.device("wgpu", fusion=False, checkpointing="none")),
] if _wgpu_built() else []


@pytest.fixture(params=[d for _, d in AD_DEVICES], ids=[n for n, _ in AD_DEVICES])
def ad_device(request):
    """Each stack with an Autodiff layer."""
    return request.param


@pytest.fixture(params=[d for _, d in AD_DEVICES_SHORT], ids=[n for n, _ in AD_DEVICES_SHORT])
def ad_device_short(request):
    """Each fusion setting, balanced checkpointing."""
    return request.param


@pytest.fixture(params=[d for _, d in WGPU_AD_DEVICES], ids=[n for n, _ in WGPU_AD_DEVICES])
def wgpu_ad_device(request):
    """Each wgpu stack with an Autodiff layer."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
