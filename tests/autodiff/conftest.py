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


@pytest.fixture(params=[d for _, d in AD_DEVICES], ids=[n for n, _ in AD_DEVICES])
def ad_device(request):
    """Each stack with an Autodiff layer."""
    return request.param


@pytest.fixture(params=[d for _, d in AD_DEVICES_SHORT], ids=[n for n, _ in AD_DEVICES_SHORT])
def ad_device_short(request):
    """Each fusion setting, balanced checkpointing."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
