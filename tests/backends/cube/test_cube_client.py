"""The Cube `ComputeClient` protocol, without a GPU: a client in host memory (launches are
recorded, nothing runs) implements the abstract methods and gets the shared parts (the kernel
cache keyed by `KernelId`, `LAZYT_DEBUG=2` printing, range-check slots); `CubeBackend`'s
generated kernels and replay run on it unchanged."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import lazyt.dtype as dt
from lazyt.backends.cube import ComputeClient, CubeBackend, CubeCount, CubeLimits, KernelId
from lazyt.backends.cube.client import ERROR_SLOTS, locked
from lazyt.backends.cube.source import TextKernelSource
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref
from lazyt.backends.wgpu.renderer import WGSL
from lazyt.errors import DeviceError, IndexOutOfRangeError, KernelLanguageError
from lazyt.ops import BinaryOp, UnaryOp


@dataclass(eq=False)
class Buffer:
    """A handle: `buffer` the runtime's object, `nbytes` its size (what replay reads)."""

    buffer: bytearray
    nbytes: int


@dataclass(eq=False)
class Compiled:
    name: str
    id: KernelId
    text: str
    entry: str


class MemoryClient(ComputeClient):
    """A WGSL client whose buffers are host memory and whose launches are only recorded."""

    lang = "wgsl"
    runtime = "memory"
    renderer = WGSL
    compiled_type = Compiled
    has_f16 = True

    def __init__(self):
        super().__init__("memory:0", "host memory")
        self.limits = CubeLimits(max_workgroups_per_dim=65_535, max_storage_buffers=8)
        self.built: list[Compiled] = []
        self.launched: list[tuple] = []
        self._errors = np.zeros(2 * ERROR_SLOTS, np.uint32)

    def check_size(self, nbytes: int, what: str = "a buffer") -> None:
        if nbytes > 1 << 24:
            raise DeviceError(f"{self.name}: {what} needs {nbytes} bytes")

    @locked
    def empty(self, nbytes: int) -> Buffer:
        handle = Buffer(bytearray(max(int(nbytes), 4)), int(nbytes))
        self._taped_alloc(handle)
        return handle

    @locked
    def create_from_slice(self, data) -> Buffer:
        self._untaped()
        raw = bytearray(memoryview(np.ascontiguousarray(data)).cast("B"))
        return Buffer(raw, len(raw))

    @locked
    def read(self, handle, nbytes=None, offset: int = 0) -> bytes:
        self._untaped()
        handle = getattr(handle, "handle", handle)
        n = len(self._error_msgs)
        if n:
            self._raise_errors(self._errors[:2 * n])
        data = bytes(handle.buffer)
        return data[offset:offset + (handle.nbytes if nbytes is None else nbytes)]

    @locked
    def launch(self, kernel, cube_count: CubeCount, bindings) -> None:
        compiled = self.compile(kernel)
        self._taped_launch(compiled, cube_count, bindings)
        self.launched.append((compiled, cube_count, list(bindings)))

    def _build(self, name, kid, text, entry) -> Compiled:
        compiled = Compiled(name, kid, text, entry)
        self.built.append(compiled)
        return compiled

    def flush(self) -> None:
        pass

    def sync(self) -> None:
        self.read(Buffer(bytearray(4), 4))

    @property
    def errors_binding(self):
        return self._errors

    def _reset_errors(self, n: int) -> None:
        self._errors[:2 * n] = 0


@pytest.fixture
def client():
    return MemoryClient()


def test_a_client_must_implement_the_protocol():
    class Incomplete(ComputeClient):
        lang = "wgsl"

    with pytest.raises(TypeError, match="abstract"):
        Incomplete("x:0")
    assert not MemoryClient.__abstractmethods__


def test_kernel_cache_is_keyed_by_kernel_id(client):
    text = "@compute @workgroup_size(1)\nfn main() {}\nfn other() {}\n"
    a = client.compile(TextKernelSource("k", "wgsl", text))
    assert client.compile(TextKernelSource("k", "wgsl", text)) is a       # same id: cached
    assert client.compile(a) is a                                           # compiled: as is
    b = client.compile(TextKernelSource("k", "wgsl", text, entry="other"))  # entry in the id
    assert b is not a and dict(b.id.settings)["entry"] == "other"
    assert client.num_kernels == len(client.built) == 2
    assert client.has_kernel(TextKernelSource("k", "wgsl", text))
    with pytest.raises(KernelLanguageError, match="cuda"):
        client.compile(TextKernelSource("k", "cuda", "extern \"C\" __global__ void kernel() {}"))


def test_debug_2_prints_each_source_once_when_compiled(client, monkeypatch, capsys):
    monkeypatch.setenv("LAZYT_DEBUG", "2")
    k = TextKernelSource("shown", "wgsl", "fn main() { /* 5e1c */ }")
    client.compile(k)
    client.compile(k)
    err = capsys.readouterr().err
    assert err.count("// ---- lazyt memory kernel shown[wgsl]@") == 1 and "5e1c" in err


def test_range_check_slots_raise_on_the_next_read(client):
    slot = client.error_slot(lambda v: f"index {v} is out of range")
    client._errors[2 * slot:2 * slot + 2] = [1, np.uint32(-3 & 0xFFFFFFFF)]
    with pytest.raises(IndexOutOfRangeError, match="index -3 is out of range"):
        client.sync()
    client.sync()                                   # the slots were freed and cleared
    assert not client._errors.any()


def test_cube_backend_runs_generated_kernels_on_any_client(client):
    backend = CubeBackend(client, "memory:0")
    x = backend.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = backend.binary(BinaryOp.ADD, x, x)
    kernel, count, bindings = client.launched[-1]
    assert kernel.name == "binary_add" and "(v0 + v1)" in kernel.text
    assert count == CubeCount(1) and bindings[-2] is y
    np.testing.assert_array_equal(bindings[-1], [12, 1, 0, 0, 1, 0, 1, 12, 0, 0])  # linear
    backend.unary(UnaryOp.EXP, backend.permute(x, (1, 0)))
    info = client.launched[-1][2][-1]
    np.testing.assert_array_equal(info, [12, 2, 1, 0, 0, 4, 3, 1, 4])   # strided
    assert client.num_kernels == 2


def test_replay_is_generic_over_clients(client):
    backend = CubeBackend(client, "memory:0")
    backend.replay = True
    IN, SC = (lambda i: Ref("in", i)), (lambda i: Ref("sc", i))
    block = FusedBlock((4, 8), (((4, 8), dt.float32),), (dt.float32,),
                       (FusedInstr("binary", BinaryOp.MUL, (IN(0), SC(0)), dt.float32),),
                       (0,))
    x = backend.from_numpy(np.ones((4, 8), np.float32))
    backend.run_fused(block, [x], [2.0])
    first = client.launched[-1]
    backend.run_fused(block, [x], [2.0])
    again = client.launched[-1]
    assert backend.replay_hits == 1
    assert again[0] is first[0] and again[1] == first[1]
    assert bytes(again[2][-1]) == np.ascontiguousarray(first[2][-1]).tobytes()
    assert again[2][1] is not first[2][1]          # a new output buffer
    assert "vec4<f32>" in first[0].text             # 32 contiguous elements: the vec4 form
