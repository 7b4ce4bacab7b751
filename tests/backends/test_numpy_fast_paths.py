"""The numpy backend's fast paths: float32 erf, the row-block softmax, and the reductions,
copies and batched matmuls split over the thread pool. Each must give what the plain numpy
computation gives (the same bits where the same ops run in the same order).

These are the numpy forms, what runs without numba: the module turns numba off
(`LAZYT_NUMBA=0`); tests/backends/test_numba_kernels.py tests the numba kernels that replace
some of them when numba is installed."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import lazyt
import lazyt.testing
from lazyt.backends.numpy import NumpyBackend, erf_f32_into
from lazyt.fusion import inspect
from lazyt.ops import ReduceOp

B = NumpyBackend()
RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _numpy_forms_only(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA", "0")


def _device(name: str):
    """"cpu", "cpu-nofusion" or "wgpu" (skipped where no wgpu adapter is present)."""
    if name == "cpu-nofusion":
        return lazyt.device("cpu", fusion=False)
    try:
        dev = lazyt.device(name)
        dev.backend  # noqa: B018 - builds the stack
    except lazyt.DeviceError as e:
        pytest.skip(f"{name} is not available here: {e}")
    return dev


def _erf64(x):
    return np.array([math.erf(float(v)) for v in np.ravel(x)]).reshape(np.shape(x))


# ------------------------------------------------------------------------------ erf
def test_erf_float32_is_within_8_ulp_of_the_exact_value():
    x = np.concatenate([np.linspace(-6, 6, 20001), np.geomspace(1e-30, 3.9, 2000),
                        -np.geomspace(1e-30, 3.9, 2000)]).astype(np.float32)
    got = lazyt.tensor(x).erf().numpy()
    want = _erf64(x)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert got.dtype == np.float32
    assert (np.abs(got - want) / ulp).max() <= 8
    assert np.abs(got).max() <= 1.0  # never past +-1, even where the fit overshoots


def test_erf_float32_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-38, -1e-38, 4.0, -4.0, 50.0],
                 np.float32)
    got = lazyt.tensor(x).erf().numpy()
    np.testing.assert_array_equal(got[[0, 2, 3, 7, 8, 9]], [0.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    assert np.signbit(got[1]) and not np.signbit(got[0])
    assert np.isnan(got[4])
    np.testing.assert_allclose(got[5:7], [1.1283791e-38, -1.1283791e-38], rtol=1e-6)


def test_erf_float16_and_float64():
    x16 = np.linspace(-4, 4, 801).astype(np.float16)
    np.testing.assert_allclose(lazyt.tensor(x16).erf().numpy(), _erf64(x16), atol=1e-3)
    assert lazyt.tensor(x16).erf().dtype == lazyt.float16
    x64 = np.linspace(-5, 5, 1001)
    np.testing.assert_allclose(lazyt.tensor(x64).erf().numpy(), _erf64(x64), rtol=0,
                               atol=1e-15)


def test_erf_in_place_and_chunking_give_the_same_bits():
    x = RNG.standard_normal(700_001).astype(np.float32) * 3  # several chunks, ragged end
    out = np.empty_like(x)
    erf_f32_into(x, out)
    same = x.copy()
    erf_f32_into(same, same)
    np.testing.assert_array_equal(out, same)
    strided = np.empty(2 * x.size, np.float32)[::2]
    strided[...] = x
    o2 = np.empty_like(x)
    erf_f32_into(strided, o2)  # the non-contiguous route
    np.testing.assert_array_equal(out, o2)


@pytest.mark.parametrize("n", [1000, 1 << 20])
def test_gelu_fused_equals_eager_bit_for_bit(n):
    x = RNG.standard_normal(n).astype(np.float32) * 3
    fused = lazyt.tensor(x, device=lazyt.device("cpu")).gelu().numpy()
    eager = lazyt.tensor(x, device=lazyt.device("cpu", fusion=False)).gelu().numpy()
    np.testing.assert_array_equal(fused, eager)
    ref = x * 0.5 * (1 + _erf64(x.astype(np.float64) / math.sqrt(2)))
    # 1 + erf cancels for x < -3 (in torch's float32 gelu too): bounded absolutely
    np.testing.assert_allclose(fused, ref, rtol=2e-6, atol=1e-6)


# ------------------------------------------------------------------------------ softmax
def _softmax_generic(x, dim):
    from lazyt.backends.base import Backend
    return Backend.softmax(B, x, dim)


@pytest.mark.parametrize("shape", [(3, 5), (32, 12, 128, 128), (700, 3000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_matches_the_generic_helper_bit_for_bit(shape, dtype):
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    np.testing.assert_array_equal(B.softmax(x, x.ndim - 1), _softmax_generic(x, x.ndim - 1))


def test_softmax_other_dims_dtypes_and_special_rows():
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    np.testing.assert_array_equal(B.softmax(x, 1), _softmax_generic(x, 1))
    h = x.astype(np.float16)
    np.testing.assert_array_equal(B.softmax(h, 2), _softmax_generic(h, 2))
    rows = np.array([[0.0, -np.inf, 1.0], [-np.inf] * 3, [np.nan, 0, 0]], np.float32)
    got = B.softmax(rows, 1)
    np.testing.assert_allclose(got[0], [1 / (1 + math.e), 0, math.e / (1 + math.e)],
                               rtol=1e-6)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    assert B.softmax(np.zeros((0, 4), np.float32), 1).shape == (0, 4)


def test_softmax_is_one_opaque_op_on_the_fusion_layer():
    x = lazyt.tensor(RNG.standard_normal((8, 16)).astype(np.float32))
    with inspect() as report:
        y = (x * 2).softmax(-1).numpy()
    assert any(name.startswith("softmax") for name in report.opaque_ops)
    assert report.kernels == 2  # the multiply, the softmax
    np.testing.assert_allclose(y, _softmax_generic(x.numpy() * 2, 1), rtol=1e-6)
    # the dim is part of the plan: the same shapes with another dim must not reuse it
    z = (x * 2).reshape(16, 8).softmax(0).numpy()
    np.testing.assert_allclose(z, _softmax_generic(x.numpy().reshape(16, 8) * 2, 0),
                               rtol=1e-6)


def test_softmax_gradient_still_flows_through_the_primitives():
    x = lazyt.tensor(RNG.standard_normal((5, 7)), dtype=lazyt.float64).require_grad()
    w = lazyt.tensor(RNG.standard_normal((5, 7)), dtype=lazyt.float64)
    grads = (x.softmax(-1) * w).sum().backward()
    s = _softmax_generic(x.numpy(), 1)
    want = s * (w.numpy() - (s * w.numpy()).sum(-1, keepdims=True))
    np.testing.assert_allclose(grads.get(x).numpy(), want, rtol=1e-10)


# ------------------------------------------------------------- reductions, copies, matmul
@pytest.mark.parametrize("op, fn", [(ReduceOp.SUM, np.sum), (ReduceOp.MEAN, np.mean),
                                    (ReduceOp.MAX, np.max), (ReduceOp.MIN, np.min),
                                    (ReduceOp.PROD, np.prod)])
@pytest.mark.parametrize("dims", [(2,), (1, 2), (1,)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_split_reductions_equal_numpy(op, fn, dims, keepdim):
    x = RNG.standard_normal((32, 64, 600)).astype(np.float32)
    if op is ReduceOp.PROD:
        x = 1 + x * 1e-3
    got = B.reduce(op, x, dims, keepdim)
    want = fn(x, axis=dims, keepdims=keepdim)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_large_copies_and_reshapes_of_strided_arrays():
    x = RNG.standard_normal((32, 128, 384)).astype(np.float32)
    heads = x.reshape(32, 128, 12, 32).transpose(0, 2, 1, 3)
    merged = B.reshape(heads, (32, 12, 128 * 32))
    np.testing.assert_array_equal(merged, heads.reshape(32, 12, -1))
    assert merged.flags.c_contiguous
    c = B.contiguous(heads)
    np.testing.assert_array_equal(c, heads)
    assert c.flags.c_contiguous
    view = B.reshape(x.transpose(1, 0, 2), (128, 32, 12, 32))  # splitting a dim: a view
    assert np.shares_memory(view, x)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
def test_split_batched_matmul_equals_numpy(dtype, tol, monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "4")  # splitting needs 4 pool threads
    k = RNG.standard_normal((32, 128, 12, 32)).astype(dtype).transpose(0, 2, 1, 3)
    q = np.ascontiguousarray(k) * 0.5
    for rhs in (np.swapaxes(k, -1, -2), np.ascontiguousarray(np.swapaxes(k, -1, -2))):
        got = B.matmul(q, rhs)
        np.testing.assert_allclose(got, np.matmul(q, rhs), rtol=tol, atol=tol)
    ints = RNG.integers(-3, 3, (16, 4, 64, 64))
    np.testing.assert_array_equal(B.matmul(ints, ints), np.matmul(ints, ints))


# ------------------------------------------------------------------------------ threads
def _env_after_import(first: str, extra_env: dict) -> str:
    code = (f"import {first}, lazyt, os; "
            "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update(extra_env)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_importing_lazyt_first_shortens_openblas_spinning_unless_the_user_chose():
    assert _env_after_import("sys", {}) == "18"
    assert _env_after_import("sys", {"OPENBLAS_THREAD_TIMEOUT": "25"}) == "25"
    assert _env_after_import("numpy", {}) == "None"  # too late to matter: left alone


# ------------------------------------------------------------------------------ layer_norm
def _layer_norm_generic(x, n_dims, eps, w=None, b=None):
    from lazyt.backends.base import Backend
    return Backend.layer_norm(B, x, n_dims, eps, w, b)


@pytest.mark.parametrize("shape, n_dims", [((3, 5), 1), ((32, 128, 384), 1), ((6, 4, 10), 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_matches_the_generic_helper_bit_for_bit(shape, n_dims, dtype, affine):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    inner = shape[len(shape) - n_dims:]
    w = RNG.standard_normal(inner).astype(dtype) if affine[0] else None
    b = RNG.standard_normal(inner).astype(dtype) if affine[1] else None
    np.testing.assert_array_equal(B.layer_norm(x, n_dims, 1e-5, w, b),
                                  _layer_norm_generic(x, n_dims, 1e-5, w, b))


def test_layer_norm_module_is_one_op_without_grad_and_primitives_with():
    from lazyt import nn
    ln = nn.LayerNorm(16)
    ln.weight = nn.Parameter(lazyt.tensor(RNG.standard_normal(16).astype(np.float32)))
    x = lazyt.tensor(RNG.standard_normal((4, 8, 16)).astype(np.float32))
    with lazyt.no_grad(), inspect() as report:
        y = ln(x).numpy()
    assert report.opaque_ops == ["layer_norm(n_dims=1)"]
    assert all(b.ops == ("full",) for b in report.blocks)  # only the lazily created bias
    with inspect() as report:  # the weight is tracked: recorded as primitives
        y2 = ln(x).numpy()
    assert "layer_norm(n_dims=1)" not in report.opaque_ops and report.blocks
    np.testing.assert_array_equal(y, y2)
    xn = x.numpy()
    m = xn.mean(-1, keepdims=True)
    want = (xn - m) / np.sqrt(((xn - m) ** 2).mean(-1, keepdims=True) + 1e-5) * ln.weight.numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_layer_norm_on_the_fusion_layer_checks_its_arguments():
    from lazyt.fusion import Fusion
    F = Fusion(NumpyBackend())
    x = F.from_numpy(np.ones((2, 3), np.float32))
    with pytest.raises(lazyt.ShapeError, match="weight of shape"):
        F.layer_norm(x, 1, 1e-5, F.from_numpy(np.ones(4, np.float32)), None)
    with pytest.raises(lazyt.ShapeError, match="trailing dims"):
        F.layer_norm(x, 3, 1e-5)
    with pytest.raises(lazyt.DTypeError):
        F.layer_norm(x, 1, 1e-5, F.from_numpy(np.ones(3, np.float64)), None)
    y = F.layer_norm(x, 1, 1e-5, None, F.from_numpy(np.full(3, 2, np.float32)))
    np.testing.assert_array_equal(F.to_numpy(y), np.full((2, 3), 2, np.float32))


# ------------------------------------------------------------------------------ linear
@pytest.mark.parametrize("shape", [(16,), (4, 16), (2, 3, 16), (0, 16)])
@pytest.mark.parametrize("device", ["cpu", "cpu-nofusion", "wgpu"])
def test_linear_helper_and_module(shape, device):
    from lazyt import nn
    dev = _device(device)
    lin = nn.Linear(16, 8).to(dev)
    x = RNG.standard_normal(shape).astype(np.float32)
    want = x @ lin.weight.numpy().T + lin.bias.numpy()
    with lazyt.no_grad(), inspect() as report:
        y = lin(lazyt.tensor(x, device=dev))
        got = y.numpy()
    assert y.shape == want.shape and y.dtype == lazyt.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if device == "wgpu" and len(shape) >= 2:  # the bias is added in the matmul kernel
        # one op, and no fused block: the bias add is part of the matmul kernel
        assert report.opaque_ops == ["linear"] and not report.blocks
    elif device != "cpu-nofusion":
        assert report.opaque_ops == ["linear"]  # one op, not permute + reshape + matmul
        if device == "cpu" and 0 not in shape:  # the bias add is a fused op of its own
            assert any("add" in b.ops and b.shape == want.shape for b in report.blocks)
    tracked = lin(lazyt.tensor(x, device=dev)).numpy()  # the weight is tracked: primitives
    np.testing.assert_allclose(tracked, got, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dims", [(16, 8), (5, 7), (64, 130), (3, 1)])
@pytest.mark.parametrize("device", ["cpu", "cpu-nofusion", "wgpu"])
def test_linear_bias_in_the_kernel(dims, device):
    """The bias is added as the matmul stores its output (wgpu), for any out_features (the
    vec4 and scalar stores, partial tiles), batch dims, and a bias that is a strided view."""
    from lazyt import nn
    dev = _device(device)
    n_in, n_out = dims
    lin = nn.Linear(n_in, n_out).to(dev)
    for shape in [(3, n_in), (2, 70, n_in)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        want = x @ lin.weight.numpy().T + lin.bias.numpy()
        with lazyt.no_grad():
            np.testing.assert_allclose(lin(lazyt.tensor(x, device=dev)).numpy(), want,
                                       rtol=1e-5, atol=1e-5)
    base = dev.base_backend
    w = base.from_numpy(RNG.standard_normal((n_out, n_in)).astype(np.float32))
    b2 = RNG.standard_normal((2, n_out)).astype(np.float32)
    strided = base.slice(base.from_numpy(b2.T.copy()), ((0, n_out, 1), (1, 2, 1)))
    strided = base.reshape(strided, (n_out,))  # stride 2: every other element
    xs = RNG.standard_normal((4, n_in)).astype(np.float32)
    got = base.to_numpy(base.linear(base.from_numpy(xs), w, strided))
    np.testing.assert_allclose(got, xs @ base.to_numpy(w).T + b2[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_out", [6, 8])
@pytest.mark.parametrize("device", ["cpu", "wgpu"])
def test_linear_bias_float16(n_out, device):
    from lazyt import nn
    dev = _device(device)
    lin = nn.Linear(16, n_out).to(dev).to(lazyt.float16)
    x = RNG.standard_normal((5, 16)).astype(np.float16)
    with lazyt.no_grad():
        y = lin(lazyt.tensor(x, device=dev))
    assert y.dtype == lazyt.float16
    want = x.astype(np.float32) @ lin.weight.numpy().astype(np.float32).T + lin.bias.numpy()
    np.testing.assert_allclose(y.numpy(), want, rtol=5e-3, atol=5e-3)


def test_linear_gradients_promotion_and_errors():
    from lazyt import nn
    lin = nn.Linear(5, 3, dtype=lazyt.float64)
    x = lazyt.tensor(RNG.standard_normal((4, 5)), dtype=lazyt.float64)
    for dev in ("cpu", lazyt.device("cpu", fusion=False)):
        xs = [t.to(dev).detach().require_grad() for t in (x, lin.weight, lin.bias)]
        assert lazyt.testing.gradcheck(
            lambda x, w, b: lazyt.Dispatch.helper("linear", x, w) + b, xs)
    xt = x.detach().require_grad()
    grads = (lin(xt) * 2).sum().backward()
    np.testing.assert_allclose(grads.get(xt).numpy(), 2 * lin.weight.numpy().sum(0)[None, :]
                               .repeat(4, 0), rtol=1e-12)
    np.testing.assert_allclose(grads.get(lin.weight).numpy(),
                               2 * np.ones((3, 4)) @ x.numpy(), rtol=1e-12)
    with pytest.raises(lazyt.DTypeError, match="input dtype int64 does not match the weight's "
                                               "float64"):     # no silent promotion (torch)
        lin(lazyt.tensor([[1, 2, 3, 4, 5]]))
    with pytest.raises(lazyt.ShapeError, match="in_features=5"):
        lin(lazyt.ones(4, 4, dtype=lazyt.float64))
    with pytest.raises(lazyt.ShapeError, match="in_features=5"):
        lin(lazyt.tensor(1.0, dtype=lazyt.float64))
    with pytest.raises(lazyt.DTypeError, match="bool"):
        lin(lazyt.ones(2, 5, dtype=lazyt.bool))
    from lazyt.fusion import Fusion
    F = Fusion(NumpyBackend())
    with pytest.raises(lazyt.ShapeError, match="in_features"):
        F.linear(F.from_numpy(np.ones((2, 4), np.float32)), F.from_numpy(np.ones((3, 5),
                                                                              np.float32)))
    with pytest.raises(lazyt.DTypeError):
        F.linear(F.from_numpy(np.ones((2, 5), np.float32)), F.from_numpy(np.ones((3, 5))))
    one = np.ones((2, 5), np.float32)
    with pytest.raises(lazyt.ShapeError, match="bias of shape"):
        F.linear(F.from_numpy(one), F.from_numpy(np.ones((3, 5), np.float32)),
                 F.from_numpy(np.ones(5, np.float32)))
    with pytest.raises(lazyt.DTypeError):
        F.linear(F.from_numpy(one), F.from_numpy(np.ones((3, 5), np.float32)),
                 F.from_numpy(np.ones(3)))
    y = F.linear(F.from_numpy(one), F.from_numpy(np.ones((3, 5), np.float32)),
                 F.from_numpy(np.arange(3, dtype=np.float32)))
    np.testing.assert_array_equal(F.to_numpy(y), [[5, 6, 7], [5, 6, 7]])


def test_the_result_is_laid_out_heads_last_so_merging_heads_is_a_view():
    """[b, h, n_q, d] results live in [b, n_q, h, d] memory: the transpose + reshape that
    merges the heads (BERT's `merge_heads`) needs no copy. Holds with and without numba."""
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    out = lazyt.device("cpu", autodiff=False).base_backend.attention(q, k, v, None, 0.5)
    merged = out.swapaxes(1, 2).reshape(2, 5, 12)
    assert np.shares_memory(merged, out) and merged.flags.c_contiguous
    s = q @ k.swapaxes(-1, -2) * np.float32(0.5)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out, (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-5, atol=1e-6)
