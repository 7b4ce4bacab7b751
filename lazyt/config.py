"""Every `LAZYT_*` environment switch, read in one place, at use.

Each switch is a `Switch` in `SWITCHES` (its name, default and meaning; the README's table is
this table) with one typed reader below. Readers look at `os.environ` each time they are
called, so a value set after `import lazyt` takes effect at the next use: the next tensor
created (`LAZYT_DEVICE`), the next stream recorded (`LAZYT_DEBUG`), the next pool sized
(`LAZYT_NUM_THREADS`), the next custom op run (`LAZYT_CHECK_META`), and so on. A value that
does not parse raises `ConfigError` naming the variable, instead of being silently ignored.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import InvalidArgumentError


class ConfigError(InvalidArgumentError):
    """A `LAZYT_*` variable holds a value lazyt cannot use."""


@dataclass(frozen=True)
class Switch:
    """One environment switch: its variable, default (as text) and what it does."""

    name: str
    default: str
    meaning: str


SWITCHES = (
    Switch("LAZYT_DEVICE", "cpu",
           "the default device of new tensors (`cpu`, `wgpu`, `wgpu:1`, `cuda:0`); "
           "`lazyt.set_default_device` overrides it per thread"),
    Switch("LAZYT_DEBUG", "0",
           "1: the Fusion layer keeps where every op was recorded (for errors raised when it "
           "runs); 2: also print each generated kernel (fused blocks, WGSL / CUDA C++) when compiled"),
    Switch("LAZYT_NUM_THREADS", "cores",
           "threads of the numpy backend's pool (fused blocks, row ops, large copies) and of "
           "BLAS (through threadpoolctl); "
           "unset, numba kernels use every core and numpy programs at most 8 (beyond, their "
           "threads queue for the GIL between ufunc calls)"),
    Switch("LAZYT_CHECK_META", "0",
           "1: also call each custom op's metadata callback again when the op runs (its "
           "outputs' shapes and dtypes are always compared: `MetadataMismatchError`)"),
    Switch("LAZYT_KERNEL_PATH", "",
           "directories (`os.pathsep`-separated) searched for kernel-hub repos after "
           "`kernel_paths=`"),
    Switch("LAZYT_WGPU_REPLAY", "1",
           "0: the wgpu backend re-runs each op's Python logic instead of replaying its "
           "recorded launches"),
    Switch("LAZYT_WGPU_POOL_MB", "8192",
           "MiB of freed wgpu buffers kept for reuse before more are released"),
    Switch("LAZYT_CACHE_DIR", "`$XDG_CACHE_HOME/lazyt` or `~/.cache/lazyt`",
           "where compiled kernels are cached across processes (CUDA cubins under `cuda/`, "
           "numba kernels under `numba/`)"),
    Switch("LAZYT_CUDA_CACHE", "1",
           "0: compile every CUDA kernel with NVRTC instead of reading the disk cache"),
    Switch("LAZYT_CUDA_CUBLAS", "1",
           "0: the cuda backend multiplies with its own kernel instead of cuBLAS"),
    Switch("LAZYT_CUDA_TUNE", "1",
           "0: a cuBLASLt product (a linear with its bias) takes the heuristic's first algorithm "
           "instead of the fastest of its candidates, timed on the first call of each shape"),
    Switch("LAZYT_NUMPY_POOL_MB", "1024",
           "MiB of freed large numpy-backend arrays kept for the next results (fresh memory "
           "costs page faults on first write); 0 turns the pool off"),
    Switch("LAZYT_NUMBA", "1",
           "0: the numpy backend runs fused blocks and row ops with numpy ufuncs even when "
           "numba is installed (the fallback's results, for comparison and debugging)"),
    Switch("LAZYT_NUMBA_THREADS", "1",
           "0: numba kernels split their work over lazyt's Python thread pool (one GIL "
           "hand-off per piece) instead of numba's own threads (one call per kernel)"),
    Switch("LAZYT_NUMBA_MIN", "65536",
           "elements from which a fused block or row op runs as a compiled numba kernel "
           "(smaller ones stay numpy programs: a kernel's first compile costs about a second)"),
    Switch("LAZYT_DISTRIBUTED_TIMEOUT", "300",
           "seconds a collective may wait for the other ranks before raising "
           "`DistributedError` (`init_process_group(timeout=)` overrides it)"),
    Switch("LAZYT_DISTRIBUTED_DEBUG", "0",
           "1: every collective first all-gathers the ranks' shapes and dtypes and names a "
           "mismatch"),
    Switch("LAZYT_NCCL_ID_FILE", "",
           "without MPI: the file where rank 0 writes the NCCL unique id and the other ranks "
           "read it"),
    Switch("LAZYT_COMPILE", "1",
           "0: functions wrapped by `lazyt.compile` run as plain calls (no recording, no "
           "replay): for debugging"),
)

_BY_NAME = {s.name: s for s in SWITCHES}


#: Each switch's key in `os.environ`'s own table, where the platform's `os` keeps one
#: (CPython's `_Environ._data`): a lookup there costs about 60 ns, `os.environ.get` about
#: 2 µs (its mapping layers encode the key and decode the value), and a compiled call reads
#: a switch every time. The table is the one `os.environ[...] = ...`, `update` and `del`
#: change; it is looked up on `os.environ` at each read, so a replaced `os.environ` is read.
try:
    _ENV_KEYS = {s.name: os.environ.encodekey(s.name) for s in SWITCHES}
except (AttributeError, TypeError):
    _ENV_KEYS = {}


def _raw(name: str) -> str | None:
    """The variable's text, or None when unset or empty."""
    env = os.environ
    key = _ENV_KEYS.get(name)
    table = getattr(env, "_data", None) if key is not None else None
    if table is not None:
        value = table.get(key)
        if value is None:
            return None
        value = env.decodevalue(value)
    elif name not in _BY_NAME:  # a typo here would read a variable nobody documents
        raise KeyError(f"{name} is not a lazyt switch; add it to lazyt.config.SWITCHES")
    else:
        value = env.get(name)
    return value.strip() if value and value.strip() else None


def _int(name: str, lo: int) -> int | None:
    raw = _raw(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected an integer") from None
    if value < lo:
        raise ConfigError(f"{name}={raw!r}: expected an integer >= {lo}")
    return value


def _flag(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={raw!r}: expected 0 or 1")


def device() -> str:
    """`LAZYT_DEVICE`: the default device's name."""
    return _raw("LAZYT_DEVICE") or "cpu"


def debug_level() -> int:
    """`LAZYT_DEBUG`: 0 quiet, 1 keep record locations, 2 also print generated kernels."""
    return _int("LAZYT_DEBUG", 0) or 0


#: The machine's cores, read once (`os.cpu_count` reads the system's files on each call).
_CPUS = max(1, os.cpu_count() or 1)


#: `lazyt.set_num_threads(n)`: takes the place of `LAZYT_NUM_THREADS` while set.
_THREADS_SET: list = [None]


def set_num_threads(n: int) -> None:
    """Use `n` threads on the cpu from now on (lazyt's pool, numba's kernels and BLAS), as
    torch.set_num_threads; it overrides `LAZYT_NUM_THREADS`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"set_num_threads: expected an int >= 1, got {n!r}")
    _THREADS_SET[0] = n


def num_threads() -> int:
    """`set_num_threads`'s count, else `LAZYT_NUM_THREADS`, else the cores (at most 8)."""
    n = _THREADS_SET[0] or _int("LAZYT_NUM_THREADS", 1)
    return n if n is not None else min(_CPUS, 8)


def max_threads() -> int:
    """`set_num_threads`'s count, else `LAZYT_NUM_THREADS`, else the cores this process may
    run on (the pool's size)."""
    n = _THREADS_SET[0] or _int("LAZYT_NUM_THREADS", 1)
    if n is not None:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return _CPUS


def check_meta() -> bool:
    """`LAZYT_CHECK_META`: validate custom ops' outputs against their metadata."""
    return _flag("LAZYT_CHECK_META", False)


def kernel_path() -> list[str]:
    """`LAZYT_KERNEL_PATH`: extra kernel-hub directories, in order."""
    raw = _raw("LAZYT_KERNEL_PATH")
    return [p for p in raw.split(os.pathsep) if p] if raw else []


def wgpu_replay() -> bool:
    """`LAZYT_WGPU_REPLAY`: replay recorded wgpu launches (default on)."""
    return _flag("LAZYT_WGPU_REPLAY", True)


def wgpu_pool_bytes() -> int:
    """`LAZYT_WGPU_POOL_MB` in bytes."""
    mb = _int("LAZYT_WGPU_POOL_MB", 0)
    return (8192 if mb is None else mb) << 20


def cache_dir() -> str:
    """`LAZYT_CACHE_DIR`, else `$XDG_CACHE_HOME/lazyt`, else `~/.cache/lazyt`."""
    raw = _raw("LAZYT_CACHE_DIR")
    if raw:
        return os.path.expanduser(raw)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "lazyt")


def cuda_cache() -> bool:
    """`LAZYT_CUDA_CACHE`: read and write the disk cache of CUDA kernels (default on)."""
    return _flag("LAZYT_CUDA_CACHE", True)


def numpy_pool_bytes() -> int:
    """`LAZYT_NUMPY_POOL_MB` in bytes (default 1024 MiB; 0: no pool)."""
    mb = _int("LAZYT_NUMPY_POOL_MB", 0)
    return (1024 if mb is None else mb) << 20


def numba_enabled() -> bool:
    """`LAZYT_NUMBA`: compile fused blocks and row ops with numba where installed."""
    return _flag("LAZYT_NUMBA", True)


def numba_threads_enabled() -> bool:
    """`LAZYT_NUMBA_THREADS`: numba kernels run over numba's threads (else lazyt's pool)."""
    return _flag("LAZYT_NUMBA_THREADS", True)


def numba_min() -> int:
    """`LAZYT_NUMBA_MIN`: elements from which numba kernels run (default 65536)."""
    n = _int("LAZYT_NUMBA_MIN", 0)
    return 1 << 16 if n is None else n


def distributed_timeout() -> float | None:
    """`LAZYT_DISTRIBUTED_TIMEOUT`: seconds a collective waits (None: the default)."""
    raw = _raw("LAZYT_DISTRIBUTED_TIMEOUT")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"LAZYT_DISTRIBUTED_TIMEOUT={raw!r}: expected a positive number "
                          "of seconds")
    return value


def distributed_debug() -> bool:
    """`LAZYT_DISTRIBUTED_DEBUG`: check shapes and dtypes across ranks first."""
    return _flag("LAZYT_DISTRIBUTED_DEBUG", False)


def nccl_id_file() -> str | None:
    """`LAZYT_NCCL_ID_FILE`: where the NCCL unique id travels without MPI."""
    return _raw("LAZYT_NCCL_ID_FILE") or None


def compile_enabled() -> bool:
    """`LAZYT_COMPILE`: `lazyt.compile` records and replays (default on)."""
    return _flag("LAZYT_COMPILE", True)


def cuda_tune() -> bool:
    """`LAZYT_CUDA_TUNE`: time cuBLASLt's candidate algorithms once per shape (default on)."""
    return _flag("LAZYT_CUDA_TUNE", True)


def cuda_cublas() -> bool:
    """`LAZYT_CUDA_CUBLAS`: matmul through cuBLAS where it is installed (default on)."""
    return _flag("LAZYT_CUDA_CUBLAS", True)


def markdown_table() -> str:
    """The switches as the README's markdown table."""
    rows = ["| variable | default | effect |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {s.default or '(unset)'} | {s.meaning} |" for s in SWITCHES]
    return "\n".join(rows)
