"""The wgpu row kernels (rows.wgsl): float32 softmax along the last dim and layer_norm, one
workgroup per row, against the numpy backend; the generic helpers elsewhere."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.base import Backend
from lazyt.backends.numpy import NumpyBackend
from lazyt.fusion import inspect

N = NumpyBackend()
RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def wg():
    return lazyt.device("wgpu").base_backend


def _run(wg, fn, *arrays):
    prims = [None if a is None else wg.from_numpy(a) for a in arrays]
    return wg.to_numpy(fn(*prims))


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (37, 129), (2, 3, 1000), (70_000, 4)])
def test_softmax_rows(wg, shape):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    got = _run(wg, lambda p: wg.softmax(p, len(shape) - 1), x)
    np.testing.assert_allclose(got, N.softmax(x, x.ndim - 1), rtol=2e-6, atol=1e-7)


def test_softmax_rows_of_a_strided_view_and_special_values(wg):
    x = RNG.standard_normal((6, 40)).astype(np.float32)
    view = wg.slice(wg.from_numpy(x), ((1, 6, 2), (3, 40, 1)))  # offset and row stride
    np.testing.assert_allclose(wg.to_numpy(wg.softmax(view, 1)), N.softmax(x[1::2, 3:], 1),
                               rtol=2e-6, atol=1e-7)
    rows = np.array([[0.0, -np.inf, 1.0], [-3e38, -3e38, -3e38]], np.float32)
    got = _run(wg, lambda p: wg.softmax(p, 1), rows)
    np.testing.assert_allclose(got, [[0.268941, 0, 0.731059], [1 / 3] * 3], rtol=1e-5)


def test_softmax_generic_cases(wg):
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    np.testing.assert_allclose(_run(wg, lambda p: wg.softmax(p, 1), x), N.softmax(x, 1),
                               rtol=2e-6, atol=1e-7)
    h = x.astype(np.float16)
    if "shader-f16" in wg.client.features:
        np.testing.assert_allclose(_run(wg, lambda p: wg.softmax(p, 2), h).astype(np.float32),
                                   N.softmax(x, 2), atol=2e-3)


@pytest.mark.parametrize("shape, n_dims", [((3, 5), 1), ((64, 384), 1), ((4, 6, 50), 2),
                                           ((2, 3000), 1)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_rows(wg, shape, n_dims, affine):
    x = (RNG.standard_normal(shape) * 3 + 2).astype(np.float32)
    inner = shape[len(shape) - n_dims:]
    w = RNG.standard_normal(inner).astype(np.float32) if affine[0] else None
    b = RNG.standard_normal(inner).astype(np.float32) if affine[1] else None
    got = _run(wg, lambda p, pw, pb: wg.layer_norm(p, n_dims, 1e-5, pw, pb), x, w, b)
    np.testing.assert_allclose(got, N.layer_norm(x, n_dims, 1e-5, w, b), rtol=1e-5, atol=2e-6)


def test_layer_norm_with_sliced_weight_and_bias(wg):
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    wb = RNG.standard_normal(40).astype(np.float32)
    p = wg.from_numpy(wb)
    w, b = wg.slice(p, ((4, 20, 1),)), wg.slice(p, ((24, 40, 1),))
    got = wg.to_numpy(wg.layer_norm(wg.from_numpy(x), 1, 1e-3, w, b))
    np.testing.assert_allclose(got, N.layer_norm(x, 1, 1e-3, wb[4:20], wb[24:40]), rtol=1e-5,
                               atol=2e-6)


def test_fusion_records_one_op_and_gradients_use_the_primitives():
    dev = lazyt.device("wgpu")
    ln = lazyt.nn.LayerNorm(32).to(dev)
    x = lazyt.tensor(RNG.standard_normal((4, 32)).astype(np.float32), device=dev)
    with lazyt.no_grad(), inspect() as report:
        y = ln(x).softmax(-1).numpy()
    assert {"layer_norm(n_dims=1)", "softmax(dim=1)"} <= set(report.opaque_ops)
    xt = x.detach().require_grad()
    grads = (ln(xt).softmax(-1) * lazyt.tensor(np.arange(32.0, dtype=np.float32),
                                               device=dev)).sum().backward()
    xc = lazyt.tensor(x.numpy()).require_grad()
    lnc = lazyt.nn.LayerNorm(32)
    gc = (lnc(xc).softmax(-1) * lazyt.tensor(np.arange(32.0, dtype=np.float32))).sum().backward()
    np.testing.assert_allclose(grads.get(xt).numpy(), gc.get(xc).numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(y, lnc(xc).softmax(-1).numpy(), rtol=1e-5, atol=1e-6)


def test_the_wgpu_backend_overrides_both_helpers():
    """What makes the Fusion layer record them as single ops."""
    cls = type(lazyt.device("wgpu").base_backend)
    assert cls.softmax is not Backend.softmax and cls.layer_norm is not Backend.layer_norm
