"""The NCCL backend of `lazyt.distributed` (NVIDIA's nccl4py over the nvidia-nccl-cu13 library).

Collectives run on lazyt's CUDA buffers (`CubeTensor` handles of the cuda backend) and are
queued on the cuda backend's one stream, so they are ordered with every kernel lazyt queues
there: a later op reads the result without any host synchronization (torch's NCCL semantics:
`all_reduce` returns once the collective is queued). `Work.wait()` and `barrier()` block the
host until the collective ran, polling a CUDA event and the communicator's asynchronous error
until the group's timeout; past it the communicator is aborted and `DistributedError` raised.

Rank and world size come from the launcher: MPI when mpi4py is present (`mpiexec -n N`; the
NCCL unique id is broadcast over MPI), else the `RANK`/`WORLD_SIZE` variables of torchrun-style
launchers (rank 0 writes the unique id to the file the launcher names, the others wait for it),
else a world of one.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..errors import DistributedError, DTypeError
from .group import META_LEN, ProcessGroup, ReduceOp, Work, check_meta, encode_meta, poll


_NCCL_IN_PROGRESS = 7      # ncclInProgress: a nonblocking communicator still working


def import_nccl():
    try:
        import nccl.core as nccl
    except ImportError as e:
        raise DistributedError(f"init_process_group(backend='nccl'): nccl4py is not installed "
                               f"({e}); pip install -e \".[cuda-distributed]\" (nccl4py and "
                               "nvidia-nccl-cu13)") from e
    return nccl


class _DeviceArray:
    """A CUDA buffer as nccl4py takes one: the CUDA array interface of a dense run of
    `count` elements of numpy dtype `storage` at device address `ptr`."""

    __slots__ = ("__cuda_array_interface__",)

    def __init__(self, ptr: int, count: int, storage: np.dtype):
        self.__cuda_array_interface__ = {
            "shape": (int(count),), "typestr": np.dtype(storage).str, "data": (int(ptr), False),
            "strides": None, "version": 3, "stream": None}


def launcher_rank_size() -> tuple[int, int, object]:
    """(rank, world size, the MPI communicator or None) as the launcher set them."""
    try:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        return comm.Get_rank(), comm.Get_size(), comm
    except ImportError:
        pass
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var]), None
    return 0, 1, None


def local_rank(rank: int) -> int:
    """This process's index among the ranks of its host (the GPU it takes by default)."""
    for var in ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                "SLURM_LOCALID"):
        if var in os.environ:
            return int(os.environ[var])
    return rank


def _share_unique_id(nccl, rank: int, size: int, mpi_comm, id_file: str | None,
                     timeout: float):
    """Rank 0 makes the unique id; the others get it over MPI, or from `id_file`."""
    if size == 1:
        return nccl.get_unique_id()
    if mpi_comm is not None:
        raw = nccl.get_unique_id().as_bytes if rank == 0 else None
        raw = mpi_comm.bcast(raw, root=0)
        return nccl.UniqueId.from_bytes(raw)
    if not id_file:
        raise DistributedError(f"init_process_group(backend='nccl'): rank {rank} of {size} "
                               "needs the NCCL unique id: install mpi4py and launch with "
                               "mpiexec, or name a shared file for it in the id-file setting "
                               "(init_process_group(nccl_id_file=...))")
    if rank == 0:
        uid = nccl.get_unique_id()
        tmp = f"{id_file}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(uid.as_bytes)
        os.replace(tmp, id_file)          # atomic: readers never see a partial id
        return uid
    deadline = time.monotonic() + timeout
    poll(lambda: os.path.exists(id_file), deadline,
         lambda: f"init_process_group(backend='nccl') on rank {rank}: the NCCL unique id "
                 f"file {id_file!r} did not appear within {timeout:g} s (rank 0 writes it)")
    with open(id_file, "rb") as f:
        return nccl.UniqueId.from_bytes(f.read())


class NcclGroup(ProcessGroup):
    """One NCCL communicator over all ranks, one GPU per rank."""

    backend = "nccl"

    def __init__(self, device, timeout: float, debug: bool, id_file: str | None):
        nccl = import_nccl()
        self.nccl = nccl
        rank, size, mpi_comm = launcher_rank_size()
        super().__init__(rank, size, timeout, debug)
        import lazyt
        if device is None:
            device = f"cuda:{local_rank(rank)}"
        self.device = lazyt.device(device)
        if self.device.base != "cuda":
            raise DistributedError(f"init_process_group(backend='nccl'): NCCL needs a cuda "
                                   f"device, got {self.device}")
        self.base = _base_backend(self.device)
        self.client = self.base.client
        self.client.context.activate()
        uid = _share_unique_id(nccl, rank, size, mpi_comm, id_file, timeout)
        self.comm = nccl.Communicator.init(size, rank, uid)
        self._ops = {ReduceOp.SUM: nccl.SUM, ReduceOp.AVG: nccl.AVG, ReduceOp.MAX: nccl.MAX,
                     ReduceOp.MIN: nccl.MIN, ReduceOp.PRODUCT: nccl.PROD}
        self._scratch = None
        self._side = None         # the stream of overlapped all-reduces (made on first use)
        self._pending: dict = {}  # id(out handle) -> (done event, input, output): until joined

    # ------------------------------------------------------------------ lifecycle
    def destroy(self) -> None:
        if self.comm is not None:
            if self.broken is None:
                self.comm.destroy()
            else:
                self.comm.abort()
        self.comm = None

    def _stream(self) -> int:
        return int(self.client.stream.handle)

    def _begin(self, op: str) -> None:
        self.check_usable(op)
        if self.comm is None:
            raise DistributedError(f"{op}: the process group was destroyed")
        self.calls += 1
        self.client.context.activate()
        untaped = getattr(self.client, "_untaped", None)
        if untaped is not None:   # a replay of recorded launches must not skip the collective
            untaped()

    def _check_async(self, op: str) -> None:
        err = self.comm.get_async_error()
        if int(err) not in (0, _NCCL_IN_PROGRESS):
            self.comm.abort()
            self.fail(f"{op} on rank {self.rank} of {self.size} (nccl): "
                      f"{self.nccl.get_error_string(err)}", None)

    def _work(self, op: str, finish, extra: str = "") -> Work:
        """A Work that completes when the stream has run everything queued so far."""
        import pycuda.driver as drv
        event = drv.Event()
        event.record(self.client.stream)

        def test() -> bool:
            self._check_async(op)
            return event.query()

        def describe() -> str:
            self.comm.abort()
            return self.describe(op, extra)
        return Work(self, test, finish, describe)

    # ------------------------------------------------------------------ buffers
    def _storage(self, x) -> np.dtype:
        return np.dtype(self.base.storage_of(x.dtype))

    def _dense(self, x):
        from ..backends.cube.backend import into_contiguous
        return into_contiguous(x)

    def _new(self, like, shape: tuple):
        from ..backends.cube.tensor import CubeTensor
        n = int(np.prod(shape, dtype=np.int64))
        handle = self.client.empty(max(n, 1) * self._storage(like).itemsize)
        return CubeTensor.new_contiguous(self.client, like.device, tuple(shape), handle,
                                         like.dtype)

    def _arr(self, x, count: int | None = None, offset: int = 0) -> _DeviceArray:
        st = self._storage(x)
        n = x.num_elements if count is None else count
        return _DeviceArray(int(x.handle.ptr) + offset * st.itemsize, n, st)

    def _red(self, x, op: ReduceOp, name: str):
        if x.dtype.name == "bool":
            if op is ReduceOp.AVG:
                raise DTypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got bool")
            return self.nccl.MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else self.nccl.MIN
        if op is ReduceOp.AVG and not x.dtype.is_float:
            raise DTypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got "
                             f"{x.dtype.name}")
        return self._ops[op]

    # ------------------------------------------------------------------ debug check
    def check_meta(self, op: str, shape: tuple, dtype_name: str) -> None:
        self._begin(op)
        mine = encode_meta(op, tuple(shape), dtype_name)
        send = self.client.create_from_slice(mine)
        recv = self.client.empty(self.size * META_LEN * 8)
        self.comm.allgather(_DeviceArray(send.ptr, META_LEN, np.int64),
                            _DeviceArray(recv.ptr, self.size * META_LEN, np.int64),
                            stream=self._stream())
        self._work(op, lambda: None, "debug shape check").wait()
        out = np.frombuffer(self.client.read(recv, self.size * META_LEN * 8), np.int64)
        check_meta(out.reshape(self.size, META_LEN), op, self.rank)

    # ------------------------------------------------------------------ collectives on buffers
    # Each takes and returns CubeTensors of the cuda backend; the result is queued on the
    # stream (use it in later ops freely); the Work's wait() blocks the host until it ran.
    def all_reduce(self, x, op: ReduceOp, name: str = "all_reduce") -> Work:
        self._begin(name)
        x = self._dense(x)
        red = self._red(x, op, name)
        out = self._new(x, x.shape)
        if x.num_elements:
            self.comm.allreduce(self._arr(x), self._arr(out), red, stream=self._stream())
        return self._work(name, lambda: out, f"{x.dtype.name} {x.shape}")

    def all_reduce_overlapped(self, x, op: ReduceOp, name: str = "all_reduce"):
        """`x` reduced on a stream of its own, so that the kernels queued after it (the rest
        of backward) run meanwhile; returns the output tensor, which no kernel may read
        before `join(output)` (the compute stream then waits for the reduction). The input
        and output buffers are held until the join: the memory pool hands freed buffers out
        in compute-stream order, which the side stream does not follow."""
        import pycuda.driver as drv
        self._begin(name)
        x = self._dense(x)
        red = self._red(x, op, name)
        out = self._new(x, x.shape)
        if not x.num_elements:
            return out
        if self._side is None:
            self._side = drv.Stream()
        ready = drv.Event()
        ready.record(self.client.stream)          # everything that produced x
        self._side.wait_for_event(ready)
        self.comm.allreduce(self._arr(x), self._arr(out), red, stream=int(self._side.handle))
        done = drv.Event()
        done.record(self._side)
        self._pending[id(out.handle)] = (done, x, out)
        return out

    def join(self, out) -> None:
        """Make the compute stream wait for the overlapped reduction that wrote `out` (no-op
        for any other tensor); its buffers are released to the pool after that."""
        entry = self._pending.pop(id(getattr(out, "handle", None)), None)
        if entry is not None:
            self.client.context.activate()
            self.client.stream.wait_for_event(entry[0])

    def broadcast(self, x, src: int, name: str = "broadcast") -> Work:
        self._begin(name)
        x = self._dense(x)
        out = self._new(x, x.shape)
        if x.num_elements:
            self.comm.broadcast(self._arr(x), self._arr(out), src, stream=self._stream())
        return self._work(name, lambda: out, f"from rank {src}")

    def all_gather(self, x, name: str = "all_gather") -> Work:
        self._begin(name)
        x = self._dense(x)
        out = self._new(x, (self.size,) + tuple(x.shape))
        if x.num_elements:
            self.comm.allgather(self._arr(x), self._arr(out), stream=self._stream())
        return self._work(name, lambda: out, f"{x.dtype.name} {x.shape}")

    def reduce_scatter(self, x, op: ReduceOp, name: str = "reduce_scatter") -> Work:
        """`x` is [size, *shape]; the result is this rank's reduced [*shape] block."""
        self._begin(name)
        x = self._dense(x)
        red = self._red(x, op, name)
        out = self._new(x, tuple(x.shape[1:]))
        if x.num_elements:
            self.comm.reduce_scatter(self._arr(x), self._arr(out), red, stream=self._stream())
        return self._work(name, lambda: out, f"{x.dtype.name} {x.shape}")

    def barrier(self, name: str = "barrier") -> Work:
        self._begin(name)
        if self._scratch is None:
            self._scratch = self.client.create_from_slice(np.zeros(1, np.float32))
        buf = _DeviceArray(self._scratch.ptr, 1, np.float32)
        self.comm.allreduce(buf, buf, self.nccl.SUM, stream=self._stream())
        return self._work(name, lambda: None)


def _base_backend(device):
    b = device.backend
    while hasattr(b, "inner"):
        b = b.inner
    if not hasattr(b, "client"):
        raise DistributedError(f"init_process_group(backend='nccl'): {device} has no CUDA "
                               "client (is it a cuda device?)")
    return b
