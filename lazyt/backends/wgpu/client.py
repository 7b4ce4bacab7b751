"""WgpuClient: the wgpu implementation of the Cube `ComputeClient` (buffers, pipelines and
batched launches on one device).

Launches are recorded into one open command encoder (one compute pass) and submitted together
when a read, `sync()`, or a batch limit needs it: no round trip per op. Small per-launch data
(layout words, scalars) goes into one arena buffer per batch, written once before the submit and
bound at offsets that respect the device's offset alignment. Compiled pipelines live in the
client's kernel cache (keyed by `KernelId`, see `lazyt/backends/cube/client.py` for every cache).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...errors import DeviceError, KernelCompileError, LazytError, ShapeError
from ..cube import client as cube
from ..cube.client import ERROR_SLOTS, CubeLimits, locked
from ..cube.source import CubeCount, KernelId, KernelSource
from .pool import BufferPool, Handle
from .renderer import WGSL

#: Launches recorded before a batch is submitted even without a read.
MAX_BATCH = 256
#: Bytes bound by the launches of a batch above which it is submitted early, so the device
#: starts on big kernels while Python records the next ones. A submit costs the host far more
#: than a launch: on an H200 host a BERT forward (about 2 GiB bound) took 18 ms with 1 GiB
#: batches (3 submits: the device idled while the first half was recorded), 14.8 with 256 MiB
#: (9), 19 with 64 MiB (27), and 22-25 ms when submitting every 4-8 launches.
MAX_BATCH_BYTES = 1 << 28
#: A recorded graph of at least twice the first of these many dispatches is submitted after
#: each of them (and the rest at the next flush), so the device starts on the first part
#: while the host encodes the next. MiniLM's compiled b32 s128 forward on an H200 host
#: (torch eager 3.22 ms there): one submission 5.88 ms a call, after 16 5.44, after 32
#: 5.31, after 16 and 48 5.26, after 16, 32, 48 and 64 5.34 (each submit costs the host).
GRAPH_SPLITS = (16, 48)
#: Bind groups kept for reuse (least recently used dropped first).
MAX_BIND_GROUPS = 4096

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DECL = re.compile(r"((?:@\s*\w+\s*\(\s*\d+\s*\)\s*)+)var\s*<\s*(storage|uniform)\s*"
                   r"(?:,\s*(read_write|read)\s*)?>")
_ATTR = re.compile(r"@\s*(group|binding)\s*\(\s*(\d+)\s*\)")


def parse_bindings(name: str, text: str) -> tuple[str, ...]:
    """The buffer kind of each `@group(0) @binding(i)` of a WGSL source, in binding order:
    "read-only-storage", "storage" or "uniform"."""
    kinds: dict[int, str] = {}
    for m in _DECL.finditer(_COMMENTS.sub("", text)):
        attrs = {k: int(v) for k, v in _ATTR.findall(m.group(1))}
        if "binding" not in attrs:
            continue
        if attrs.get("group", 0) != 0:
            raise KernelCompileError(f"kernel {name!r}: only bind group 0 is supported, found "
                                     f"@group({attrs['group']})")
        space, access = m.group(2), m.group(3)
        kinds[attrs["binding"]] = ("uniform" if space == "uniform" else
                                   "storage" if access == "read_write" else "read-only-storage")
    if sorted(kinds) != list(range(len(kinds))):
        raise KernelCompileError(f"kernel {name!r}: bindings must be numbered 0..n-1, found "
                                 f"{sorted(kinds)}")
    return tuple(kinds[i] for i in range(len(kinds)))


@dataclass(eq=False)
class Pipeline:
    """A compiled kernel: its pipeline, bind-group layout and the kind of each binding."""

    name: str
    id: KernelId
    pipeline: Any
    bind_layout: Any
    kinds: tuple[str, ...]
    dynamic: tuple[bool, ...]      # bound with a dynamic offset (read-only bindings)


@dataclass(frozen=True)
class Limits(CubeLimits):
    """The device limits lazyt uses (bytes, counts)."""

    max_buffer_size: int
    max_storage_binding_size: int
    max_workgroup_storage: int
    max_invocations: int
    storage_offset_alignment: int
    uniform_offset_alignment: int
    max_uniform_binding_size: int
    max_dynamic_storage: int
    max_dynamic_uniform: int

    @classmethod
    def of(cls, limits) -> Limits:
        return cls(
            max_buffer_size=int(limits["max-buffer-size"]),
            max_storage_binding_size=int(limits["max-storage-buffer-binding-size"]),
            max_storage_buffers=int(limits["max-storage-buffers-per-shader-stage"]),
            max_workgroups_per_dim=int(limits["max-compute-workgroups-per-dimension"]),
            max_workgroup_storage=int(limits["max-compute-workgroup-storage-size"]),
            max_invocations=int(limits["max-compute-invocations-per-workgroup"]),
            storage_offset_alignment=int(limits["min-storage-buffer-offset-alignment"]),
            uniform_offset_alignment=int(limits["min-uniform-buffer-offset-alignment"]),
            max_uniform_binding_size=int(limits["max-uniform-buffer-binding-size"]),
            max_dynamic_storage=int(limits["max-dynamic-storage-buffers-per-pipeline-layout"]),
            max_dynamic_uniform=int(limits["max-dynamic-uniform-buffers-per-pipeline-layout"]),
        )


class WgpuClient(cube.ComputeClient):
    """The Cube `ComputeClient` on one wgpu device; kernels are WGSL, compiled to `Pipeline`s."""

    lang = "wgsl"
    runtime = "wgpu"
    renderer = WGSL
    compiled_type = Pipeline

    def __init__(self, device, name: str, description: str = ""):
        import wgpu
        super().__init__(name, description)
        self._wgpu = wgpu
        self.device = device
        self.limits = Limits.of(device.limits)
        self.features = frozenset(device.features)
        self.has_f16 = "shader-f16" in self.features
        usage = wgpu.BufferUsage
        self._storage_usage = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        # The largest buffer a kernel can bind whole.
        self.max_binding = min(self.limits.max_storage_binding_size,
                               self.limits.max_buffer_size) // 4 * 4
        self.pool = BufferPool(self._create_buffer, self.max_binding, self._forget)
        self._layouts: dict[tuple, Any] = {}
        self._groups: dict[tuple, tuple] = {}
        self._groups_of: dict[int, set] = {}     # id(buffer) -> keys of cached bind groups
        self._encoder = None
        self._pass = None
        self._pending = 0
        self._pending_bytes = 0
        self.submits = 0
        self.launches = 0
        # the per-batch arena of small host data
        self._align = max(self.limits.storage_offset_alignment,
                          self.limits.uniform_offset_alignment, 16)
        self._arena_data = bytearray()
        self._arena_cap = 1 << 16
        self._arena = self._new_arena(self._arena_cap)
        # index range checks: (flag, value) u32 pairs, one pair per checking launch
        self._errors = device.create_buffer(size=ERROR_SLOTS * 8, usage=self._storage_usage)
        self._staging = None
        self._timer: DeviceTimer | None = None
        self._graph: _GraphCapture | None = None   # a dispatch list being recorded

    # ------------------------------------------------------------------ buffers
    def _create_buffer(self, size: int):
        return self.device.create_buffer(size=size, usage=self._storage_usage)

    def _new_arena(self, cap: int):
        u = self._wgpu.BufferUsage
        return self.device.create_buffer(size=cap, usage=u.STORAGE | u.UNIFORM | u.COPY_DST)

    def check_size(self, nbytes: int, what: str = "a buffer") -> None:
        """`DeviceError` when `nbytes` exceeds what one kernel binding may hold."""
        if nbytes > self.max_binding:
            raise DeviceError(
                f"{self.name}: {what} needs {nbytes} bytes, but this adapter "
                f"({self.description}) binds at most {self.max_binding} bytes per storage buffer "
                f"(max_storage_buffer_binding_size {self.limits.max_storage_binding_size}, "
                f"max_buffer_size {self.limits.max_buffer_size})")

    @locked
    def empty(self, nbytes: int) -> Handle:
        """An uninitialized buffer of at least `nbytes` (from the pool when one fits)."""
        nbytes = int(nbytes)
        self.check_size(nbytes)
        handle = self.pool.acquire(nbytes)
        self._taped_alloc(handle)
        if self._graph is not None:     # the graph writes it on every launch: keep it
            self._graph.keep.append(handle)
        return handle

    @locked
    def create_from_slice(self, data) -> Handle:
        """A buffer holding `data` (bytes or a contiguous numpy array)."""
        self._untaped()
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1)
        view = memoryview(data).cast("B")
        nbytes = view.nbytes
        self.check_size(nbytes)
        if self._encoder is None:
            self.pool.settle()        # nothing recorded: every freed buffer is idle
        handle = self.pool.acquire(nbytes, for_upload=True)
        if nbytes:
            if nbytes % 4:
                view = memoryview(bytes(view) + b"\0" * (4 - nbytes % 4))
            self.device.queue.write_buffer(handle.buffer, 0, view)
        return handle

    @locked
    def read(self, handle, nbytes: int | None = None, offset: int = 0) -> bytes:
        """The bytes of `handle` (after everything recorded so far has run)."""
        self._untaped()
        if hasattr(handle, "handle") and hasattr(handle, "shape"):   # a CubeTensor
            handle = handle.handle
        buffer = handle.buffer if isinstance(handle, Handle) else handle
        if nbytes is None:
            nbytes = handle.nbytes if isinstance(handle, Handle) else buffer.size - offset
        if offset % 4:
            raise LazytError(f"read: offset {offset} is not a multiple of 4 bytes")
        size = -(-nbytes // 4) * 4
        n_err = len(self._error_msgs)
        err_at = -(-size // 256) * 256
        total = err_at + n_err * 8 if n_err else size
        if total == 0:
            return b""
        staging = self._staging_buffer(total)
        enc = self._command_encoder()
        self._end_pass()
        if size:
            enc.copy_buffer_to_buffer(buffer, offset, staging, 0, size)
        if n_err:
            enc.copy_buffer_to_buffer(self._errors, 0, staging, err_at, n_err * 8)
        self.flush()
        staging.map_sync(self._wgpu.MapMode.READ, 0, total)
        try:
            data = bytes(staging.read_mapped(0, total))
        finally:
            staging.unmap()
        if n_err:
            self._raise_errors(np.frombuffer(data, np.uint32, n_err * 2, err_at))
        return data[:nbytes]

    def _staging_buffer(self, size: int):
        if self._staging is None or self._staging.size < size:
            u = self._wgpu.BufferUsage
            cap = max(size, 1 << 16)
            self._staging = self.device.create_buffer(size=-(-cap // 4) * 4,
                                                      usage=u.MAP_READ | u.COPY_DST)
        return self._staging

    # ------------------------------------------------------------------ index range checks
    @property
    def errors_binding(self):
        return self._errors

    def _reset_errors(self, n: int) -> None:
        self.device.queue.write_buffer(self._errors, 0, np.zeros(n * 2, np.uint32))

    # ------------------------------------------------------------------ kernels
    def _build(self, name: str, kid: KernelId, text: str, entry: str) -> Pipeline:
        wgpu = self._wgpu
        try:
            module = self.device.create_shader_module(label=name, code=text)
        except wgpu.GPUError as e:
            raise KernelCompileError(f"kernel {name!r} failed to compile on the wgpu runtime "
                                     f"{self.name} (WGSL):\n{_message(e)}") from None
        kinds = parse_bindings(name, text)
        # Read-only bindings take dynamic offsets (up to the device's limits), so one bind group
        # serves every arena offset of the same buffers: bind groups are cached, not rebuilt.
        budget = {"read-only-storage": self.limits.max_dynamic_storage,
                  "uniform": self.limits.max_dynamic_uniform, "storage": 0}
        dynamic = []
        for kind in kinds:
            dynamic.append(budget[kind] > 0)
            budget[kind] -= 1
        dynamic = tuple(dynamic)
        layout = self._layouts.get((kinds, dynamic))
        if layout is None:
            entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": kind, "has_dynamic_offset": dyn}}
                       for i, (kind, dyn) in enumerate(zip(kinds, dynamic))]
            bgl = self.device.create_bind_group_layout(entries=entries)
            layout = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
            self._layouts[(kinds, dynamic)] = layout
        try:
            pipeline = self.device.create_compute_pipeline(
                label=name, layout=layout[1], compute={"module": module, "entry_point": entry})
        except wgpu.GPUError as e:
            raise KernelCompileError(f"kernel {name!r} (entry point {entry!r}) failed to build a "
                                     f"compute pipeline on {self.name}:\n{_message(e)}") from None
        return Pipeline(name, kid, pipeline, layout[0], kinds, dynamic)

    @locked
    def launch(self, kernel: KernelSource | Pipeline, cube_count: CubeCount,
               bindings: Sequence[Any]) -> None:
        """Record one dispatch of `kernel` over `cube_count` workgroups. Each binding is a
        CubeTensor, a `Handle`, or host data (numpy array / bytes, e.g. `build_info`'s output),
        which is copied into this batch's arena."""
        p = self.compile(kernel)
        if not isinstance(cube_count, CubeCount):
            raise ShapeError(f"launch of {p.name!r}: cube_count must be a CubeCount, got "
                             f"{cube_count!r}")
        top = self.limits.max_workgroups_per_dim
        if max(cube_count.x, cube_count.y, cube_count.z) > top:
            raise ShapeError(f"launch of {p.name!r}: {cube_count} workgroups exceed this "
                             f"adapter's {top} per dimension; lay them out with "
                             f"CubeCount.split(count, {top})")
        if len(bindings) != len(p.kinds):
            raise LazytError(f"launch of {p.name!r}: the kernel declares {len(p.kinds)} "
                             f"bindings ({', '.join(p.kinds)}), got {len(bindings)}")
        self._taped_launch(p, cube_count, bindings)
        if cube_count.total == 0:
            return
        if self._graph is not None:
            self._graph_launch(p, cube_count, bindings)
            return
        key = [id(p.bind_layout)]
        buffers = []
        offsets = []
        nbytes = 0
        for i, (b, kind, dyn) in enumerate(zip(bindings, p.kinds, p.dynamic)):
            buffer, offset, size = self._resource(p.name, i, b, kind)
            buffers.append(buffer)
            nbytes += size
            if dyn:
                offsets.append(offset)
                key.append((id(buffer), size))
            else:
                key.append((id(buffer), size, offset))
        key = tuple(key)
        cached = self._groups.get(key)
        if cached is None:
            entries = [{"binding": i, "resource": {"buffer": buf, "offset": 0 if dyn else k[2],
                                                   "size": k[1]}}
                       for i, (buf, dyn, k) in enumerate(zip(buffers, p.dynamic, key[1:]))]
            group = self.device.create_bind_group(layout=p.bind_layout, entries=entries)
            if len(self._groups) >= MAX_BIND_GROUPS:
                self._drop_group(next(iter(self._groups)))
            # the entry keeps the buffers alive, so their ids stay theirs while it is cached
            self._groups[key] = (group, buffers, p.bind_layout)
            for buf in buffers:
                self._groups_of.setdefault(id(buf), set()).add(key)
        else:
            group = cached[0]
            self._groups[key] = self._groups.pop(key)     # most recently used last
        try:
            cpass = self._compute_pass()
            cpass.set_pipeline(p.pipeline)
            cpass.set_bind_group(0, group, offsets)
            cpass.dispatch_workgroups(cube_count.x, cube_count.y, cube_count.z)
        except Exception:
            self._abandon()
            raise
        self._pending += 1
        self._pending_bytes += nbytes
        self.launches += 1
        if self._pending >= MAX_BATCH or self._pending_bytes >= MAX_BATCH_BYTES:
            self.flush()

    # ------------------------------------------------------------------ dispatch graphs
    @locked
    def begin_graph(self) -> None:
        """Start recording a graph: launches until `end_graph` are kept as a dispatch list
        (pipeline, a bind group made now, workgroup counts) instead of being encoded; host
        data goes to an arena the graph owns, and buffers allocated meanwhile are kept for the
        graph's life (it writes them on every launch)."""
        if self._graph is not None:
            raise GraphCaptureError(f"{self.name}: a graph is already being recorded")
        self._untaped()
        u = self._wgpu.BufferUsage
        arena = self.device.create_buffer(size=GRAPH_ARENA_BYTES,
                                          usage=u.STORAGE | u.UNIFORM | u.COPY_DST)
        self._graph = _GraphCapture(arena)

    @locked
    def end_graph(self) -> "WgpuGraph":
        g = self._graph
        if g is None:
            raise GraphCaptureError(f"{self.name}: no graph is being recorded")
        self._graph = None
        if g.data:
            self.device.queue.write_buffer(g.arena, 0, bytes(g.data))
        return WgpuGraph(self, g)

    @locked
    def abort_graph(self) -> None:
        self._graph = None

    @locked
    def copy_buffer(self, dst: Handle, src: Handle, nbytes: int) -> None:
        """Queue a copy of the first `nbytes` of `src` into `dst` (rounded up to 4 bytes)."""
        n = min(-(-int(nbytes) // 4) * 4, src.buffer.size, dst.buffer.size)
        if not n:
            return
        if self._graph is not None:
            self._graph.ops.append((None, src.buffer, dst.buffer, n))
            return
        self._end_pass()
        self._command_encoder().copy_buffer_to_buffer(src.buffer, 0, dst.buffer, 0, n)
        self._pending += 1

    def _graph_launch(self, p: Pipeline, cube_count: CubeCount, bindings) -> None:
        g = self._graph
        entries, offsets = [], []
        for i, (b, kind, dyn) in enumerate(zip(bindings, p.kinds, p.dynamic)):
            if isinstance(b, (np.ndarray, bytes, bytearray, memoryview)):
                if kind == "storage":
                    raise LazytError(f"launch of {p.name!r}: binding {i} is read_write storage; "
                                     "host data can only be bound read-only")
                raw = np.ascontiguousarray(b).tobytes() if isinstance(b, np.ndarray) \
                    else bytes(b)
                size = max(-(-len(raw) // 16) * 16, 16)
                at = -(-len(g.data) // self._align) * self._align
                if at + size > GRAPH_ARENA_BYTES:
                    raise GraphCaptureError(f"launch of {p.name!r}: the graph's "
                                            f"{GRAPH_ARENA_BYTES}-byte host-data arena is full")
                g.data.extend(b"\0" * (at - len(g.data)))
                g.data.extend(raw + b"\0" * (size - len(raw)))
                buffer, offset = g.arena, at
            else:
                buffer, offset, size = self._resource(p.name, i, b, kind)
            if dyn:
                offsets.append(offset)
                offset = 0
            entries.append({"binding": i, "resource": {"buffer": buffer, "offset": offset,
                                                       "size": size}})
        group = self.device.create_bind_group(layout=p.bind_layout, entries=entries)
        g.ops.append((p.pipeline, group, offsets, (cube_count.x, cube_count.y, cube_count.z)))

    def _drop_group(self, key: tuple) -> None:
        entry = self._groups.pop(key, None)
        if entry is not None:
            for buf in entry[1]:
                keys = self._groups_of.get(id(buf))
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._groups_of[id(buf)]

    def _forget(self, buffer) -> None:
        """Drop the cached bind groups of a buffer the pool let go of, so it can be freed."""
        for key in list(self._groups_of.get(id(buffer), ())):
            self._drop_group(key)

    def _resource(self, name: str, i: int, b, kind: str):
        if isinstance(b, Handle):
            return b.buffer, 0, b.buffer.size
        handle = getattr(b, "handle", None)
        if isinstance(handle, Handle):               # a CubeTensor
            return handle.buffer, 0, handle.buffer.size
        if isinstance(b, (np.ndarray, bytes, bytearray, memoryview)):
            if kind == "storage":
                raise LazytError(f"launch of {name!r}: binding {i} is read_write storage; host "
                                 "data can only be bound read-only (pass a buffer handle)")
            return self._arena_entry(b, kind)
        if isinstance(b, self._wgpu.GPUBuffer):
            return b, 0, b.size
        raise LazytError(f"launch of {name!r}: binding {i} is a {type(b).__name__}; expected a "
                         "CubeTensor, a buffer handle, or a numpy array / bytes")

    def _arena_entry(self, data, kind: str):
        raw = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) \
            else bytes(data)
        size = max(-(-len(raw) // 16) * 16, 16)
        if kind == "uniform" and size > self.limits.max_uniform_binding_size:
            raise DeviceError(f"{self.name}: {size} bytes of uniform data exceed the adapter's "
                              f"{self.limits.max_uniform_binding_size}")
        at = -(-len(self._arena_data) // self._align) * self._align
        if at + size > self._arena_cap:
            if self._pending:
                self.flush()
                at = 0
            if size > self._arena_cap:
                self._arena_cap = max(size, self._arena_cap * 2)
                self._arena = self._new_arena(self._arena_cap)
        if at > len(self._arena_data):
            self._arena_data.extend(b"\0" * (at - len(self._arena_data)))
        self._arena_data.extend(raw)
        self._arena_data.extend(b"\0" * (size - len(raw)))
        return self._arena, at, size

    # ------------------------------------------------------------------ batching
    def _command_encoder(self):
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _compute_pass(self):
        if self._pass is None:
            timer = self._timer
            writes = timer.next_pass() if timer is not None else None
            self._pass = self._command_encoder().begin_compute_pass(timestamp_writes=writes)
        return self._pass

    def device_timer(self) -> DeviceTimer:
        """`with client.device_timer() as t: ...` measures, with GPU timestamps, the time the
        device spent in the compute passes recorded inside the block (`t.seconds`); needs the
        adapter's `timestamp-query` feature."""
        if "timestamp-query" not in self.features:
            raise DeviceError(f"{self.name}: the adapter has no timestamp-query feature")
        return DeviceTimer(self)

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def _abandon(self) -> None:
        """Drop a batch whose encoding failed (wgpu invalidates the encoder), so the client
        stays usable; the error that caused it is re-raised by the caller."""
        self._pass = None
        self._encoder = None
        self._arena_data = bytearray()
        self._pending = 0
        self._pending_bytes = 0

    @locked
    def flush(self) -> None:
        """Submit everything recorded (without waiting for it)."""
        if self._encoder is None:
            return
        try:
            self._end_pass()
            if self._arena_data:
                self.device.queue.write_buffer(self._arena, 0, self._arena_data)
                self._arena_data = bytearray()
            self.device.queue.submit([self._encoder.finish()])
        except Exception:
            self._abandon()
            raise
        self._encoder = None
        self._pending = 0
        self._pending_bytes = 0
        self.submits += 1
        self.pool.settle()

    @locked
    def sync(self) -> None:
        """Submit, wait until the device has run everything, and raise pending index range
        errors. (Waiting = mapping a copy made after all submitted work: one queue runs its
        submissions in order.)"""
        self.read(self._errors, max(len(self._error_msgs), 1) * 8)


class GraphCaptureError(LazytError, RuntimeError):
    """A dispatch graph could not be recorded (the caller runs without one)."""


#: Bytes of host data (info words, scalars) one recorded graph may hold.
GRAPH_ARENA_BYTES = 1 << 20


class _GraphCapture:
    def __init__(self, arena):
        self.arena = arena
        self.data = bytearray()
        self.ops: list = []    # (pipeline, group, offsets, counts) or (None, src, dst, nbytes)
        self.keep: list = []


def _native():
    """wgpu-py's own cffi library and ffi, or None where this wgpu version lays them out
    otherwise (then a replay encodes through the public methods)."""
    try:
        from wgpu.backends.wgpu_native._ffi import ffi, lib
        lib.wgpuComputePassEncoderSetPipeline  # noqa: B018 - the three calls a replay makes
        lib.wgpuComputePassEncoderSetBindGroup  # noqa: B018
        lib.wgpuComputePassEncoderDispatchWorkgroups  # noqa: B018
    except (ImportError, AttributeError):  # pragma: no cover - other wgpu layouts
        return None
    return ffi, lib


_NATIVE = _native()


class WgpuGraph:
    """A recorded dispatch list: `launch()` encodes it into the client's current command
    encoder (pipelines and bind groups were made when it was recorded).

    Every call through wgpu-py's public methods sets up and checks an error scope (about
    4 us a call, three calls a dispatch: MiniLM's 86 dispatches took 1.2 ms of host time on
    an H100 host). The dispatches of a replay already ran once, when they were recorded, so
    a replay calls wgpu-native's functions directly with the offsets packed once; errors
    still surface where wgpu reports them, when the pass ends and the encoder finishes."""

    def __init__(self, client: WgpuClient, capture: _GraphCapture):
        self.client = client
        self._capture = capture
        self.ops = capture.ops
        self._raw = None
        if _NATIVE is not None:
            ffi = _NATIVE[0]
            try:
                self._raw = [None if p is None else
                             (p._internal, g._internal, len(offs),
                              ffi.new("uint32_t[]", list(offs)), d)
                             for p, g, offs, d in self.ops]
            except AttributeError:  # pragma: no cover - objects without a native handle
                self._raw = None

    def launch(self) -> None:
        c = self.client
        with c._lock:
            # a long graph goes to the device in parts: it starts on the first while the
            # host encodes the next
            n = len(self.ops)
            splits = {s for s in GRAPH_SPLITS if 0 < s < n} \
                if GRAPH_SPLITS and n >= 2 * min(GRAPH_SPLITS) else ()
            done = 0
            try:
                if self._raw is not None:
                    done = self._encode_native(splits)
                else:
                    done = self._encode(splits)
            except Exception:
                c._abandon()
                raise
            c._pending += len(self.ops) - done
            c.launches += len(self.ops)
            if c._pending >= MAX_BATCH:
                c.flush()

    def _encode(self, splits) -> int:
        c = self.client
        done = 0
        cpass = None
        for i, (pipeline, a, b, d) in enumerate(self.ops):
            if i in splits:
                c._pending += i - done
                c.flush()
                cpass = None
                done = i
            if pipeline is None:                 # a buffer copy
                c._end_pass()
                cpass = None
                c._command_encoder().copy_buffer_to_buffer(a, 0, b, 0, d)
                continue
            if cpass is None:
                cpass = c._compute_pass()
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, a, b)
            cpass.dispatch_workgroups(*d)
        return done

    def _encode_native(self, splits) -> int:
        c = self.client
        lib = _NATIVE[1]
        set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        set_group = lib.wgpuComputePassEncoderSetBindGroup
        dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        done = 0
        cpass = last = None
        for i, raw in enumerate(self._raw):
            if i in splits:
                c._pending += i - done
                c.flush()
                cpass = None
                done = i
            if raw is None:                      # a buffer copy
                _, a, b, d = self.ops[i]
                c._end_pass()
                cpass = None
                c._command_encoder().copy_buffer_to_buffer(a, 0, b, 0, d)
                continue
            if cpass is None:
                cpass = c._compute_pass()._internal
                last = None
            pipeline, group, n, offsets, d = raw
            if pipeline != last:
                set_pipeline(cpass, pipeline)
                last = pipeline
            set_group(cpass, 0, group, n, offsets)
            dispatch(cpass, *d)
        return done


class DeviceTimer:
    """GPU timestamps around every compute pass recorded while it is open (see
    `WgpuClient.device_timer`)."""

    CAPACITY = 4096

    def __init__(self, client: WgpuClient):
        self.client = client
        self.seconds = 0.0
        self.passes = 0
        self._queries = None

    def __enter__(self) -> DeviceTimer:
        c = self.client
        c.flush()
        self._queries = c.device.create_query_set(type="timestamp", count=self.CAPACITY)
        c._timer = self
        return self

    def next_pass(self):
        if 2 * self.passes + 2 > self.CAPACITY:
            return None
        writes = {"query_set": self._queries,
                  "beginning_of_pass_write_index": 2 * self.passes,
                  "end_of_pass_write_index": 2 * self.passes + 1}
        self.passes += 1
        return writes

    def __exit__(self, *exc) -> None:
        c = self.client
        c._end_pass()
        c._timer = None
        if exc[0] is not None or not self.passes:
            return
        u = c._wgpu.BufferUsage
        n = 2 * self.passes
        resolved = c.device.create_buffer(size=n * 8, usage=u.QUERY_RESOLVE | u.COPY_SRC)
        c._command_encoder().resolve_query_set(self._queries, 0, n, resolved, 0)
        stamps = np.frombuffer(c.read(resolved, n * 8), np.uint64).astype(np.int64)
        self.seconds = float(np.sum(stamps[1::2] - stamps[0::2])) * 1e-9


def _message(e: Exception) -> str:
    return str(getattr(e, "message", "") or e).strip()
