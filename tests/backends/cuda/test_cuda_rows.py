"""The cuda backend's row kernels against numpy in float64: row lengths on both sides of the
edges of the lanes' shares (softmax keeps CACHE * LANES values of a row in registers) are
checked, with and without weight and bias.
Skipped where no CUDA device is present (they run on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from cuda_device import DEV, requires_cuda


pytestmark = requires_cuda


def _reference(x, w, b, eps):
    xd = x.astype(np.float64)
    mean = xd.mean(-1, keepdims=True)
    out = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(-1, keepdims=True) + eps)
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out


@pytest.mark.parametrize("n", [1, 7, 64, 100, 384, 512, 513, 1024, 1025, 1536, 3000, 8192])
@pytest.mark.parametrize("affine", ["both", "none", "weight", "bias"])
def test_layer_norm_rows_match_numpy_across_the_register_cache_edge(n, affine):
    rng = np.random.default_rng(n)
    rows = 37
    x = (rng.standard_normal((rows, n)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if affine in ("both", "weight") else None
    b = rng.standard_normal(n).astype(np.float32) if affine in ("both", "bias") else None

    def dev(v):
        return None if v is None else lazyt.tensor(v, device=DEV)

    got = Dispatch.helper("layer_norm", dev(x), 1, 1e-5, dev(w), dev(b)).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, 1e-5), rtol=1e-5, atol=2e-5)


def test_layer_norm_rows_of_a_view_with_an_offset():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 384)).astype(np.float32)
    t = lazyt.tensor(x, device=DEV)[3:]
    got = Dispatch.helper("layer_norm", t, 1, 1e-12).numpy()
    np.testing.assert_allclose(got, _reference(x[3:], None, None, 1e-12), rtol=1e-5, atol=2e-5)
