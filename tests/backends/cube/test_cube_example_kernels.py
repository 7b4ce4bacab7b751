"""The custom-kernel example's kernel.wgsl / kernel.cu: they complete, compile and read
`build_info`'s layout. nvcc compiles the CUDA one; wgpu, where installed, compiles and runs the
WGSL one against numpy."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.source import CubeDim, SourceKernel, build_info, kernel_source
from lazyt.backends.cube.tensor import contiguous_strides

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "custom_kernel"
RAW = kernel_source(wgsl=EXAMPLE / "kernel.wgsl", cuda=EXAMPLE / "kernel.cu",
                    name="fused_matmul_add_relu")
NVCC = shutil.which("nvcc")


def completed(lang, dtype, cube_dim=CubeDim(16, 8)):
    kernel = SourceKernel(RAW, cube_dim, dtype).for_lang(lang)
    return kernel, kernel.complete()


def test_wgsl_completes_with_the_expected_bindings():
    kernel, text = completed("wgsl", dt.float32)
    assert "{{" not in text and "}}" not in text
    bindings = re.findall(r"@group\(0\)\s*@binding\((\d)\)\s*var<storage,\s*(\w+)>\s*(\w+):\s*"
                          r"array<(\w+)>", text)
    assert bindings == [("0", "read", "lhs", "f32"), ("1", "read", "rhs", "f32"),
                        ("2", "read", "bias", "f32"), ("3", "read_write", "output", "f32"),
                        ("4", "read", "info", "u32")]
    assert "@workgroup_size(16, 8, 1)" in text
    assert re.search(rf"fn {kernel.entry}\(", text)


def test_wgsl_f16_enables_the_extension():
    _, text = completed("wgsl", dt.float16)
    assert text.startswith("enable f16; ") and "array<f16>" in text and "{{" not in text


def _nvcc_ptx(tmp_path, text):
    src = tmp_path / "kernel.cu"
    src.write_text(text)
    proc = subprocess.run([NVCC, "--ptx", "-o", str(tmp_path / "kernel.ptx"), str(src)],
                          capture_output=True, text=True, timeout=120)
    return proc, src


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("dtype, elem", [(dt.float32, "float"), (dt.float16, "__half")])
def test_cuda_kernel_compiles_with_nvcc(tmp_path, dtype, elem):
    kernel, text = completed("cuda", dtype)
    assert "{{" not in text and f"const {elem}* __restrict__ lhs" in text
    assert "__launch_bounds__(16 * 8 * 1)" in text
    proc, _ = _nvcc_ptx(tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "kernel.ptx").read_text()
    assert re.search(rf"\.entry {kernel.entry}\(", ptx)     # extern "C": the name is not mangled


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
def test_cuda_f16_prelude_keeps_compiler_line_numbers(tmp_path):
    _, text = completed("cuda", dt.float16)
    raw_lines = (EXAMPLE / "kernel.cu").read_text().splitlines()
    line = next(i for i, s in enumerate(raw_lines, 1) if "batches *=" in s)
    broken = text.replace("batches *=", "batches *= undefined_name +")
    proc, src = _nvcc_ptx(tmp_path, broken)
    assert proc.returncode != 0
    assert f"({line})" in proc.stderr and "undefined_name" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------- wgpu, optional
def _reference(lhs, rhs, bias):
    return np.maximum(lhs @ rhs + bias, 0)


class _View:
    def __init__(self, shape, strides=None):
        self.shape, self.offset = shape, 0
        self.strides = contiguous_strides(shape) if strides is None else strides


def _wgpu_device():
    wgpu = pytest.importorskip("wgpu", reason="wgpu is not installed: WGSL checked as text only")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        pytest.skip("wgpu has no adapter here: WGSL checked as text only")
    return wgpu, adapter.request_device_sync()


def _run_wgsl(wgpu, device, lhs_data, lhs_view, rhs, bias, cube_dim, max_z=None):
    kernel, text = completed("wgsl", dt.float32, cube_dim)
    module = device.create_shader_module(code=text)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": kernel.entry})
    info = build_info([lhs_view, _View(rhs.shape), _View(bias.shape)])
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    buffers = [device.create_buffer_with_data(data=np.ascontiguousarray(a).tobytes(), usage=usage)
               for a in (lhs_data, rhs, bias)]
    out = device.create_buffer(size=bias.nbytes, usage=usage)
    buffers += [out, device.create_buffer_with_data(data=info.tobytes(), usage=usage)]
    group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)])
    m, n = bias.shape[-2:]
    batches = int(np.prod(bias.shape[:-2]))
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(-(-n // cube_dim.x), -(-m // cube_dim.y),
                                batches if max_z is None else min(batches, max_z))
    compute.end()
    device.queue.submit([encoder.finish()])
    return np.frombuffer(device.queue.read_buffer(out), np.float32).reshape(bias.shape)


def test_wgsl_kernel_matches_numpy_on_wgpu():
    wgpu, device = _wgpu_device()
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((1, 13, 7), dtype=np.float32)
    rhs = rng.standard_normal((4, 7, 11), dtype=np.float32)
    bias = rng.standard_normal((4, 13, 11), dtype=np.float32)
    want = _reference(lhs, rhs, bias)
    got = _run_wgsl(wgpu, device, lhs, _View(lhs.shape), rhs, bias, CubeDim(8, 8))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # fewer z workgroups than batches: the kernel loops over the rest
    got = _run_wgsl(wgpu, device, lhs, _View(lhs.shape), rhs, bias, CubeDim(4, 2), max_z=3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # lhs as a transposed view (strides as given reach the kernel)
    lhs_t = np.ascontiguousarray(lhs[0].T)              # buffer (7, 13); logical lhs (13, 7)
    got = _run_wgsl(wgpu, device, lhs_t, _View((13, 7), (1, 13)), rhs[0], bias[0], CubeDim(8, 8))
    np.testing.assert_allclose(got, _reference(lhs[0], rhs[0], bias[0]), rtol=1e-5, atol=1e-5)
