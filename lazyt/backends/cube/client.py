"""The `ComputeClient` of the Cube family: what `CubeBackend`, `CubeTensor` and kernel launch code
rely on in a runtime (wgpu, CUDA), and what every runtime's client shares, written once here:
the compiled-kernel cache, `LAZYT_DEBUG=2` printing of compiled sources, index range-check
slots and the hooks replay recording (`replay.py`) listens on.

The caches a Cube launch passes through, each with its key:

- **kernels** (`ComputeClient._kernels`, one per client): `KernelId` -> compiled kernel (wgpu: a
  `Pipeline`). The id hashes the completed source with its entry point and workgroup size, so
  an edited kernel never runs stale code. Every compile goes through `ComputeClient.compile`.
- **sources** (plain memos of pure functions, no compiled state): the renderer's
  `*_kernel(...)` methods, keyed by their arguments (op and dtypes; a fused block object and its
  form), `codegen.matmul_source` and the filled templates (`source.filled_kernel`) return
  `TextKernelSource`s whose id is computed once, so a kernel launched again is neither rendered
  nor hashed again.
- **bind-group layouts** (wgpu client `_layouts`): (binding kinds, dynamic-offset flags) ->
  layout; part of compiling a pipeline, shared by pipelines with the same binding signature.
- **bind groups** (wgpu client `_groups`): (layout, buffers, sizes, static offsets) -> bind
  group, least recently used dropped first; a different concern (which buffers a launch binds).
- **replay** (`CubeBackend._replays`): (op, argument layouts, settings) -> `Recording` of the
  op's allocations and launches (`replay.py`).
- **buffers** (wgpu `BufferPool`): freed device buffers by size class, for reuse.
"""
from __future__ import annotations

import abc
import functools
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...config import debug_level
from ...errors import IndexOutOfRangeError
from .renderer import Renderer
from .source import CubeCount, KernelId, KernelSource

#: Error slots (index range checks) recorded before the client checks them.
ERROR_SLOTS = 256


@dataclass(frozen=True)
class CubeLimits:
    """The device limits the family's generic code reads (a runtime's limits extend these)."""

    max_workgroups_per_dim: int     # workgroups (CUDA: blocks) per launch dimension
    max_storage_buffers: int        # buffers one kernel may bind


def locked(method):
    """Run a client method under the client's lock: threads share one client."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


class ComputeClient(abc.ABC):
    """A Cube runtime on one device: buffers (`empty`, `create_from_slice`, `read`), kernels
    (`compile`, `launch`) and ordering (`flush`, `sync`). Thread-safe (one lock per client).

    A runtime implements the abstract methods and sets `lang`, `runtime`, `renderer`,
    `compiled_type`, `limits` and `has_f16`; `backend` is set by the `CubeBackend` that owns the
    client. Handles (what `empty` and `create_from_slice` return) carry `nbytes` and `buffer`,
    the runtime's object; replay reads both. Bindings of a launch are `CubeTensor`s, handles,
    or host data (numpy arrays / bytes, e.g. `build_info`'s output), in binding order.
    """

    #: The kernel language this client compiles ("wgsl", "cuda") and the runtime's name.
    lang: str = ""
    runtime: str = ""
    #: The renderer of generated kernels in `lang`.
    renderer: Renderer
    #: What `compile` returns; `launch` and `compile` take one as already compiled.
    compiled_type: type = object
    limits: CubeLimits
    has_f16: bool = False

    def __init__(self, name: str, description: str = ""):
        self.name = name                      # "wgpu:0"
        self.description = description        # "llvmpipe (Vulkan, CPU)"
        self.backend = None
        self._lock = threading.RLock()
        self._kernels: dict[KernelId, Any] = {}
        self._error_msgs: list[Callable[[int], str]] = []
        # per thread, while a backend op is being recorded for replay (replay.py): its Tape
        self.taping = threading.local()

    # ------------------------------------------------------------------ buffers
    @abc.abstractmethod
    def check_size(self, nbytes: int, what: str = "a buffer") -> None:
        """`DeviceError` when `nbytes` exceeds what one kernel binding may hold."""

    @abc.abstractmethod
    def empty(self, nbytes: int) -> Any:
        """An uninitialized buffer of at least `nbytes` (call `_taped_alloc` on it)."""

    @abc.abstractmethod
    def create_from_slice(self, data) -> Any:
        """A buffer holding `data` (bytes or a contiguous numpy array)."""

    @abc.abstractmethod
    def read(self, handle, nbytes: int | None = None, offset: int = 0) -> bytes:
        """The bytes of `handle` (a handle or CubeTensor) after everything recorded so far has
        run; raises the pending index range errors (`_raise_errors`)."""

    # ------------------------------------------------------------------ kernels
    @abc.abstractmethod
    def launch(self, kernel, cube_count: CubeCount, bindings: Sequence[Any]) -> None:
        """Record one launch of `kernel` (a `KernelSource` or compiled kernel) over
        `cube_count` workgroups (call `_taped_launch` with the compiled kernel)."""

    @abc.abstractmethod
    def _build(self, name: str, kid: KernelId, text: str, entry: str) -> Any:
        """Compile `text` (entry point `entry`); `KernelCompileError` with the compiler's
        message when it does not compile."""

    def compile(self, kernel: KernelSource | Any) -> Any:
        """The compiled `kernel` from this client's cache, compiled on first use. A source in
        another language raises `KernelLanguageError`."""
        if isinstance(kernel, self.compiled_type):
            return kernel
        source = kernel.for_lang(self.lang)
        kid = source.id()
        compiled = self._kernels.get(kid)     # a hit needs no lock: entries are never replaced
        if compiled is not None:
            return compiled
        with self._lock:
            compiled = self._kernels.get(kid)
            if compiled is None:
                complete = getattr(source, "complete", None)
                text = complete() if complete is not None else source.source().complete()
                if debug_level() >= 2:
                    print(f"// ---- lazyt {self.runtime} kernel {kid}\n{text}", file=sys.stderr)
                compiled = self._build(source.name, kid, text, source.entry)
                self._kernels[kid] = compiled
            return compiled

    @property
    def num_kernels(self) -> int:
        """Kernels compiled by this client."""
        return len(self._kernels)

    def has_kernel(self, kernel: KernelSource) -> bool:
        """Whether `kernel` has been compiled here."""
        return kernel.for_lang(self.lang).id() in self._kernels

    # ------------------------------------------------------------------ ordering
    @abc.abstractmethod
    def flush(self) -> None:
        """Submit everything recorded, without waiting for it."""

    @abc.abstractmethod
    def sync(self) -> None:
        """Wait until the device has run everything recorded; raise pending range errors."""

    # ------------------------------------------------------------------ index range checks
    @property
    @abc.abstractmethod
    def errors_binding(self) -> Any:
        """The buffer of (flag, value) u32 pairs that range-checking kernels write, one pair
        per `error_slot`."""

    @abc.abstractmethod
    def _reset_errors(self, n: int) -> None:
        """Zero the first `n` pairs of `errors_binding`."""

    @locked
    def error_slot(self, message: Callable[[int], str],
                   error: type = IndexOutOfRangeError) -> int:
        """A slot for one launch's check; `message(bad_value)` explains a failure. The check is
        read with the next `read`/`sync` and raised there as `error` (an index out of range by
        default)."""
        self._untaped()
        if len(self._error_msgs) >= ERROR_SLOTS:
            self.sync()
        self._error_msgs.append((message, error))
        return len(self._error_msgs) - 1

    def _raise_errors(self, words: np.ndarray) -> None:
        """Check the (flag, value) pairs read back for the recorded slots, then free them."""
        msgs = self._error_msgs
        self._error_msgs = []
        bad = [(msgs[i], int(words[2 * i + 1].view(np.int32)))
               for i in range(len(msgs)) if words[2 * i]]
        self._reset_errors(len(msgs))
        if bad:
            (msg, error), value = bad[0]
            more = f" ({len(bad) - 1} more failed checks since the last read)" if len(bad) > 1 \
                else ""
            raise error(msg(value) + more)

    # ------------------------------------------------------------------ replay recording
    def _taped_alloc(self, handle) -> None:
        """Note an allocation for the op being recorded on this thread, if any."""
        tape = getattr(self.taping, "tape", None)
        if tape is not None:
            tape.allocs.append(handle)

    def _taped_launch(self, compiled, cube_count: CubeCount, bindings: Sequence[Any]) -> None:
        """Note a launch for the op being recorded; host data is copied now, as bytes (the
        caller may reuse its arrays)."""
        tape = getattr(self.taping, "tape", None)
        if tape is not None:
            tape.launches.append((compiled, cube_count, [
                np.ascontiguousarray(b).tobytes() if isinstance(b, np.ndarray) else b
                for b in bindings]))

    def _untaped(self) -> None:
        """Something a replay would not redo (an upload, a read, a range check) happened
        while an op is being recorded: that op is not replayed."""
        tape = getattr(self.taping, "tape", None)
        if tape is not None:
            tape.ok = False


__all__ = ["ComputeClient", "CubeLimits", "ERROR_SLOTS", "locked"]
