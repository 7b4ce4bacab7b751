"""Collectives recorded as lazy ops: an all-reduce that runs when the pending work runs.

`DistributedDataParallel` reduces gradient buckets through this op, so backward stays lazy
(the Fusion layer records the all-reduce between the gradient ops that feed it and those that
follow) and a step under `lazyt.compile` records it and replays it on every call. It is a
backend extension: the numpy impl reduces the host array through the MPI group; the Cube impl
runs NCCL on the cuda backend's stream, or, on an MPI group, reduces a host copy.

Every rank runs its pending work in record order, so the ranks' all-reduces meet in the same
order; an eager collective (`lazyt.distributed.all_reduce`) runs the pending work first, so it
never overtakes a recorded one.
"""
from __future__ import annotations

import numpy as np

import lazyt
from ..backends import Autodiff, Cube, Fusion, Numpy
from ..extension import backend_extension, fusion
from .group import ReduceOp, current

NAME = "all_reduce_bucket"


def _same_shape(x, op, overlap):
    return x


def _join_shape(x):
    return x


@backend_extension(Autodiff, Fusion, Numpy, Cube)
class Collectives(lazyt.Backend):
    """The lazily recorded collectives of `lazyt.distributed`."""

    @fusion(dtype="x", shape=_same_shape)
    def distributed_all_reduce(x, op, overlap): ...

    @fusion(dtype="x", shape=_join_shape)
    def distributed_join(x): ...


@Collectives.implement(Numpy)
def distributed_all_reduce(x, op, overlap):
    group = current(NAME)
    x = np.asarray(x)
    if group.debug:
        group.check_meta(NAME, x.shape, x.dtype.name)
    if getattr(group, "backend", None) == "mpi":
        return group.all_reduce(x, ReduceOp(op), NAME).wait()
    raise lazyt.DeviceError(f"{NAME}: a cpu tensor cannot be reduced by the "
                            f"{group.backend} process group (NCCL works on cuda tensors)")


@Collectives.implement(Cube, name="distributed_all_reduce")
def distributed_all_reduce_cube(x, op, overlap):
    group = current(NAME)
    if group.debug:
        group.check_meta(NAME, x.shape, x.dtype.name)
    if group.backend == "nccl":
        if overlap:
            return group.all_reduce_overlapped(x, ReduceOp(op), NAME)
        return group.all_reduce(x, ReduceOp(op), NAME).stream_result()
    backend = x.client.backend          # MPI on a GPU tensor: through a host copy
    host = group.all_reduce(backend.to_numpy(x), ReduceOp(op), NAME).wait()
    return backend.from_numpy(host if host.flags.c_contiguous else np.array(host, order="C"))


@Collectives.implement(Numpy, name="distributed_join")
def distributed_join(x):
    return x  # MPI reductions complete where they run: nothing to wait for


@Collectives.implement(Cube, name="distributed_join")
def distributed_join_cube(x):
    group = current("join")
    join = getattr(group, "join", None)
    if join is not None:
        join(x)
    return x


def all_reduce(t: lazyt.Tensor, op: ReduceOp = ReduceOp.SUM,
               overlap: bool = False) -> lazyt.Tensor:
    """`t` reduced over the ranks, recorded lazily (no value is read here). `overlap=True`
    (NCCL) runs the reduction on a stream of its own, beside the kernels recorded after it:
    the result must then go through `join` before anything reads it."""
    from ..dispatch import Dispatch
    with lazyt.no_grad():
        out = Dispatch.distributed_all_reduce(t.detach().into_dispatch(), op.value,
                                              bool(overlap))
    return lazyt.Tensor.from_dispatch(out)


def join(t: lazyt.Tensor) -> lazyt.Tensor:
    """`t` once its overlapped reduction finished (the compute stream waits for it there, in
    record order: after the ops recorded before this call). The same values, recorded lazily."""
    from ..dispatch import Dispatch
    with lazyt.no_grad():
        out = Dispatch.distributed_join(t.detach().into_dispatch())
    return lazyt.Tensor.from_dispatch(out)
