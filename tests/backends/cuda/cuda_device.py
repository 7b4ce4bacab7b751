"""The CUDA device the tests in this folder run on, or None, and the mark that skips them
where there is none (they run on the GPU machine)."""
from __future__ import annotations

import pytest

import lazyt
from lazyt.errors import DeviceError


def _cuda():
    try:
        dev = lazyt.device("cuda")
        dev.backend  # noqa: B018
        return dev
    except DeviceError:
        return None


DEV = _cuda()
requires_cuda = pytest.mark.skipif(DEV is None, reason="no CUDA device (pycuda, a GPU and its "
                                                       "driver are needed); runs on the GPU machine")
