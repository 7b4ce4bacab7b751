"""The process group: what every backend of `lazyt.distributed` provides, and the one group
of this process.

A backend (`mpi.py` over mpi4py, `nccl.py` over nccl4py) implements the collectives on its own
values: host numpy arrays for MPI, device buffers on the cuda backend's stream for NCCL. The
public functions in `__init__.py` turn lazyt tensors into those values and back. Every wait is
bounded by the group's timeout: a peer that died or never arrives raises `DistributedError`
naming the collective, this rank and the timeout, never a silent hang.
"""
from __future__ import annotations

import enum
import time
from typing import Any, Callable

import numpy as np

from .. import config as _config
from ..errors import DistributedError

#: torch's default is 30 minutes; a hung job should say so sooner
DEFAULT_TIMEOUT_S = 300.0


class ReduceOp(enum.Enum):
    """How `all_reduce` and `reduce_scatter` combine the ranks' values (torch's names)."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


def as_reduce_op(op, what: str) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str):
        try:
            return ReduceOp(op.lower())
        except ValueError:
            pass
    from ..errors import InvalidArgumentError
    raise InvalidArgumentError(f"{what}: unknown reduce op {op!r}; use lazyt.distributed."
                               f"ReduceOp.SUM, AVG, MAX, MIN or PRODUCT")


# ------------------------------------------------------------------------------ settings
def default_timeout() -> float:
    """`LAZYT_DISTRIBUTED_TIMEOUT`, else the default."""
    value = _config.distributed_timeout()
    return DEFAULT_TIMEOUT_S if value is None else float(value)


def default_debug() -> bool:
    return _config.distributed_debug()


def nccl_id_file() -> str | None:
    return _config.nccl_id_file()


# ------------------------------------------------------------------------------ waiting
def poll(test: Callable[[], bool], deadline: float, describe: Callable[[], str]) -> None:
    """Call `test()` until it returns True; past `deadline` (time.monotonic) raise
    `DistributedError` with `describe()`. Spins briefly, then sleeps up to 2 ms a round."""
    spins = 0
    pause = 5e-5
    while not test():
        if time.monotonic() > deadline:
            raise DistributedError(describe())
        spins += 1
        if spins > 200:
            time.sleep(pause)
            pause = min(pause * 2, 2e-3)


class Work:
    """An issued collective (torch's `Work`): `wait()` blocks until it completed (bounded by
    the group's timeout) and returns its result; `is_completed()` polls without blocking."""

    __slots__ = ("_test", "_finish", "_describe", "_deadline", "_done", "_result", "_group")

    def __init__(self, group: "ProcessGroup", test: Callable[[], bool],
                 finish: Callable[[], Any], describe: Callable[[], str]):
        self._group = group
        self._test = test
        self._finish = finish
        self._describe = describe
        self._deadline = time.monotonic() + group.timeout
        self._done = False
        self._result = None

    @classmethod
    def completed(cls, group: "ProcessGroup", result: Any) -> "Work":
        w = cls(group, lambda: True, lambda: result, lambda: "")
        w.wait()
        return w

    def is_completed(self) -> bool:
        if self._done:
            return True
        try:
            return bool(self._test())
        except DistributedError:
            raise
        except Exception as e:  # noqa: BLE001 - the backend's own error, named as ours
            self._group.fail(f"{self._describe()}: {type(e).__name__}: {e}", e)

    def wait(self, timeout: float | None = None):
        """Block until the collective completed; returns its result (the output tensor, or
        None for `barrier`). `timeout` (seconds) overrides the group's for this wait."""
        if not self._done:
            deadline = self._deadline if timeout is None else time.monotonic() + timeout
            try:
                poll(self._test, deadline, self._describe)
            except DistributedError as e:
                self._group.fail(str(e), None)
            except Exception as e:  # noqa: BLE001
                self._group.fail(f"{self._describe()}: {type(e).__name__}: {e}", e)
            self._result = self._finish()
            self._done = True
        return self._result

    def result(self):
        return self.wait()

    def stream_result(self):
        """The result without waiting on the host: for a collective queued on a device stream
        (NCCL), whose result later work on that stream may use at once."""
        return self._finish()


class ProcessGroup:
    """One backend's communicator over all ranks. Subclasses implement the collectives."""

    backend = "?"

    def __init__(self, rank: int, size: int, timeout: float, debug: bool):
        self.rank = rank
        self.size = size
        self.timeout = float(timeout)
        self.debug = bool(debug)
        self.broken: str | None = None    # why the group cannot be used any more
        self.calls = 0                    # collectives issued (names them in errors)

    def describe(self, op: str, extra: str = "") -> str:
        more = f" ({extra})" if extra else ""
        return (f"{op}{more} on rank {self.rank} of {self.size} ({self.backend}) did not "
                f"complete within the timeout of {self.timeout:g} s: a peer rank exited, "
                "crashed or has not reached this collective (ranks must call the same "
                "collectives in the same order)")

    def check_usable(self, op: str) -> None:
        if self.broken is not None:
            raise DistributedError(f"{op}: the {self.backend} process group of rank {self.rank} "
                                   f"is unusable after an earlier failure: {self.broken}")

    def fail(self, message: str, cause: BaseException | None):
        """Mark the group broken (the job cannot continue: peers disagree on what ran) and
        raise `DistributedError`."""
        if self.broken is None:
            self.broken = message
        raise DistributedError(message) from cause

    def destroy(self) -> None:
        """Release the communicator."""


# ------------------------------------------------------------------------------ debug checks
#: dtype codes of the shape check (any stable numbering shared by all ranks)
_DTYPE_CODES = {"float32": 1, "float64": 2, "float16": 3, "int32": 4, "int64": 5, "bool": 6,
                "bfloat16": 7, "uint8": 8, "int8": 9, "int16": 10, "uint32": 11}
_CODE_DTYPES = {v: k for k, v in _DTYPE_CODES.items()}
_OPS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
        "all_reduce_bucket")
META_LEN = 12                      # op, dtype, ndim, then up to 9 dims (more: a hash)


def encode_meta(op: str, shape: tuple, dtype_name: str) -> np.ndarray:
    """(collective, shape, dtype) as a fixed-length int64 vector every rank can all-gather."""
    v = np.zeros(META_LEN, np.int64)
    v[0] = _OPS.index(op) + 1 if op in _OPS else 99
    v[1] = _DTYPE_CODES.get(dtype_name, 98)
    v[2] = len(shape)
    if len(shape) <= META_LEN - 3:
        v[3:3 + len(shape)] = shape
    else:
        v[3] = hash(tuple(shape)) & 0x7FFFFFFFFFFF
    return v


def decode_meta(v: np.ndarray) -> str:
    op = _OPS[int(v[0]) - 1] if 0 < int(v[0]) <= len(_OPS) else "?"
    n = int(v[2])
    shape = tuple(int(d) for d in v[3:3 + n]) if n <= META_LEN - 3 else f"<{n} dims>"
    return f"{op} of shape {shape} {_CODE_DTYPES.get(int(v[1]), '?')}"


def check_meta(gathered: np.ndarray, op: str, rank: int) -> None:
    """Raise `DistributedError` naming every rank's (collective, shape, dtype) when they
    disagree; `gathered` is [size, META_LEN], one row per rank."""
    ref = gathered[0]
    if all(np.array_equal(row, ref) for row in gathered[1:]):
        return
    per_rank = "; ".join(f"rank {r}: {decode_meta(row)}" for r, row in enumerate(gathered))
    raise DistributedError(f"{op} on rank {rank}: the ranks' tensors do not match (debug "
                           f"shape check): {per_rank}")


# ------------------------------------------------------------------------------ this process's group
_GROUP: ProcessGroup | None = None


def current(op: str) -> ProcessGroup:
    """The initialized group, or `DistributedError` naming `op`."""
    g = _GROUP
    if g is None:
        raise DistributedError(f"{op}: no process group: call lazyt.distributed."
                               "init_process_group(backend='mpi' or 'nccl') first")
    return g


def get() -> ProcessGroup | None:
    return _GROUP


def set_group(group: ProcessGroup | None) -> None:
    global _GROUP
    _GROUP = group
