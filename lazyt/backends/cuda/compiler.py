"""CUDA C++ to cubin with NVRTC (NVIDIA's `cuda-bindings`), for one device's exact architecture,
with a disk cache shared by every process.

The cache key hashes the complete source, the compile options (the architecture among them) and
the NVRTC version, never the kernel name alone: an edited source, another GPU or another compiler
gets another entry. Entries are written to a temporary file and renamed into place, so a reader
never sees half a cubin and concurrent writers do not collide. `LAZYT_CACHE_DIR` moves the cache
(default: `$XDG_CACHE_HOME/lazyt`, else `~/.cache/lazyt`); `LAZYT_CUDA_CACHE=0` turns it off.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ... import config
from ...errors import DeviceError, KernelCompileError

#: Options every kernel is compiled with (the architecture is added per device).
BASE_OPTIONS = ("-std=c++17",)

_LOCK = threading.Lock()
_NVRTC: dict = {}


@dataclass
class CompileStats:
    """How kernels were obtained in this process (for tests and benchmarks)."""

    compiled: int = 0          # NVRTC runs
    compile_seconds: float = 0.0
    disk_hits: int = 0
    disk_seconds: float = 0.0


STATS = CompileStats()


def _nvrtc():
    """`cuda.bindings.nvrtc`, imported on first use (`DeviceError` naming the extra if absent)."""
    mod = _NVRTC.get("mod")
    if mod is None:
        try:
            from cuda.bindings import nvrtc as mod
        except ImportError as e:
            raise DeviceError(f"cuda: compiling kernels needs NVIDIA's cuda-bindings (NVRTC): "
                              f"{e}; install it with: "
                              'pip install -e ".[cuda]" in the lazyt checkout') from None
        _NVRTC["mod"] = mod
    return mod


def nvrtc_version() -> tuple[int, int]:
    """The NVRTC version (major, minor)."""
    v = _NVRTC.get("version")
    if v is None:
        nvrtc = _nvrtc()
        try:
            err, major, minor = nvrtc.nvrtcVersion()
        except Exception as e:  # the library itself is missing
            raise DeviceError(f"cuda: NVRTC could not be loaded: {e}") from None
        _check(err, "nvrtcVersion")
        v = _NVRTC["version"] = (int(major), int(minor))
    return v


def include_dirs() -> tuple[str, ...]:
    """Where `cuda_fp16.h` is found: the CUDA toolkit headers NVIDIA's pathfinder locates."""
    dirs = _NVRTC.get("include")
    if dirs is None:
        dirs = ()
        try:
            from cuda.pathfinder import find_nvidia_header_directory
            found = find_nvidia_header_directory("cudart")
            if found:
                dirs = (str(found),)
        except Exception:  # no pathfinder, or no headers: kernels without fp16 still compile
            pass
        _NVRTC["include"] = dirs
    return dirs


def _check(err, what: str) -> None:
    if int(err) != 0:
        raise DeviceError(f"cuda: {what} failed: {err}")


def cache_dir() -> Path | None:
    """The cubin cache directory, or None when the cache is off."""
    if not config.cuda_cache():
        return None
    root = config.cache_dir()
    return Path(root) / "cuda"


def cache_key(text: str, options: tuple[str, ...]) -> str:
    major, minor = nvrtc_version()
    h = hashlib.sha256()
    for part in (f"nvrtc {major}.{minor}", *options, text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


_LINE = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic "
                   r"error)", re.M)


def _log_with_lines(log: str, text: str) -> str:
    """NVRTC's log followed by the source lines its errors point at."""
    lines = text.splitlines()
    shown = []
    for m in _LINE.finditer(log):
        n = int(m.group("line"))
        if 1 <= n <= len(lines) and n not in shown:
            shown.append(n)
    if not shown:
        return log
    context = "\n".join(f"  {n:5d} | {lines[n - 1]}" for n in shown[:8])
    return f"{log}\nsource lines:\n{context}"


def compile_cubin(name: str, text: str, arch: str) -> bytes:
    """The cubin of `text` for `arch` ("sm_90"): from the disk cache, else compiled by NVRTC
    (and cached). A compile error raises `KernelCompileError` with NVRTC's log and the source
    lines it names."""
    options = (f"--gpu-architecture={arch}", *BASE_OPTIONS,
               *(f"-I{d}" for d in include_dirs()))
    key = cache_key(text, options)
    folder = cache_dir()
    path = None
    if folder is not None:
        path = folder / key[:2] / f"{key}.cubin"
        t0 = time.perf_counter()
        try:
            data = path.read_bytes()
        except OSError:
            data = None
        if data:
            STATS.disk_hits += 1
            STATS.disk_seconds += time.perf_counter() - t0
            return data
    t0 = time.perf_counter()
    cubin = _compile(name, text, options)
    STATS.compiled += 1
    STATS.compile_seconds += time.perf_counter() - t0
    if path is not None:
        _write_atomic(path, cubin)
    return cubin


def _compile(name: str, text: str, options: tuple[str, ...]) -> bytes:
    nvrtc = _nvrtc()
    nvrtc_version()
    with _LOCK:  # NVRTC is thread-safe, but one compile at a time keeps the log ours
        err, prog = nvrtc.nvrtcCreateProgram(text.encode("utf-8"), f"{name}.cu".encode(), 0,
                                             [], [])
        _check(err, "nvrtcCreateProgram")
        try:
            opts = [o.encode() for o in options]
            (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
            if int(err) != 0:
                _, size = nvrtc.nvrtcGetProgramLogSize(prog)
                log = b" " * size
                nvrtc.nvrtcGetProgramLog(prog, log)
                msg = log.rstrip(b"\0").decode("utf-8", "replace").strip()
                raise KernelCompileError(
                    f"kernel {name!r} failed to compile on the cuda runtime (NVRTC, "
                    f"{options[0].split('=')[-1]}):\n{_log_with_lines(msg, text)}")
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check(err, "nvrtcGetCUBINSize")
            cubin = b" " * size
            (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
            _check(err, "nvrtcGetCUBIN")
            return cubin
        finally:
            nvrtc.nvrtcDestroyProgram(prog)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename; a cache that cannot be
    written is skipped (the kernel still runs)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cubin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


__all__ = ["compile_cubin", "cache_dir", "cache_key", "nvrtc_version", "include_dirs", "STATS",
           "CompileStats", "BASE_OPTIONS"]
