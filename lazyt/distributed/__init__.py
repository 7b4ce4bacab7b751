"""`lazyt.distributed`: collectives across processes, torch's API on existing engines.

```python
import lazyt, lazyt.distributed as dist
dist.init_process_group(backend="mpi")      # cpu tensors; "nccl" for cuda tensors
t = lazyt.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(t)                          # in place: every rank now holds the sum
```
Launch with `python -m lazyt.distributed.launch -n 2 train.py` (MPICH's mpiexec with the
flags lazyt needs) or `mpiexec -n 2 python train.py`; plain `python train.py` is a world of one.

The backends are `mpi.py` (mpi4py: host arrays, nonblocking MPI calls polled until a timeout)
and `nccl.py` (nccl4py: lazyt's CUDA buffers on the cuda backend's stream). Collectives follow
torch's signatures: they update the tensors passed in place (and return them), and with
`async_op=True` return a `Work` whose `wait()` completes them. They are eager: the pending
lazy work runs first (it may hold a recorded collective, `deferred.py`), then the values are
exchanged. Every wait is bounded by the timeout of `init_process_group` (`DistributedError`
naming the collective and the rank, never a silent hang); with `debug=True` every collective
first all-gathers the ranks' (collective, shape, dtype) and names a mismatch.
"""
from __future__ import annotations

import datetime
import importlib.util
from typing import Sequence

import numpy as np

from ..errors import DistributedError, InvalidArgumentError, ShapeError
from . import group as _group
from .group import ProcessGroup, ReduceOp, Work

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_nccl_available", "get_rank", "get_world_size",
           "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "ReduceOp",
           "Work", "ProcessGroup", "DistributedError"]

_BACKENDS = ("mpi", "nccl")


# ------------------------------------------------------------------------------ setup
def init_process_group(backend: str = "mpi", init_method: str | None = None, *,
                       timeout: float | datetime.timedelta | None = None,
                       world_size: int | None = None, rank: int | None = None,
                       debug: bool | None = None, device=None,
                       nccl_id_file: str | None = None) -> ProcessGroup:
    """Join the job's process group. The rank and world size come from the launcher
    (`mpiexec -n N`; torchrun-style `RANK`/`WORLD_SIZE` for NCCL without mpi4py); `world_size`
    and `rank`, when given, are checked against it. `timeout` (seconds or a timedelta) bounds
    every wait; `debug=True` checks shapes across ranks before each collective. NCCL takes
    `device` (default `cuda:<local rank>`) and, without MPI, `nccl_id_file`: a path every rank
    can read, where rank 0 writes the NCCL unique id."""
    if _group.get() is not None:
        raise DistributedError("init_process_group: the process group is already initialized "
                               "(call destroy_process_group() first)")
    if backend not in _BACKENDS:
        raise InvalidArgumentError(f"init_process_group: unknown backend {backend!r}; "
                                   f"lazyt has {', '.join(map(repr, _BACKENDS))}")
    if init_method not in (None, "env://"):
        raise InvalidArgumentError(f"init_process_group: init_method {init_method!r} is not "
                                   "supported; ranks come from the launcher (mpiexec)")
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    timeout = _group.default_timeout() if timeout is None else float(timeout)
    if not timeout > 0:
        raise InvalidArgumentError(f"init_process_group: timeout must be positive, got {timeout}")
    debug = _group.default_debug() if debug is None else bool(debug)
    if backend == "mpi":
        from .mpi import MpiGroup
        g: ProcessGroup = MpiGroup(timeout, debug)
    else:
        from .nccl import NcclGroup
        g = NcclGroup(device, timeout, debug, nccl_id_file or _group.nccl_id_file())
    for name, given, actual in (("world_size", world_size, g.size), ("rank", rank, g.rank)):
        if given is not None and int(given) != actual:
            g.destroy()
            raise DistributedError(f"init_process_group: {name}={given} but the launcher "
                                   f"started this process with {name} {actual}")
    _group.set_group(g)
    return g


def destroy_process_group() -> None:
    """Leave the process group (a later `init_process_group` starts a new one)."""
    g = _group.get()
    if g is not None:
        _group.set_group(None)
        g.destroy()


def is_initialized() -> bool:
    return _group.get() is not None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py is installed (without importing it, which starts MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """Whether nccl4py is installed (not whether a GPU is present)."""
    try:
        return importlib.util.find_spec("nccl.core") is not None
    except ModuleNotFoundError:
        return False


def get_rank(group=None) -> int:
    return _group.current("get_rank").rank


def get_world_size(group=None) -> int:
    return _group.current("get_world_size").size


def get_backend(group=None) -> str:
    return _group.current("get_backend").backend


# ------------------------------------------------------------------------------ plumbing
def _tensor_arg(op: str, name: str, t):
    from ..tensor import Tensor
    if not isinstance(t, Tensor):
        raise InvalidArgumentError(f"{op}: {name} must be a lazyt tensor, got "
                                   f"{type(t).__name__}")
    return t


def _start(op: str, tensors: Sequence) -> ProcessGroup:
    """The group, after the pending lazy work ran (a recorded collective in it must not be
    overtaken by this eager one)."""
    g = _group.current(op)
    g.check_usable(op)
    import lazyt
    lazyt.sync()
    if g.backend == "nccl":
        for t in tensors:
            if t.device is not g.device:
                from ..errors import DeviceError
                raise DeviceError(f"{op}: the nccl process group works on {g.device}, got a "
                                  f"tensor on {t.device}")
    return g


def _value(g: ProcessGroup, t):
    """What the backend exchanges: a host array (MPI) or the base cuda primitive (NCCL)."""
    if g.backend == "mpi":
        return np.asarray(t.numpy())
    from ..interop import base_value
    return base_value(t)


def _tensor(g: ProcessGroup, value, like):
    """A lazyt tensor on `like`'s device holding the backend's result."""
    import lazyt
    if g.backend == "mpi":
        return lazyt.tensor(value, dtype=like.dtype, device=like.device)
    from ..interop import wrap_base
    return lazyt.Tensor(wrap_base(like.device, value), like.device)


def _assign(target, value, op: str):
    """`target` updated in place to `value` (a leaf that requires grad stays one)."""
    import lazyt
    from .. import inplace
    with lazyt.no_grad():
        inplace.rebind(target, value, op)
    return target


def _finish(g: ProcessGroup, work: Work, done, async_op: bool):
    """Wrap `work` so that its result passes through `done(raw)`; wait unless async."""
    out = Work(g, work._test, lambda: done(work._finish()), work._describe)
    out._deadline = work._deadline
    if async_op:
        return out
    return out.wait()


# ------------------------------------------------------------------------------ collectives
def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the ranks, in place (every rank gets the result): `op` is
    `ReduceOp.SUM` (default), `AVG`, `MAX`, `MIN` or `PRODUCT`."""
    name = "all_reduce"
    _tensor_arg(name, "tensor", tensor)
    op = _group.as_reduce_op(op, name)
    g = _start(name, [tensor])
    if g.debug:
        g.check_meta(name, tensor.shape, tensor.dtype.name)
    work = g.all_reduce(_value(g, tensor), op, name)
    return _finish(g, work, lambda r: _assign(tensor, _tensor(g, r, tensor), name), async_op)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """Copy rank `src`'s `tensor` into every rank's `tensor`, in place."""
    name = "broadcast"
    _tensor_arg(name, "tensor", tensor)
    g = _start(name, [tensor])
    if not 0 <= int(src) < g.size:
        raise InvalidArgumentError(f"{name}: src={src} is not a rank of a world of {g.size}")
    if g.debug:
        g.check_meta(name, tensor.shape, tensor.dtype.name)
    work = g.broadcast(_value(g, tensor), int(src), name)
    return _finish(g, work, lambda r: _assign(tensor, _tensor(g, r, tensor), name), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's `input_tensor`, concatenated along dim 0 (or stacked, when `output_tensor`
    has shape [world_size, *input.shape]) into `output_tensor`, in place."""
    name = "all_gather"
    _tensor_arg(name, "output_tensor", output_tensor)
    _tensor_arg(name, "input_tensor", input_tensor)
    g = _start(name, [output_tensor, input_tensor])
    shape = tuple(input_tensor.shape)
    stacked = (g.size,) + shape
    cat = ((g.size * shape[0],) + shape[1:]) if shape else None
    if tuple(output_tensor.shape) not in (stacked, cat):
        raise ShapeError(f"{name}: output_tensor has shape {tuple(output_tensor.shape)}; for "
                         f"an input of shape {shape} on {g.size} ranks it must be {cat} "
                         f"(concatenated) or {stacked} (stacked)")
    if output_tensor.dtype is not input_tensor.dtype:
        raise InvalidArgumentError(f"{name}: output_tensor is {output_tensor.dtype.name} but "
                                   f"input_tensor is {input_tensor.dtype.name}")
    if g.debug:
        g.check_meta(name, shape, input_tensor.dtype.name)
    work = g.all_gather(_value(g, input_tensor), name)

    def done(r):
        t = _tensor(g, r, input_tensor).reshape(tuple(output_tensor.shape))
        return _assign(output_tensor, t, name)
    return _finish(g, work, done, async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Rank r's `tensor` into `tensor_list[r]` on every rank, in place (the list holds
    world_size tensors of `tensor`'s shape and dtype)."""
    name = "all_gather"
    _tensor_arg(name, "tensor", tensor)
    g = _start(name, [tensor])
    _check_list(name, "tensor_list", tensor_list, g.size, tensor)
    if g.debug:
        g.check_meta(name, tensor.shape, tensor.dtype.name)
    work = g.all_gather(_value(g, tensor), name)

    def done(r):
        stacked = _tensor(g, r, tensor)
        for i, t in enumerate(tensor_list):
            _assign(t, stacked[i], name)
        return tensor_list
    return _finish(g, work, done, async_op)


def reduce_scatter_tensor(output, input, op: ReduceOp = ReduceOp.SUM, group=None,  # noqa: A002
                          async_op: bool = False):
    """Reduce `input` over the ranks and give rank r block r of it (along dim 0, or the r-th
    entry when `input` has shape [world_size, *output.shape]) in `output`, in place."""
    name = "reduce_scatter"
    _tensor_arg(name, "output", output)
    _tensor_arg(name, "input", input)
    op = _group.as_reduce_op(op, name)
    g = _start(name, [output, input])
    shape = tuple(output.shape)
    stacked = (g.size,) + shape
    cat = ((g.size * shape[0],) + shape[1:]) if shape else None
    if tuple(input.shape) not in (stacked, cat):
        raise ShapeError(f"{name}: input has shape {tuple(input.shape)}; for an output of "
                         f"shape {shape} on {g.size} ranks it must be {cat} or {stacked}")
    if g.debug:
        g.check_meta(name, tuple(input.shape), input.dtype.name)
    value = _value(g, input.reshape(stacked))
    work = g.reduce_scatter(value, op, name)
    return _finish(g, work, lambda r: _assign(output, _tensor(g, r, output), name), async_op)


def reduce_scatter(output, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """Reduce `input_list[r]` over the ranks into rank r's `output`, in place."""
    name = "reduce_scatter"
    _tensor_arg(name, "output", output)
    g = _group.current(name)
    _check_list(name, "input_list", input_list, g.size, output)
    import lazyt
    return reduce_scatter_tensor(output, lazyt.stack(list(input_list)), op, group, async_op)


def barrier(group=None, async_op: bool = False):
    """Wait until every rank reached this barrier (bounded by the timeout)."""
    name = "barrier"
    g = _start(name, [])
    work = g.barrier(name)
    return work if async_op else work.wait()


def _check_list(op: str, what: str, tensors, size: int, like) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        n = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise InvalidArgumentError(f"{op}: {what} must be a list of world_size={size} "
                                   f"tensors, got {n}")
    for i, t in enumerate(tensors):
        _tensor_arg(op, f"{what}[{i}]", t)
        if tuple(t.shape) != tuple(like.shape) or t.dtype is not like.dtype:
            raise ShapeError(f"{op}: {what}[{i}] has shape {tuple(t.shape)} "
                             f"{t.dtype.name}; expected {tuple(like.shape)} {like.dtype.name}")
