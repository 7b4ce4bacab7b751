"""The MPI backend of `lazyt.distributed` (mpi4py; the `mpich` wheel provides libmpi).

Collectives run on host numpy arrays with MPI's nonblocking calls (`Iallreduce`, `Ibcast`,
`Iallgather`, `Ireduce_scatter_block`, `Ibarrier`); `Work.wait()` polls the request with
`Test` until the group's deadline, so a peer that died raises `DistributedError` instead of
hanging. After such a failure the job cannot continue (the ranks disagree on what ran), so at
exit the process aborts the MPI job rather than waiting forever in `MPI_Finalize`.

Launch with `python -m lazyt.distributed.launch -n N script.py` (MPICH's `mpiexec` with
`-disable-auto-cleanup`, so that when a rank dies the others report it instead of being
killed silently); plain `python script.py` is a world of one.
"""
from __future__ import annotations

import atexit
import sys

import numpy as np

from ..errors import DistributedError, DTypeError
from .group import META_LEN, ProcessGroup, ReduceOp, Work, check_meta, encode_meta


def import_mpi():
    """mpi4py's MPI module, or `DistributedError` saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(f"init_process_group(backend='mpi'): mpi4py is not installed "
                               f"({e}); pip install -e \".[distributed]\" (mpi4py and the "
                               "mpich wheel)") from e
    return MPI


class MpiGroup(ProcessGroup):
    """All ranks of `MPI.COMM_WORLD`, on a duplicate communicator of lazyt's own."""

    backend = "mpi"

    def __init__(self, timeout: float, debug: bool):
        MPI = import_mpi()
        self.MPI = MPI
        comm = MPI.COMM_WORLD.Dup()
        comm.Set_errhandler(MPI.ERRORS_RETURN)   # errors become exceptions, not aborts
        self.comm = comm
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout, debug)
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.MAX: MPI.MAX,
                     ReduceOp.MIN: MPI.MIN, ReduceOp.PRODUCT: MPI.PROD}
        atexit.register(self._at_exit)
        self._chain_excepthook()

    # ------------------------------------------------------------------ lifecycle
    def destroy(self) -> None:
        if self.comm is not None and self.broken is None:
            self.comm.Free()
        self.comm = None

    def _chain_excepthook(self) -> None:
        """A rank dying of an uncaught exception ends the whole job at exit (its peers would
        otherwise wait for it until their timeout)."""
        previous = sys.excepthook

        def hook(kind, value, tb):
            if self.broken is None and self.comm is not None:
                self.broken = f"uncaught {kind.__name__}: {value}"
            previous(kind, value, tb)
        sys.excepthook = hook

    def _at_exit(self) -> None:
        if self.broken is not None:
            # MPI_Finalize would wait for the dead peer: end the whole job instead
            print(f"lazyt.distributed: aborting the MPI job (rank {self.rank}) after: "
                  f"{self.broken}", file=sys.stderr, flush=True)
            self.MPI.COMM_WORLD.Abort(1)

    def _comm(self, op: str):
        self.check_usable(op)
        if self.comm is None:
            raise DistributedError(f"{op}: the process group was destroyed")
        self.calls += 1
        return self.comm

    def _work(self, op: str, req, finish, extra: str = "") -> Work:
        return Work(self, req.Test, finish, lambda: self.describe(op, extra))

    def _call(self, op: str, start):
        """Run `start()` (which issues an MPI call); MPI errors become DistributedError."""
        try:
            return start()
        except self.MPI.Exception as e:
            self.fail(f"{op} on rank {self.rank} of {self.size} (mpi): {e}", e)

    # ------------------------------------------------------------------ debug check
    def check_meta(self, op: str, shape: tuple, dtype_name: str) -> None:
        """All-gather (collective, shape, dtype) and raise when the ranks disagree."""
        comm = self._comm(op)
        mine = encode_meta(op, tuple(shape), dtype_name)
        out = np.empty((self.size, META_LEN), np.int64)
        req = self._call(op, lambda: comm.Iallgather(mine, out))
        self._work(op, req, lambda: None, "debug shape check").wait()
        check_meta(out, op, self.rank)

    # ------------------------------------------------------------------ collectives on arrays
    def all_reduce(self, a: np.ndarray, op: ReduceOp, name: str = "all_reduce") -> Work:
        """Start reducing `a` over the ranks; the Work's result is a new array."""
        comm = self._comm(name)
        send, cast_back = _reducible(a, op, name)
        recv = np.empty_like(send)
        mpi_op = self._ops[op] if send.dtype != np.uint8 else _bool_op(self.MPI, op)
        req = self._call(name, lambda: comm.Iallreduce(send, recv, mpi_op))

        def finish():
            out = recv
            if op is ReduceOp.AVG:
                out = out / self.size
            return _restore(out, cast_back)
        return self._work(name, req, finish, f"{a.dtype} {a.shape}")

    def broadcast(self, a: np.ndarray, src: int, name: str = "broadcast") -> Work:
        comm = self._comm(name)
        buf, cast_back = _raw(a)
        buf = np.array(buf, copy=True, order="C")
        req = self._call(name, lambda: comm.Ibcast(buf, root=src))
        return self._work(name, req, lambda: _restore(buf, cast_back), f"from rank {src}")

    def all_gather(self, a: np.ndarray, name: str = "all_gather") -> Work:
        """The Work's result is [size, *a.shape]: rank r's array at [r]."""
        comm = self._comm(name)
        send, cast_back = _raw(a)
        send = _dense(send)
        recv = np.empty((self.size,) + send.shape, send.dtype)
        req = self._call(name, lambda: comm.Iallgather(send, recv))
        return self._work(name, req, lambda: _restore(recv, cast_back), f"{a.dtype} {a.shape}")

    def reduce_scatter(self, a: np.ndarray, op: ReduceOp,
                       name: str = "reduce_scatter") -> Work:
        """`a` is [size, *shape]; the Work's result is this rank's [*shape] reduced block."""
        comm = self._comm(name)
        send, cast_back = _reducible(a, op, name)
        recv = np.empty(send.shape[1:], send.dtype)
        mpi_op = self._ops[op] if send.dtype != np.uint8 else _bool_op(self.MPI, op)
        req = self._call(name, lambda: comm.Ireduce_scatter_block(send, recv, mpi_op))

        def finish():
            out = recv / self.size if op is ReduceOp.AVG else recv
            return _restore(out, cast_back)
        return self._work(name, req, finish, f"{a.dtype} {a.shape}")

    def barrier(self, name: str = "barrier") -> Work:
        comm = self._comm(name)
        req = self._call(name, lambda: comm.Ibarrier())
        return self._work(name, req, lambda: None)


def _dense(a: np.ndarray) -> np.ndarray:
    """`a` C-contiguous, keeping 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _raw(a: np.ndarray):
    """`a` in a dtype MPI moves as bytes-compatible values (bool as uint8), and how to undo."""
    if a.dtype == np.bool_:
        return _dense(a).view(np.uint8), np.bool_
    return _dense(a), None


def _reducible(a: np.ndarray, op: ReduceOp, name: str):
    """`a` in a dtype MPI reduces (float16 in float32, bool as uint8), contiguous, and the
    dtype to cast the result back to."""
    if a.dtype == np.float16:
        return a.astype(np.float32), np.float16
    if a.dtype == np.bool_:
        if op in (ReduceOp.AVG,):
            raise DTypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got bool")
        return _dense(a).view(np.uint8), np.bool_
    if op is ReduceOp.AVG and a.dtype.kind != "f":
        raise DTypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got "
                         f"{a.dtype} (reduce with SUM and divide)")
    return _dense(a), None


def _bool_op(MPI, op: ReduceOp):
    """bool tensors: SUM and MAX are a logical or, PRODUCT and MIN a logical and."""
    return MPI.MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.MIN


def _restore(out: np.ndarray, cast_back):
    if cast_back is np.bool_:
        return out.view(np.bool_) if out.dtype == np.uint8 else out.astype(np.bool_)
    if cast_back is not None:
        return out.astype(cast_back)
    return out
