"""The cuda backend on a GPU: the client (buffers, launches, range checks, errors), NVRTC and
its disk cache, cuBLAS matmul against numpy (and the fallback kernel), real float64 and 64-bit
int64. Skipped where no CUDA device is present (they run on the GPU machine)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt.backends.cube import CubeCount, CubeDim, SourceKernel, TextKernelSource
from lazyt.errors import DeviceError, IndexOutOfRangeError, KernelCompileError, \
    KernelLanguageError, ShapeError
from cuda_device import DEV, requires_cuda


pytestmark = requires_cuda


@pytest.fixture
def backend():
    return DEV.base_backend


def test_device_listing_names_arch_memory_driver_and_cublas():
    from lazyt.backends.cuda import list_devices
    lines = list_devices()
    assert lines and lines[0].startswith("cuda:0 ")
    assert "sm_" in lines[0] and "GiB" in lines[0] and "driver CUDA" in lines[0]
    assert "cuBLAS" in lines[0]


def test_round_trip_of_every_dtype(backend):
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_):
        a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
        out = backend.to_numpy(backend.from_numpy(a))
        assert out.dtype == a.dtype and np.array_equal(out, a)


def test_int64_is_real_64_bit():
    x = lazyt.tensor(np.array([2 ** 40, -(2 ** 50), 2 ** 31 - 1]), device=DEV)
    y = (x + 1) * 3
    np.testing.assert_array_equal(y.numpy(), (np.array([2 ** 40, -(2 ** 50), 2 ** 31 - 1]) + 1) * 3)
    assert int(lazyt.tensor(np.array([2 ** 62, 2 ** 61]), device=DEV).sum().item()) == \
        2 ** 62 + 2 ** 61


def test_float64_keeps_double_precision():
    a = np.random.default_rng(0).standard_normal((64, 48))
    x = lazyt.tensor(a, device=DEV)
    np.testing.assert_allclose(((x * 1.000000001).exp() - 0.1).sum(dim=1).numpy(),
                               (np.exp(a * 1.000000001) - 0.1).sum(1), rtol=1e-13)
    np.testing.assert_allclose((x @ x.T).numpy(), a @ a.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch, m, k, n", [((), 5, 7, 3), ((), 64, 384, 384),
                                            ((2, 3), 33, 17, 9), ((4,), 1, 8, 5)])
def test_matmul_matches_numpy(batch, m, k, n):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((*batch, m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = (lazyt.tensor(a, device=DEV) @ lazyt.tensor(b, device=DEV)).numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_float32_does_not_use_tf32():
    # 1 + 2^-12 needs 13 significant bits: TF32 (11) rounds it to 1 and the product to 16,
    # while every float32 partial sum here is exact
    a = np.full((64, 16), 1 + 2 ** -12, np.float32)
    b = np.ones((16, 64), np.float32)
    out = (lazyt.tensor(a, device=DEV) @ lazyt.tensor(b, device=DEV)).numpy()
    assert np.all(out == np.float32(16 + 2 ** -8))


def test_linear_with_bias_and_transposed_views():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 16, 24)).astype(np.float32)
    w = rng.standard_normal((40, 24)).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    out = Dispatch.helper("linear", lazyt.tensor(x, device=DEV), lazyt.tensor(w, device=DEV),
                          lazyt.tensor(bias, device=DEV)).numpy()
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-4)
    xt = lazyt.tensor(np.ascontiguousarray(x.transpose(0, 2, 1)), device=DEV).transpose(1, 2)
    np.testing.assert_allclose((xt @ lazyt.tensor(w.T.copy(), device=DEV)).numpy(), x @ w.T,
                               rtol=1e-4, atol=1e-4)


def test_matmul_bias_relu_epilogue(backend):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    bias = rng.standard_normal(48).astype(np.float32)
    out = backend.matmul_bias_relu(backend.from_numpy(a), backend.from_numpy(b),
                                   backend.from_numpy(bias))
    np.testing.assert_allclose(backend.to_numpy(out), np.maximum(a @ b + bias, 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
def test_fallback_kernel_matmul(monkeypatch, dtype):
    monkeypatch.setenv("LAZYT_CUDA_CUBLAS", "0")
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 70, 33)) * 3).astype(dtype)
    b = (rng.standard_normal((33, 65)) * 3).astype(dtype)
    bias = (rng.standard_normal(65) * 3).astype(dtype)
    backend = DEV.base_backend
    out = backend.to_numpy(backend.matmul(backend.from_numpy(a), backend.from_numpy(b)))
    tol = 1e-2 if dtype == np.float16 else 1e-4
    ref = (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol * 10)
    if dtype != np.int32:
        out = backend.to_numpy(backend.matmul_bias_relu(backend.from_numpy(a),
                                                        backend.from_numpy(b),
                                                        backend.from_numpy(bias)))
        np.testing.assert_allclose(out.astype(np.float64), np.maximum(ref + bias, 0), rtol=tol,
                                   atol=tol * 10)


def test_compile_error_names_the_kernel_and_lines(backend):
    bad = TextKernelSource("broken", "cuda", 'extern "C" __global__ void kernel(float* x) {\n'
                                             '    x[0] = undefined_name;\n}\n',
                           cube_dim=CubeDim(32))
    with pytest.raises(KernelCompileError, match=r"broken[\s\S]*\(2\)[\s\S]*undefined_name"):
        backend.client.launch(bad, CubeCount(1), [backend.alloc("t", (4,), lazyt.float32)])
    # the client is still usable
    assert backend.to_numpy(backend.full((3,), 2.0, lazyt.float32)).tolist() == [2.0] * 3


def test_wgsl_source_on_cuda_raises_kernel_language_error(backend):
    wgsl = TextKernelSource("w", "wgsl", "@compute @workgroup_size(1) fn main() {}")
    with pytest.raises(KernelLanguageError, match="wgsl"):
        backend.client.launch(wgsl, CubeCount(1), [])


def test_grid_limits_are_checked(backend):
    src = TextKernelSource("noop", "cuda", 'extern "C" __global__ void kernel(float* x) {}',
                           cube_dim=CubeDim(32))
    x = backend.alloc("t", (4,), lazyt.float32)
    with pytest.raises(ShapeError, match="exceed"):
        backend.client.launch(src, CubeCount(1, 70000), [x])
    with pytest.raises(Exception, match="not a pointer"):
        backend.client.launch(TextKernelSource("s", "cuda", 'extern "C" __global__ void '
                                               'kernel(float* x, int n) {}',
                                               cube_dim=CubeDim(32)), CubeCount(1), [x, x])


def test_index_out_of_range_is_raised_at_the_read():
    x = lazyt.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), device=DEV)
    idx = lazyt.tensor(np.array([[0, 5]]), device=DEV)
    with pytest.raises(IndexOutOfRangeError, match="out of range"):
        x.gather(1, idx).numpy()
    assert x.sum().item() == 15.0


def test_disk_cache_serves_a_new_process(tmp_path):
    code = ("import time, lazyt, numpy as np\n"
            "from lazyt.backends.cuda import compiler\n"
            "x = lazyt.tensor(np.arange(8, dtype=np.float32), device='cuda')\n"
            "t = time.perf_counter(); y = ((x * 3.25 + 1).exp() - 2).numpy()\n"
            "print(compiler.STATS.compiled, compiler.STATS.disk_hits)\n")
    env = {**os.environ, "LAZYT_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    compiled, hits = map(int, first.stdout.split())
    assert compiled > 0
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    compiled2, hits2 = map(int, second.stdout.split())
    assert compiled2 == 0 and hits2 == compiled
    assert list(tmp_path.glob("cuda/*/*.cubin"))


def test_custom_kernel_source_runs_on_cuda():
    from examples.custom_kernel.lib import matmul_add_relu_custom, matmul_add_relu_reference
    rng = np.random.default_rng(5)
    lhs = lazyt.tensor(rng.standard_normal((2, 16, 8)).astype(np.float32), device=DEV)
    rhs = lazyt.tensor(rng.standard_normal((2, 8, 12)).astype(np.float32), device=DEV)
    bias = lazyt.tensor(rng.standard_normal((2, 16, 12)).astype(np.float32), device=DEV)
    np.testing.assert_allclose(matmul_add_relu_custom(lhs, rhs, bias).numpy(),
                               matmul_add_relu_reference(lhs, rhs, bias).numpy(), rtol=1e-4,
                               atol=1e-4)


def test_source_kernel_with_elem_prelude_compiles_for_float16(backend):
    src = TextKernelSource("h", "cuda", '#include <cuda_fp16.h>\nextern "C" __global__ void '
                           'kernel(__half* x) { x[threadIdx.x] = __float2half(2.5f); }',
                           cube_dim=CubeDim(4))
    x = backend.alloc("t", (4,), lazyt.float16)
    backend.client.launch(SourceKernel(src, CubeDim(4)), CubeCount(1), [x])
    assert backend.to_numpy(x).tolist() == [2.5] * 4


def test_cuda_array_interface_shares_memory_with_torch():
    torch = pytest.importorskip("torch", reason="torch is the other side of the exchange")
    x = lazyt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=DEV) * 2
    tt = torch.as_tensor(x, device="cuda")            # reads __cuda_array_interface__
    np.testing.assert_array_equal(tt.cpu().numpy(), np.arange(6).reshape(2, 3) * 2)
    assert tt.data_ptr() == x.__cuda_array_interface__["data"][0]
    x += 1                                             # rebinding keeps the shared buffer alive
    np.testing.assert_array_equal(tt.cpu().numpy(), np.arange(6).reshape(2, 3) * 2)
    src = torch.arange(4, device="cuda", dtype=torch.float32) * 3
    back = lazyt.from_dlpack(src)                      # zero-copy import
    assert back.device.base == "cuda"
    np.testing.assert_array_equal((back + 1).numpy(), [1.0, 4.0, 7.0, 10.0])
    strided = lazyt.from_dlpack(torch.arange(12, device="cuda", dtype=torch.int64)
                                .reshape(3, 4).t())
    np.testing.assert_array_equal(strided.numpy(), np.arange(12).reshape(3, 4).T)
    assert x.__dlpack_device__() == (2, 0)


def test_dlpack_export_through_cupy_or_a_clear_error():
    x = lazyt.tensor(np.arange(4, dtype=np.float32), device=DEV)
    try:
        import cupy
    except ImportError:
        with pytest.raises(DeviceError, match="CuPy"):
            x.__dlpack__()
        return
    np.testing.assert_array_equal(cupy.from_dlpack(x).get(), [0.0, 1.0, 2.0, 3.0])


def test_info_words_are_uploaded_once_per_content(backend):
    client = backend.client
    x = lazyt.tensor(np.arange(8, dtype=np.float32), device=DEV)
    lazyt.sync()
    for _ in range(3):
        np.testing.assert_array_equal(((x * 2 + 1).relu() - 3).numpy(),
                                      np.maximum(np.arange(8) * 2 + 1, 0) - 3)
    held = dict(client._consts)
    at = client._const_at
    np.testing.assert_array_equal(((x * 2 + 1).relu() - 3).numpy(),
                                  np.maximum(np.arange(8) * 2 + 1, 0) - 3)
    assert client._const_at == at and client._consts == held   # nothing new was uploaded
    y = lazyt.tensor(np.arange(12, dtype=np.float32), device=DEV)  # new shape: new info
    np.testing.assert_array_equal((y * 2 + 1).numpy(), np.arange(12) * 2 + 1)
    assert client._const_at > at


def test_a_full_constant_arena_starts_over_with_right_results(backend, monkeypatch):
    import lazyt.backends.cuda.client as cc
    client = backend.client
    monkeypatch.setattr(cc, "CONST_ARENA_BYTES", 4096)   # about 60 infos fit
    client._const_at = 4000
    outs = []
    for i in range(300):                                  # distinct scalars: distinct infos
        x = lazyt.tensor(np.full(5 + i % 7, float(i), np.float32), device=DEV)
        outs.append((i, x * float(i) + float(i)))
    for i, o in outs:
        np.testing.assert_array_equal(o.numpy(), np.full(5 + i % 7, i * i + i, np.float32))
    assert client._const_at <= 4096


def test_linear_with_ready_inputs_runs_at_once_and_matches_numpy():
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s, dtype=np.float32) for s in ((64, 32), (16, 32), (16,)))
    tx, tw, tb = (lazyt.tensor(v, device=DEV) for v in (x, w, b))
    fusion = DEV.backend.inner
    lazyt.sync()
    outs = [Dispatch.helper("linear", tx, tw, tb) for _ in range(3)]
    assert fusion.pending == 0
    for o in outs:
        np.testing.assert_allclose(o.numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    pending = Dispatch.helper("linear", tx * 2.0, tw, tb)     # a pending input: recorded
    assert fusion.pending == 2
    np.testing.assert_allclose(pending.numpy(), (2 * x) @ w.T + b, rtol=1e-5, atol=1e-4)


def test_two_host_data_bindings_survive_a_full_constant_arena(backend, monkeypatch):
    import lazyt.backends.cuda.client as cc
    client = backend.client
    text = ('extern "C" __global__ void kernel(float* out, const unsigned int* a, '
            'const unsigned int* b) {\n'
            '    const unsigned int i = threadIdx.x;\n'
            '    if (i < 4u) { out[i] = (float)a[i] + 10.0f * (float)b[i]; }\n}\n')
    k = TextKernelSource("two_infos", "cuda", text, cube_dim=CubeDim(32))
    out = backend.alloc("two_infos", (4,), lazyt.float32)
    a = np.array([1, 2, 3, 4], np.uint32)
    monkeypatch.setattr(cc, "CONST_ARENA_BYTES", 256)
    client.launch(k, CubeCount(1), [out, a, np.zeros(4, np.uint32)])   # a is cached
    for i in range(40):                                                  # fill the arena
        client.launch(k, CubeCount(1), [out, np.full(4, i, np.uint32), a])
    client.launch(k, CubeCount(1), [out, a, np.array([5, 6, 7, 8], np.uint32)])
    np.testing.assert_array_equal(backend.to_numpy(out), [51, 62, 73, 84])
