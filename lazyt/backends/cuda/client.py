"""CudaClient: the CUDA implementation of the Cube `ComputeClient` on one device, through pycuda.

- **Context and stream.** The device's primary context (shared with torch and CuPy in one
  process), made current on each thread that uses the client; every copy, kernel and cuBLAS call
  goes to one stream, so stream order is the only synchronization needed between them.
- **Memory.** A pycuda `DeviceMemoryPool`: a freed buffer returns to the pool and is handed out
  again; stream order makes reuse safe (a kernel that read it was queued before the one that
  writes it). The pool is emptied before the context goes away (at exit).
- **Kernels.** CUDA C++ compiled by NVRTC to a cubin for the device's architecture
  (`compiler.py`, with its disk cache), loaded with `module_from_buffer`; the compiled kernel
  is cached per client by `KernelId`. Every kernel parameter is a buffer pointer, in binding
  order, and the block size is the source's `cube_dim`.
- **Host data** (info words, scalars) of a launch is copied into a page-locked ring and from
  there, with one asynchronous copy per launch, into a device ring; the kernel reads it there.
  When the ring wraps, the stream is synchronized first, so a slot is never overwritten before
  the kernel that reads it has run.
"""
from __future__ import annotations

import atexit
import re
import struct
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...errors import DeviceError, KernelCompileError, LazytError, ShapeError
from ..cube import client as cube
from ..cube.client import ERROR_SLOTS, CubeLimits, locked
from ..cube.source import CubeCount, KernelId, KernelSource
from .compiler import compile_cubin
from .renderer import CUDA
from .runtime import PrimaryContext, driver, get_device

#: Bytes of the host-data ring (page-locked host memory and device memory).
RING_BYTES = 4 << 20
#: Host data of at most this many bytes (a launch's info words: shapes, strides, scalars) is
#: uploaded once and kept on the device by content, in an arena of CONST_ARENA_BYTES: a launch
#: repeated with the same info (every step of a loop) then copies nothing (a host-to-device
#: copy costs about 3.4 µs of host time per launch).
CONST_MAX_BYTES = 1024
CONST_ARENA_BYTES = 1 << 20
#: Alignment of each launch's host data in the ring.
_ALIGN = 16


def _slot(nbytes: int) -> int:
    """Bytes a piece of host data takes in the ring or the constant arena (aligned)."""
    return -(-max(nbytes, 1) // _ALIGN) * _ALIGN


#: CUDA's grid limits per dimension (x, y, z).
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class Handle:
    """A device buffer: the pool's allocation (`buffer`), its size and device address."""

    __slots__ = ("buffer", "nbytes", "ptr", "__weakref__")

    def __init__(self, buffer, nbytes: int):
        self.buffer = buffer
        self.nbytes = nbytes
        self.ptr = int(buffer)

    def __repr__(self) -> str:
        return f"Handle({self.nbytes} bytes at {self.ptr:#x})"


@dataclass(eq=False)
class CudaKernel:
    """A compiled kernel: the function, its block size and its number of buffer parameters."""

    name: str
    id: KernelId
    module: Any
    function: Any
    block: tuple[int, int, int]
    n_params: int


@dataclass(frozen=True)
class Limits(CubeLimits):
    """The device limits lazyt uses."""

    total_memory: int
    max_threads_per_block: int
    max_shared_per_block: int


def kernel_params(name: str, text: str, entry: str) -> list[str]:
    """The parameter declarations of the `extern "C" __global__` function `entry` in `text`;
    `KernelCompileError` when it is not there."""
    code = _COMMENTS.sub("", text)
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?" + re.escape(entry)
                  + r"\s*\(", code)
    if m is None:
        raise KernelCompileError(f"kernel {name!r}: no `extern \"C\" __global__ void {entry}(...)` "
                                 f"in its CUDA source (the entry point the runtime launches)")
    depth, start, params = 1, m.end(), []
    i = start
    while i < len(code) and depth:
        c = code[i]
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        if (c == "," and depth == 1) or depth == 0:
            params.append(code[start:i].strip())
            start = i + 1
        i += 1
    return [p for p in params if p and p != "void"]


class CudaClient(cube.ComputeClient):
    """The Cube `ComputeClient` on one CUDA device."""

    lang = "cuda"
    runtime = "cuda"
    renderer = CUDA
    compiled_type = CudaKernel
    has_f16 = True

    def __init__(self, index: int):
        drv = driver()
        self._drv = drv
        dev = get_device(index)
        major, minor = dev.compute_capability()
        self.arch = f"sm_{major}{minor}"
        name = dev.name()
        super().__init__(f"cuda:{index}", f"{name}, {self.arch}")
        self.device_index = index
        self.context = PrimaryContext(dev)
        self.context.activate()
        attr = drv.device_attribute
        self.limits = Limits(
            max_workgroups_per_dim=GRID_LIMITS[1],
            max_storage_buffers=1 << 16,
            total_memory=int(dev.total_memory()),
            max_threads_per_block=int(dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)),
            max_shared_per_block=int(dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK)))
        self.stream = drv.Stream()
        from pycuda.tools import DeviceMemoryPool
        self.pool = DeviceMemoryPool()
        self._errors = self._raw_alloc(ERROR_SLOTS * 8)
        drv.memset_d32(int(self._errors), 0, ERROR_SLOTS * 2)
        self._ring_host = drv.pagelocked_empty(RING_BYTES, np.uint8)
        self._ring_dev = self._raw_alloc(RING_BYTES)
        self._ring_at = 0
        self._const_host = drv.pagelocked_empty(CONST_ARENA_BYTES, np.uint8)
        self._const_dev = self._raw_alloc(CONST_ARENA_BYTES)
        self._const_base = int(self._const_dev)
        self._const_at = 0
        self._consts: dict = {}       # bytes -> device address of that content in the arena
        self._blas = None
        self._blas_error: Exception | None = None
        # every buffer handed out and still referenced: freed at close, inside the context
        self._live: weakref.WeakSet = weakref.WeakSet()
        self._graph: _GraphCapture | None = None   # a CUDA graph being captured
        self.launches = 0
        self.closed = False
        atexit.register(_close_at_exit, weakref.ref(self))

    # ------------------------------------------------------------------ buffers
    def _raw_alloc(self, nbytes: int):
        try:
            return self.pool.allocate(max(int(nbytes), 1))
        except self._drv.MemoryError:
            self.pool.free_held()
            try:
                return self.pool.allocate(max(int(nbytes), 1))
            except self._drv.MemoryError:
                raise DeviceError(f"{self.name}: out of device memory allocating {nbytes} bytes "
                                  f"({self.description}, {self.limits.total_memory} bytes "
                                  "in all)") from None

    def check_size(self, nbytes: int, what: str = "a buffer") -> None:
        if nbytes > self.limits.total_memory:
            raise DeviceError(f"{self.name}: {what} needs {nbytes} bytes, but the device "
                              f"({self.description}) has {self.limits.total_memory}")

    @locked
    def empty(self, nbytes: int) -> Handle:
        """An uninitialized buffer of at least `nbytes` (from the pool when one fits)."""
        self.context.activate()
        nbytes = int(nbytes)
        self.check_size(nbytes)
        g = self._graph
        handle = g.reused(nbytes) if g is not None and g.reuse is not None else None
        if handle is None:
            handle = Handle(self._raw_alloc(nbytes), nbytes)
            self._live.add(handle)
        self._taped_alloc(handle)
        if g is not None:               # the graph writes it on every launch: keep it
            g.keep.append(handle)
        return handle

    #: A graph can be captured again over another's buffers (`begin_graph(reuse=...)`) and
    #: its results handed out through `alias` handles, so `lazyt.compile` returns them
    #: without a copy.
    graph_handout = True

    def alias(self, handle: Handle) -> Handle:
        """A new handle on `handle`'s memory (it keeps the memory alive as `handle` does):
        whoever holds a tensor on it holds this handle, so a weak reference to it says when
        nobody does."""
        h = Handle(handle.buffer, handle.nbytes)
        self._live.add(h)
        return h

    @locked
    def create_from_slice(self, data) -> Handle:
        """A buffer holding `data` (bytes or a contiguous numpy array), copied in stream
        order."""
        self._untaped()
        self.context.activate()
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1)
        view = memoryview(data).cast("B")
        nbytes = view.nbytes
        self.check_size(nbytes)
        handle = Handle(self._raw_alloc(nbytes), nbytes)
        self._live.add(handle)
        if nbytes:
            self._drv.memcpy_htod_async(handle.ptr, view, self.stream)
        return handle

    def read(self, handle, nbytes: int | None = None, offset: int = 0) -> bytes:
        """The bytes of `handle` (a Handle or CubeTensor) after everything queued so far."""
        return self.read_array(handle, nbytes, offset).tobytes()

    @locked
    def read_array(self, handle, nbytes: int | None = None, offset: int = 0) -> np.ndarray:
        """`read` into a new writable uint8 array (no copy to bytes: `to_numpy` views it)."""
        self._untaped()
        self.context.activate()
        if hasattr(handle, "handle") and hasattr(handle, "shape"):
            handle = handle.handle
        if not isinstance(handle, Handle):
            raise LazytError(f"read: expected a cuda buffer handle, got {type(handle).__name__}")
        if nbytes is None:
            nbytes = handle.nbytes - offset
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            self._drv.memcpy_dtoh_async(out, handle.ptr + offset, self.stream)
        self._check_errors()
        return out

    # ------------------------------------------------------------------ index range checks
    @property
    def errors_binding(self) -> Handle:
        return Handle(self._errors, ERROR_SLOTS * 8)

    def _reset_errors(self, n: int) -> None:
        self._drv.memset_d32_async(int(self._errors), 0, n * 2, self.stream)

    def _check_errors(self) -> None:
        """Wait for the stream; raise the failed range checks since the last read."""
        n = len(self._error_msgs)
        if not n:
            self.stream.synchronize()
            return
        words = np.empty(2 * n, np.uint32)
        self._drv.memcpy_dtoh_async(words, int(self._errors), self.stream)
        self.stream.synchronize()
        self._raise_errors(words)

    # ------------------------------------------------------------------ kernels
    def _build(self, name: str, kid: KernelId, text: str, entry: str) -> CudaKernel:
        self.context.activate()
        settings = dict(kid.settings)
        dims = settings.get("cube_dim")
        if dims is None:
            raise KernelCompileError(f"kernel {name!r}: a CUDA kernel needs its block size; give "
                                     f"its source a cube_dim (SourceKernel(source, CubeDim(...)))")
        block = tuple(int(d) for d in dims)
        threads = block[0] * block[1] * block[2]
        if threads > self.limits.max_threads_per_block:
            raise ShapeError(f"kernel {name!r}: a block of {block} = {threads} threads exceeds "
                             f"{self.name}'s {self.limits.max_threads_per_block}")
        params = kernel_params(name, text, entry)
        for p in params:
            if "*" not in p:
                raise KernelCompileError(
                    f"kernel {name!r}: parameter `{p}` of {entry} is not a pointer; Cube kernels "
                    f"take buffers only (pass scalars and shapes in an info buffer)")
        cubin = compile_cubin(name, text, self.arch)
        try:
            module = self._drv.module_from_buffer(cubin)
            function = module.get_function(entry)
        except self._drv.Error as e:
            raise KernelCompileError(f"kernel {name!r} (entry point {entry!r}) failed to load on "
                                     f"{self.name}: {e}") from None
        return CudaKernel(name, kid, module, function, block, len(params))

    @locked
    def launch(self, kernel: KernelSource | CudaKernel, cube_count: CubeCount,
               bindings: Sequence[Any]) -> None:
        """Queue one launch of `kernel` over `cube_count` blocks. Each binding is a
        CubeTensor, a `Handle`, or host data (numpy array / bytes), copied to the device for
        this launch."""
        self.context.activate()
        k = self.compile(kernel)
        if not isinstance(cube_count, CubeCount):
            raise ShapeError(f"launch of {k.name!r}: cube_count must be a CubeCount, got "
                             f"{cube_count!r}")
        grid = (cube_count.x, cube_count.y, cube_count.z)
        for axis, count, top in zip("xyz", grid, GRID_LIMITS):
            if count > top:
                raise ShapeError(f"launch of {k.name!r}: {count} blocks along {axis} exceed "
                                 f"CUDA's {top}; lay them out with CubeCount.split(count, "
                                 f"{GRID_LIMITS[1]})")
        if len(bindings) != k.n_params:
            raise LazytError(f"launch of {k.name!r}: the kernel takes {k.n_params} buffers, got "
                             f"{len(bindings)} bindings")
        self._taped_launch(k, cube_count, bindings)
        if cube_count.total == 0:
            return
        ptrs = []
        host = False
        for b in bindings:
            h = getattr(b, "handle", b)          # a CubeTensor's buffer, or the binding
            if type(h) is Handle:
                ptrs.append(h.ptr)
            else:
                ptrs.append(None)
                host = True
        if host:
            self._upload_host_data(k.name, bindings, ptrs)
        k.function._launch_kernel(grid, k.block, struct.pack(f"{len(ptrs)}Q", *ptrs), 0,
                                  self.stream)
        self.launches += 1

    def _upload_host_data(self, name: str, bindings: Sequence[Any], ptrs: list,
                          shared: bool = True) -> None:
        """Copy the launch's host-data bindings into the ring, fill in their device addresses.
        Small ones (info words) come from the constant arena instead, uploaded once per
        content (`shared`; outside a graph capture: a graph owns the data it reads). When the
        arena cannot hold this launch's new contents it starts over before any of the
        launch's addresses is taken, so no binding points at a slot another one overwrites."""
        if shared and self._graph is None:
            consts = self._consts
            keys = []
            rest = False
            for i, (b, p) in enumerate(zip(bindings, ptrs)):
                if p is not None:
                    continue
                key = b if type(b) is bytes else b.tobytes() if (
                    isinstance(b, np.ndarray) and b.nbytes <= CONST_MAX_BYTES) else None
                if key is None or len(key) > CONST_MAX_BYTES:   # large: through the ring
                    rest = True
                else:
                    keys.append((i, key))
            need = sum(_slot(len(key)) for _, key in keys if key not in consts)
            if need and self._const_at + need > CONST_ARENA_BYTES:
                self._const_reset()
            for i, key in keys:
                at = consts.get(key)
                ptrs[i] = self._const_put(key) if at is None else at
            if not rest:
                return
        chunks = []
        size = 0
        for i, (b, p) in enumerate(zip(bindings, ptrs)):
            if p is not None:
                continue
            if isinstance(b, np.ndarray):
                raw = np.ascontiguousarray(b).view(np.uint8).reshape(-1)
            elif isinstance(b, (bytes, bytearray, memoryview)):
                raw = np.frombuffer(b, np.uint8)
            else:
                raise LazytError(f"launch of {name!r}: binding {i} is a {type(b).__name__}; "
                                 "expected a CubeTensor, a buffer handle, or a numpy array / "
                                 "bytes")
            chunks.append((i, size, raw))
            size += _slot(raw.nbytes)
        if size > RING_BYTES:
            raise ShapeError(f"launch of {name!r}: {size} bytes of host data exceed the "
                             f"{RING_BYTES}-byte upload ring; pass large data as a buffer")
        g = self._graph
        if g is not None:   # a graph reads it on every launch: a slot of its own arena
            at = g.arena_at
            if at + size > GRAPH_ARENA_BYTES:
                raise GraphCaptureError(f"launch of {name!r}: the graph's {GRAPH_ARENA_BYTES}"
                                        "-byte host-data arena is full")
            for i, off, raw in chunks:
                g.arena_host[at + off:at + off + raw.nbytes] = raw
                ptrs[i] = int(g.arena_dev) + at + off
            g.arena_at = at + size
            return
        at = self._ring_at
        if at + size > RING_BYTES:
            self.stream.synchronize()          # every queued kernel has read its slot
            at = 0
        for i, off, raw in chunks:
            self._ring_host[at + off:at + off + raw.nbytes] = raw
            ptrs[i] = int(self._ring_dev) + at + off
        self._drv.memcpy_htod_async(int(self._ring_dev) + at, self._ring_host[at:at + size],
                                    self.stream)
        self._ring_at = at + size

    def _const_reset(self) -> None:
        """Empty the constant arena, after the queued kernels (which may read any slot)."""
        self.stream.synchronize()
        self._consts.clear()
        self._const_at = 0

    def _const_put(self, data: bytes) -> int:
        """Upload `data` to a new slot of the constant arena (the caller made room); its
        device address."""
        n = len(data)
        size = _slot(n)
        at = self._const_at
        if at + size > CONST_ARENA_BYTES:   # (one launch's data larger than the arena)
            raise ShapeError(f"{n} bytes of host data do not fit the {CONST_ARENA_BYTES}-byte "
                             "constant arena")
        if n:
            self._const_host[at:at + n] = np.frombuffer(data, np.uint8)
            self._drv.memcpy_htod_async(self._const_base + at, self._const_host[at:at + n],
                                        self.stream)
        ptr = self._const_base + at
        self._consts[data] = ptr
        self._const_at = at + size
        return ptr

    @locked
    def host_data(self, data: np.ndarray) -> int:
        """The device address of a copy of `data` (host data for a library call, such as
        cuBLAS's pointer arrays), queued in stream order: valid for work queued after it until
        the upload ring wraps (a graph being captured keeps it for its life). Never shared
        with another caller's data (the constant arena is for launches' info words)."""
        self.context.activate()
        ptrs = [None]
        self._upload_host_data("host data", [data], ptrs, shared=False)
        return ptrs[0]

    # ------------------------------------------------------------------ CUDA graphs
    @locked
    def begin_graph(self, reuse: Sequence[Handle] | None = None,
                    fresh: Sequence[int] = ()) -> None:
        """Start capturing this client's stream into a CUDA graph: launches, copies and cuBLAS
        calls from here to `end_graph` are recorded, not run. Their host data goes to an arena
        the graph owns, and every buffer allocated meanwhile is kept for the graph's life (it
        writes them on every launch).

        `reuse` (a graph's `kept` buffers) captures the same work again over that graph's
        buffers: the i-th allocation takes `reuse[i]`, except at the positions in `fresh`,
        which get new buffers (the results a caller is handed). The two graphs must then run
        one after the other, as launches on one stream do."""
        if self._graph is not None:
            raise GraphCaptureError(f"{self.name}: a CUDA graph is already being captured")
        self._untaped()
        self.context.activate()
        cu = _cu()
        g = _GraphCapture(self._raw_alloc(GRAPH_ARENA_BYTES),
                          np.zeros(GRAPH_ARENA_BYTES, np.uint8),
                          reuse=None if reuse is None else list(reuse),
                          fresh=frozenset(int(i) for i in fresh))
        _check(cu.cuStreamBeginCapture(cu.CUstream(self.stream.handle),
                                       cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
               "cuStreamBeginCapture")
        self._graph = g

    @locked
    def end_graph(self) -> "CudaGraph":
        """Finish the capture and instantiate the graph (the host data is uploaded once)."""
        g = self._graph
        if g is None:
            raise GraphCaptureError(f"{self.name}: no CUDA graph is being captured")
        self._graph = None
        cu = _cu()
        graph = _check(cu.cuStreamEndCapture(cu.CUstream(self.stream.handle)),
                       "cuStreamEndCapture")
        try:
            exe = _check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except BaseException:
            cu.cuGraphDestroy(graph)
            raise
        if g.arena_at:
            self._drv.memcpy_htod(int(g.arena_dev), g.arena_host[:g.arena_at])
        return CudaGraph(self, graph, exe, g)

    @locked
    def abort_graph(self) -> None:
        """End a capture that failed (what it captured is dropped)."""
        g = self._graph
        self._graph = None
        if g is not None:
            cu = _cu()
            err, graph = cu.cuStreamEndCapture(cu.CUstream(self.stream.handle))
            if int(err) == 0 and graph is not None:
                cu.cuGraphDestroy(graph)

    @property
    def capturing_graph(self) -> bool:
        return self._graph is not None

    @locked
    def copy_buffer(self, dst: Handle, src: Handle, nbytes: int) -> None:
        """Queue a device-to-device copy of the first `nbytes` of `src` into `dst`."""
        self.context.activate()
        if nbytes:
            self._drv.memcpy_dtod_async(dst.ptr, src.ptr, nbytes, self.stream)

    # ------------------------------------------------------------------ cuBLAS
    @property
    def blas(self):
        """The cuBLAS/cuBLASLt handles on this client's stream, or None when nvmath-python
        (cuBLAS) is not installed (`blas_error` says why)."""
        if self._blas is None and self._blas_error is None:
            from .blas import Blas, BlasUnavailable
            self.context.activate()
            try:
                self._blas = Blas(self.stream.handle, self._raw_alloc, self._time_queued)
            except BlasUnavailable as e:
                self._blas_error = e
        return self._blas

    @property
    def blas_error(self) -> Exception | None:
        return self._blas_error

    # ------------------------------------------------------------------ ordering
    def flush(self) -> None:
        """Launches are queued on the stream as they are made: nothing to submit."""

    @locked
    def sync(self) -> None:
        """Wait until the device has run everything queued; raise pending range errors."""
        self.context.activate()
        self._check_errors()

    def _time_queued(self, fn, warm=None) -> float | None:
        """The device seconds of the work `fn` queues (cuBLASLt's tuning), or None while a
        graph is being captured (events there would be captured, not timed). `warm()` is
        queued first, outside the timing: it keeps the device busy while the host queues
        `fn`'s work, so the host's launch latency is not counted."""
        if self._graph is not None:
            return None
        if warm is not None:
            warm()
        with self.device_timer() as t:
            fn()
        return t.seconds

    def device_timer(self) -> DeviceTimer:
        """`with client.device_timer() as t: ...`: the device time (CUDA events) of the work
        queued inside the block (`t.seconds`)."""
        return DeviceTimer(self)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Finish the queued work and release cuBLAS and the memory pool's held blocks (run at
        exit, before the context goes away)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.context.activate()
            self.stream.synchronize()
            if self._blas is not None:
                self._blas.close()
                self._blas = None
            self.pool.stop_holding()
            # tensors that outlive the process's last statement would free their memory after
            # the context is gone; free it now, while it is current
            # (alias handles share an allocation with another handle: free each once)
            for buffer in {id(h.buffer): h.buffer for h in list(self._live)}.values():
                buffer.free()
            for buffer in (self._ring_dev, self._const_dev, self._errors):
                buffer.free()
            self.pool.free_held()
        except Exception:  # the driver may already be shutting down
            pass
        # pycuda aborts the process if a context is still pushed when its module unloads
        self.context.release()


class GraphCaptureError(LazytError, RuntimeError):
    """A CUDA graph could not be captured or instantiated (the caller runs without one)."""


#: Bytes of host data (info words, scalars) one captured graph may hold.
GRAPH_ARENA_BYTES = 1 << 20


def _cu():
    from cuda.bindings import driver as cu
    return cu


def _check(result, what: str):
    """The value of a cuda.bindings call's (error, value) result; GraphCaptureError if it
    failed."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise GraphCaptureError(f"{what} failed: {err}")
    return rest[0] if rest else None


@dataclass(eq=False)
class _GraphCapture:
    arena_dev: Any
    arena_host: np.ndarray
    arena_at: int = 0
    keep: list = None
    reuse: list | None = None     # a re-capture: another graph's allocations, in order
    fresh: frozenset = frozenset()   # ... except these positions, allocated anew

    def __post_init__(self):
        self.keep = []

    def reused(self, nbytes: int) -> Handle | None:
        """The handle the re-captured graph's next allocation takes over (None: a new one)."""
        i = len(self.keep)
        if i in self.fresh:
            return None
        if i >= len(self.reuse) or self.reuse[i].nbytes != nbytes:
            raise GraphCaptureError(f"a graph captured again allocated {nbytes} bytes at its "
                                    f"allocation {i}, unlike the graph whose buffers it reuses")
        return self.reuse[i]


class CudaGraph:
    """An instantiated CUDA graph and the buffers it owns; `launch()` queues it on the
    client's stream."""

    def __init__(self, client: CudaClient, graph, exe, capture: _GraphCapture):
        self.client = client
        self._graph = graph
        self._exe = exe
        self._capture = capture
        cu = _cu()
        self._stream = cu.CUstream(client.stream.handle)
        self._launch = cu.cuGraphLaunch

    @property
    def kept(self) -> list:
        """The buffers the graph writes, in the order they were allocated while capturing."""
        return self._capture.keep

    def launch(self) -> None:
        self.client.context.activate()
        res = self._launch(self._exe, self._stream)
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise GraphCaptureError(f"cuGraphLaunch failed: {err}")
        self.client.launches += 1

    def __del__(self):
        try:
            if self.client.closed:
                return
            cu = _cu()
            cu.cuGraphExecDestroy(self._exe)
            cu.cuGraphDestroy(self._graph)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DeviceTimer:
    """CUDA events around the work queued while it is open (see `CudaClient.device_timer`)."""

    def __init__(self, client: CudaClient):
        self.client = client
        self.seconds = 0.0

    def __enter__(self) -> DeviceTimer:
        drv = self.client._drv
        self.client.context.activate()
        self._start, self._end = drv.Event(), drv.Event()
        self._start.record(self.client.stream)
        return self

    def __exit__(self, *exc) -> None:
        self._end.record(self.client.stream)
        self._end.synchronize()
        self.seconds = self._end.time_since(self._start) * 1e-3


def _close_at_exit(ref) -> None:
    client = ref()
    if client is not None:
        client.close()


__all__ = ["CudaClient", "CudaKernel", "Handle", "Limits", "kernel_params", "DeviceTimer",
           "RING_BYTES"]
