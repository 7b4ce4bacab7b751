"""The wgpu runtime: adapters, the ComputeClient (pool, batching, bind groups, launch errors),
the Cube tensor API with a hand-written kernel, dispatch splitting and size limits."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import lazyt
import lazyt.dtype as dt
from lazyt.backends.cube.backend import CubeBackend, into_contiguous
from lazyt.backends.cube.source import (CubeCount, CubeDim, SourceKernel, TextKernelSource,
                                        build_info, kernel_source)
from lazyt.backends.cube.tensor import CubeTensor
from lazyt.backends.wgpu import list_devices
from lazyt.backends.wgpu.client import parse_bindings
from lazyt.backends.wgpu.pool import size_class
from lazyt.errors import (DeviceError, KernelCompileError, KernelLanguageError, LazytError,
                          ShapeError)
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp

SEED = Path(__file__).resolve().parents[3] / "examples" / "custom_kernel"


def test_list_devices_and_info():
    lines = list_devices()
    assert lines and lines[0].startswith("wgpu:0 ")
    assert all(line.startswith(f"wgpu:{i} ") and line.endswith(")")
               for i, line in enumerate(lines))
    assert "(" in lines[0] and ", " in lines[0].rsplit("(", 1)[1]     # "(Vulkan, CPU)"


def test_device_and_backend(backend):
    assert isinstance(backend, CubeBackend)
    assert lazyt.device("wgpu:0").base_backend is backend
    from lazyt.backends.wgpu import create_backend
    with pytest.raises(DeviceError, match=r"no adapter wgpu:99.*wgpu:0"):
        create_backend(99)


def test_size_classes():
    assert size_class(1) == 256 and size_class(257) == 512 and size_class(4096) == 4096
    assert size_class(4097) == 5120                       # four classes per power of two
    for n in (5000, 70_000, 3_000_000):
        c = size_class(n)
        assert n <= c <= n * 1.25 and c % 256 == 0


def test_buffer_pool_reuses_freed_buffers(backend, up):
    client = backend.client
    client.sync()
    a = up(np.arange(1000, dtype=np.float32))
    buf = a.handle.buffer
    del a
    client.flush()                     # freed before a submit: safe for the next upload
    created, reused = client.pool.created, client.pool.reused
    b = up(np.ones(900, np.float32))  # same size class
    assert b.handle.buffer is buf
    assert client.pool.reused == reused + 1 and client.pool.created == created
    np.testing.assert_array_equal(backend.to_numpy(b), np.ones(900, np.float32))


def test_upload_never_takes_a_buffer_pending_commands_still_read(backend, up, down):
    client = backend.client
    client.sync()
    x = up(np.full(64, 2.0, np.float32))
    y = backend.binary(BinaryOp.MUL, x, 3.0)        # recorded, not submitted
    buf = x.handle.buffer
    del x                                           # freed while y's kernel still reads it
    z = up(np.full(64, 5.0, np.float32))            # must not overwrite x's buffer
    assert z.handle.buffer is not buf
    np.testing.assert_array_equal(down(y), np.full(64, 6.0, np.float32))
    w = backend.unary(UnaryOp.NEG, z)               # a kernel output may take a freed buffer
    np.testing.assert_array_equal(down(w), np.full(64, -5.0, np.float32))


def test_launches_are_batched_and_bind_groups_cached(backend, up, down):
    client = backend.client
    x = up(np.arange(16, dtype=np.float32))
    down(backend.unary(UnaryOp.EXP, x))              # compile and cache
    submits, groups = client.submits, len(client._groups)
    y = x
    for _ in range(20):
        y = backend.binary(BinaryOp.ADD, y, 1.0)
    assert client.submits == submits                 # nothing submitted per op
    np.testing.assert_allclose(down(y), np.arange(16) + 20.0)
    assert client.submits == submits + 1             # one submit for the read
    # a steady loop reuses pooled buffers, so its bind groups come from the cache
    before = len(client._groups)
    for _ in range(3):
        for _ in range(5):
            y = backend.binary(BinaryOp.ADD, y, 1.0)
        down(y)
    assert len(client._groups) - before <= 8
    assert groups <= len(client._groups)


def test_parse_bindings():
    text = """
    // @group(0) @binding(9) var<storage, read> commented: array<f32>;
    @group(0) @binding(0) var<storage, read> a: array<f32>;
    @binding(1) @group(0)
    var<storage, read_write> b: array<f32>;
    @group(0) @binding(2) var<uniform> u: vec4<f32>;
    @group(0) @binding(3) var<storage> c: array<u32>;
    """
    assert parse_bindings("k", text) == ("read-only-storage", "storage", "uniform",
                                         "read-only-storage")
    with pytest.raises(KernelCompileError, match="numbered 0..n-1"):
        parse_bindings("k", "@group(0) @binding(1) var<storage, read> a: array<f32>;")


def test_cuda_source_on_wgpu_raises_kernel_language_error(backend):
    cuda_only = TextKernelSource("my_cuda_kernel", "cuda", "extern \"C\" __global__ void k() {}")
    with pytest.raises(KernelLanguageError, match=r"my_cuda_kernel.*cuda.*wgsl"):
        backend.client.launch(cuda_only, CubeCount(1), [])
    sources = kernel_source(wgsl=None, cuda=SEED / "kernel.cu", name="seed")
    with pytest.raises(KernelLanguageError, match="no source for the wgsl runtime"):
        backend.client.launch(SourceKernel(sources, CubeDim(8, 8)), CubeCount(1), [])


def test_wgsl_compile_error_names_kernel_and_line(backend):
    bad = TextKernelSource("broken_kernel", "wgsl", (
        "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
        "@compute @workgroup_size(1)\n"
        "fn main() {\n"
        "    o[0] = undefined_name + 1.0;\n"
        "}\n"))
    with pytest.raises(KernelCompileError) as e:
        backend.client.compile(bad)
    msg = str(e.value)
    assert "broken_kernel" in msg and "undefined_name" in msg
    assert ":4:" in msg                          # the compiler's line:column
    bad_entry = TextKernelSource("no_entry", "wgsl", "@compute @workgroup_size(1)\nfn main() {}\n",
                                 entry="missing")
    with pytest.raises(KernelCompileError, match="no_entry"):
        backend.client.compile(bad_entry)


def test_launch_checks_bindings_and_counts(backend, up):
    k = TextKernelSource("two_bindings", "wgsl", (
        "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
        "@group(0) @binding(1) var<storage, read_write> o: array<f32>;\n"
        "@compute @workgroup_size(64)\n"
        "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
        "    if (g.x < arrayLength(&o)) { o[g.x] = a[g.x] * 2.0; }\n"
        "}\n"))
    x = up(np.arange(64, dtype=np.float32))
    with pytest.raises(LazytError, match="declares 2 bindings"):
        backend.client.launch(k, CubeCount(1), [x])
    with pytest.raises(LazytError, match="read_write"):
        backend.client.launch(k, CubeCount(1), [x, np.zeros(4, np.float32)])
    with pytest.raises(ShapeError, match="CubeCount.split"):
        backend.client.launch(k, CubeCount(10 ** 6), [x, x])
    out = backend.empty((64,), dt.float32)
    backend.client.launch(k, CubeCount(1), [x, out])
    np.testing.assert_array_equal(backend.to_numpy(out)[:64], np.arange(64) * 2.0)


def test_debug_2_prints_generated_source(backend, up, monkeypatch, capsys):
    monkeypatch.setenv("LAZYT_DEBUG", "2")
    k = TextKernelSource("printed_kernel", "wgsl",
                         "@compute @workgroup_size(1)\nfn main() { /* unique 7f3a */ }\n")
    backend.client.compile(k)
    err = capsys.readouterr().err
    assert "printed_kernel" in err and "unique 7f3a" in err


def test_seed_kernel_through_the_cube_tensor_api(backend, up, down):
    """The seed example's launch code, on wgpu: new_contiguous, into_contiguous,
    assert_is_on_same_device, client.empty, build_info and client.launch."""
    rng = np.random.default_rng(0)
    lhs_np = rng.standard_normal((1, 13, 7), dtype=np.float32)
    rhs_np = rng.standard_normal((4, 11, 7), dtype=np.float32)       # transposed view below
    bias_np = rng.standard_normal((4, 13, 11), dtype=np.float32)
    lhs, bias = up(lhs_np), up(bias_np)
    rhs = backend.permute(up(rhs_np), (0, 2, 1))
    lhs.assert_is_on_same_device(rhs)
    lhs.assert_is_on_same_device(bias)
    lhs, rhs, bias = into_contiguous(lhs), into_contiguous(rhs), into_contiguous(bias)
    assert rhs.is_contiguous()
    client = lhs.client
    shape_out = (4, 13, 11)
    output = CubeTensor.new_contiguous(client, lhs.device, shape_out,
                                       client.empty(4 * 13 * 11 * 4), lhs.dtype)
    cube_dim = CubeDim(8, 8)
    kernel = SourceKernel(kernel_source(wgsl=SEED / "kernel.wgsl", cuda=SEED / "kernel.cu"),
                          cube_dim, dtype=lhs.dtype)
    info = build_info([lhs, rhs, output])
    client.launch(kernel, CubeCount(-(-11 // 8), -(-13 // 8), 4), [lhs, rhs, bias, output, info])
    want = np.maximum(lhs_np @ np.transpose(rhs_np, (0, 2, 1)) + bias_np, 0)
    np.testing.assert_allclose(down(output), want, rtol=1e-5, atol=1e-5)
    other = CubeTensor(client, "wgpu:1", (2,), (1,), lhs.handle, lhs.dtype)
    with pytest.raises(DeviceError):
        lhs.assert_is_on_same_device(other)


@pytest.fixture
def tiny_dispatch(backend):
    """At most 3 workgroups per dispatch dimension: small tensors take the 2-D/3-D path."""
    client = backend.client
    saved = client.limits
    client.limits = dataclasses.replace(saved, max_workgroups_per_dim=3)
    yield backend
    client.limits = saved


def test_cube_count_split_math():
    for count in (1, 3, 4, 9, 10, 26, 27):
        c = CubeCount.split(count, 3)
        assert max(c.x, c.y, c.z) <= 3 and c.total >= count
        assert c.total - count < c.x * c.y * c.z and (c.total < count + c.y * c.z or count == 0)
    with pytest.raises(ShapeError):
        CubeCount.split(28, 3)


def test_large_dispatch_splitting_is_exact(tiny_dispatch, up, down, close, rng):
    b = tiny_dispatch
    n = 256 * 7 + 5                                   # 8 workgroups -> 3 x 3 with 1 spare
    x = rng.standard_normal(n).astype(np.float32)
    close(down(b.unary(UnaryOp.NEG, up(x))), -x)
    x2 = rng.standard_normal((20, 130)).astype(np.float32)    # 20 rows -> 3 x 3 x 3 groups
    close(down(b.reduce(ReduceOp.SUM, up(x2), (1,), False)), x2.sum(1), rtol=1e-4, atol=1e-5)
    close(down(b.binary(BinaryOp.ADD, b.permute(up(x2), (1, 0)), 1.0)), x2.T + 1)
    a = rng.standard_normal((7, 3, 4)).astype(np.float32)     # 7 batches over z <= 3
    m = rng.standard_normal((7, 4, 5)).astype(np.float32)
    close(down(b.matmul(up(a), up(m))), a @ m, rtol=1e-5, atol=1e-5)
    close(down(b.full((n,), 3.0, dt.float32)), np.full(n, 3.0, np.float32))
    idx = rng.integers(0, 20, (40,))          # 5200 elements: 21 workgroups
    close(down(b.index_select(up(x2), 0, up(idx))), x2[idx])
    with pytest.raises(ShapeError):
        b.unary(UnaryOp.NEG, up(np.zeros(256 * 28, np.float32)))   # more than 3^3 workgroups


def test_tensors_beyond_the_limits_get_clear_errors(backend, up):
    limit = backend.client.max_binding
    n = limit // 4 + 1
    with pytest.raises(DeviceError, match="binds at most"):
        backend.empty((n,), dt.float32)
    with pytest.raises(DeviceError, match="binds at most"):
        backend.full((n,), 1.0, dt.float32)
    with pytest.raises(ShapeError, match="2\\^32"):
        backend.empty((2 ** 16, 2 ** 16 + 1), dt.bool_)
    huge = backend.expand(up(np.ones((1, 1), np.float32)), (2 ** 17, 2 ** 16))   # a view: fine
    assert huge.shape == (2 ** 17, 2 ** 16)
    with pytest.raises(ShapeError, match="2\\^32"):
        backend.unary(UnaryOp.EXP, huge)
    with pytest.raises(ShapeError, match="2\\^32"):
        backend.reduce(ReduceOp.SUM, huge, (0, 1), False)
    if n < 2 ** 32:                              # fits 2^32 elements, not the binding
        big = backend.expand(up(np.ones((1,), np.float32)), (n,))
        with pytest.raises(DeviceError, match="binds at most"):
            backend.contiguous(big)


def test_wgpu_device_stack_runs_ops(check):
    dev = lazyt.device("wgpu")
    x = lazyt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    check(((x @ x.T).relu() + 1).sum(1), (np.arange(6.0).reshape(2, 3) @ np.arange(6.0)
                                          .reshape(2, 3).T + 1).sum(1).astype(np.float32))
    with pytest.raises(lazyt.DTypeError, match="float64 is not supported on wgpu:0"):
        x.double().numpy()


def test_two_threads_share_one_client(backend, up, down):
    import threading
    errors = []

    def work(k):
        try:
            for i in range(30):
                x = up(np.full(40, float(k * 100 + i), np.float32))
                y = backend.binary(BinaryOp.SUB, backend.unary(UnaryOp.RELU, x), 1.0)
                np.testing.assert_array_equal(down(y), np.full(40, k * 100 + i - 1.0))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_device_timer_measures_recorded_passes(backend, up):
    if "timestamp-query" not in backend.client.features:
        with pytest.raises(DeviceError, match="timestamp-query"):
            backend.client.device_timer()
        return
    x = up(np.ones(1 << 16, np.float32))
    backend.sync()
    with backend.client.device_timer() as timer:
        for _ in range(3):
            x = backend.unary(UnaryOp.NEG, x)
        backend.sync()
    assert timer.passes >= 1 and timer.seconds > 0


def test_private_runtime_dir_is_removed_when_the_process_exits():
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    code = ("import os, lazyt; from lazyt.backends.wgpu import list_devices; list_devices(); "
            "p = os.environ['XDG_RUNTIME_DIR']; assert os.path.isdir(p); print(p)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert "lazyt-xdg-" in out and not os.path.exists(out)


def test_the_wgpu_client_implements_the_cube_protocol(backend):
    from lazyt.backends import wgpu
    from lazyt.backends.cube import ComputeClient
    assert wgpu.ComputeClient is wgpu.WgpuClient
    assert issubclass(wgpu.WgpuClient, ComputeClient) and not wgpu.WgpuClient.__abstractmethods__
    assert isinstance(backend.client, ComputeClient) and backend.renderer is backend.client.renderer
    assert backend.client.lang == backend.renderer.lang == "wgsl"
    handle = backend.client.empty(16)
    assert handle.nbytes >= 16 and handle.buffer is not None


def test_one_kernel_cache_per_client_keyed_by_kernel_id(backend, up):
    """A launch resolves its kernel in the client's cache by `KernelId`; generated sources are
    memoized, so running an op again neither renders nor compiles anything."""
    from lazyt.backends.cube import KernelId
    x = up(np.arange(8, dtype=np.float32))
    backend.unary(UnaryOp.SIN, x)
    kernels = dict(backend.client._kernels)
    assert all(isinstance(k, KernelId) for k in kernels)
    backend.unary(UnaryOp.SIN, x)
    assert dict(backend.client._kernels) == kernels
    assert backend.client.has_kernel(backend.renderer.unary_kernel(UnaryOp.SIN, dt.float32))


def test_a_long_compiled_graph_is_submitted_in_parts(backend, monkeypatch):
    """A compiled call's dispatch graph goes to the device in parts (after GRAPH_SPLITS
    dispatches), so the device starts while the host encodes the rest; short graphs and
    GRAPH_SPLITS = () keep one submission; the results are the same either way."""
    import lazyt.backends.wgpu.client as wc
    dev = lazyt.device("wgpu:0")

    def f(x):
        for _ in range(30):    # a reduction and a fused block each: 60 dispatches
            x = x.sum(-1, keepdim=True) * 0.01 + x
        return x

    def g(x):                  # a few dispatches
        return (x.sum(-1, keepdim=True) + x).exp().sum(-1)

    x = lazyt.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16), device=dev)
    want = f(x).numpy()
    client = backend.client
    for splits, parts in (((16, 48), 3), ((), 1), ((16,), 2), ((100,), 1)):
        monkeypatch.setattr(wc, "GRAPH_SPLITS", splits)
        c = lazyt.compile(f)
        for _ in range(4):     # the recording calls, then the graph
            c(x).numpy()
        client.sync()
        submits = client.submits
        out = c(x)
        assert client.submits - submits == parts - 1     # the last part goes with the read
        np.testing.assert_array_equal(out.numpy(), want)
        assert client.submits - submits == parts
    monkeypatch.setattr(wc, "GRAPH_SPLITS", (16, 48))
    c = lazyt.compile(g)
    for _ in range(4):
        c(x).numpy()
    client.sync()
    submits = client.submits
    c(x).numpy()
    assert client.submits - submits == 1
