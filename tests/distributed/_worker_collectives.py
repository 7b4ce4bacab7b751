"""Every collective of lazyt.distributed on this rank, checked against numpy (run by
test_mpi.py under `mpiexec -n 2`; also runs alone as a world of one)."""
import sys

import numpy as np

import lazyt
import lazyt.distributed as dist
from lazyt.distributed import ReduceOp, deferred


def data(rank, shape=(3, 4), dtype=np.float32):
    return np.random.default_rng(rank + 1).standard_normal(shape).astype(dtype)


def close(t, ref, what, tol=1e-6):
    np.testing.assert_allclose(np.asarray(t.numpy(), np.float64), ref, rtol=tol, atol=tol,
                               err_msg=what)


def main():
    dist.init_process_group("mpi", timeout=30, debug="--debug" in sys.argv)
    r, n = dist.get_rank(), dist.get_world_size()
    every = np.stack([data(i) for i in range(n)]).astype(np.float64)
    refs = {ReduceOp.SUM: every.sum(0), ReduceOp.AVG: every.mean(0),
            ReduceOp.MAX: every.max(0), ReduceOp.MIN: every.min(0),
            ReduceOp.PRODUCT: every.prod(0)}
    for op, ref in refs.items():
        t = lazyt.tensor(data(r))
        same = dist.all_reduce(t, op=op)
        assert same is t
        close(t, ref, f"all_reduce {op}", 1e-5)
    # strings name ops too; integer sums are exact; async handles
    t = lazyt.tensor(np.arange(6, dtype=np.int64) * (r + 1))
    dist.all_reduce(t, op="sum")
    assert t.dtype == lazyt.int64 and t.tolist() == (np.arange(6) * sum(range(1, n + 1))).tolist()
    t = lazyt.tensor(data(r))
    work = dist.all_reduce(t, op=ReduceOp.SUM, async_op=True)
    assert work.wait() is t and work.is_completed()
    close(t, refs[ReduceOp.SUM], "async all_reduce", 1e-5)
    h = lazyt.tensor(data(r, (5,), np.float16))
    dist.all_reduce(h)
    close(h, sum(data(i, (5,), np.float16).astype(np.float32) for i in range(n)), "float16", 1e-2)
    b = lazyt.tensor(np.array([r == 0, False, True]))
    dist.all_reduce(b, op=ReduceOp.MAX)
    assert b.tolist() == [True, False, True]
    # a leaf that requires grad stays one
    w = lazyt.tensor(data(r)).require_grad()
    dist.all_reduce(w)
    assert w.is_leaf and w.requires_grad
    close(w, refs[ReduceOp.SUM], "all_reduce of a leaf", 1e-5)

    src = n - 1
    t = lazyt.tensor(data(r))
    dist.broadcast(t, src=src)
    close(t, data(src), "broadcast")
    t = lazyt.tensor(data(r))
    dist.broadcast(t, src=0, async_op=True).wait()
    close(t, data(0), "async broadcast")

    outs = [lazyt.zeros(3, 4) for _ in range(n)]
    dist.all_gather(outs, lazyt.tensor(data(r)))
    for i, o in enumerate(outs):
        close(o, data(i), f"all_gather[{i}]")
    cat = lazyt.zeros(3 * n, 4)
    dist.all_gather_into_tensor(cat, lazyt.tensor(data(r)))
    close(cat, np.concatenate([data(i) for i in range(n)]), "all_gather_into_tensor")
    stacked = lazyt.zeros(n, 3, 4)
    dist.all_gather_into_tensor(stacked, lazyt.tensor(data(r)), async_op=True).wait()
    close(stacked, np.stack([data(i) for i in range(n)]), "all_gather_into_tensor stacked")

    inputs = [lazyt.tensor(data(r * 10 + j)) for j in range(n)]
    out = lazyt.zeros(3, 4)
    dist.reduce_scatter(out, inputs)
    close(out, sum(data(i * 10 + r).astype(np.float64) for i in range(n)), "reduce_scatter", 1e-5)
    big = lazyt.tensor(np.concatenate([data(r * 10 + j) for j in range(n)]))
    out = lazyt.zeros(3, 4)
    dist.reduce_scatter_tensor(out, big, op=ReduceOp.MAX)
    close(out, np.max([data(i * 10 + r) for i in range(n)], 0), "reduce_scatter_tensor max")

    dist.barrier()
    dist.barrier(async_op=True).wait()

    # the lazily recorded all-reduce (what DistributedDataParallel uses): nothing runs until
    # a read, then it meets the other ranks' in record order
    a = deferred.all_reduce(lazyt.tensor(data(r)) * 2, ReduceOp.SUM)
    c = deferred.all_reduce(lazyt.tensor(data(r)), ReduceOp.AVG)
    close(c, refs[ReduceOp.AVG], "deferred avg", 1e-5)
    close(a, 2 * refs[ReduceOp.SUM], "deferred sum", 1e-5)

    print(f"rank {r} of {n}: every collective matches numpy", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
