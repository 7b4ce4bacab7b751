"""Data-parallel training of a small MLP with DistributedDataParallel and DistributedSampler;
prints one JSON line on rank 0: the global loss of every step and a checksum of the weights.
Run alone (a world of one, the full batch) and under `mpiexec -n 2` (half a batch per rank),
the two curves must agree (test_mpi.py)."""
import argparse
import json

import numpy as np

import lazyt
import lazyt.distributed as dist
from lazyt import nn
from lazyt.nn.parallel import DistributedDataParallel
from lazyt.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32, help="global batch size")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--flow", choices=("torch", "burn"), default="torch")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step (no_sync)")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--bucket-mb", type=float, default=0.0005)
    a = ap.parse_args()

    dist.init_process_group("mpi", timeout=60)
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((96, 8)).astype(np.float32)
    Y = rng.integers(0, 3, 96)
    lazyt.manual_seed(1234 + r)          # different init per rank: DDP broadcasts rank 0's
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(),
                          nn.Linear(16, 3))
    if r == 0:                            # rank 0's init = the one-process run's init
        lazyt.manual_seed(1234)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(),
                              nn.Linear(16, 3))
    ddp = DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    opt = lazyt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sampler = DistributedSampler(TensorDataset(X, Y), shuffle=True, seed=7)
    loader = DataLoader(TensorDataset(X, Y), batch_size=a.batch // n, sampler=sampler)
    F = nn.functional

    def step(xb, yb):
        if a.flow == "burn":
            loss = F.cross_entropy(ddp(xb), yb)
            opt.step(loss.backward())
            return loss
        opt.zero_grad()
        chunks = list(zip(xb.chunk(a.accum), yb.chunk(a.accum)))
        total = None
        for i, (xc, yc) in enumerate(chunks):
            loss = F.cross_entropy(ddp(xc), yc) / a.accum
            if i < len(chunks) - 1:
                with ddp.no_sync():
                    loss.backward()
            else:
                loss.backward()
            total = loss if total is None else total + loss
        opt.step()
        return total

    run = lazyt.compile(step) if a.compile else step
    losses = []
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = run(xb, yb).detach()
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)   # the global batch's loss
            losses.append(float(loss))
    weights = [float(np.abs(p.numpy()).sum()) for p in model.parameters()]
    if r == 0:
        info = run.cache_info() if a.compile else None
        print(json.dumps({"world": n, "losses": losses, "weights": weights,
                          "buckets": ddp.bucket_sizes,
                          "compile_hits": getattr(info, "hits", None)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
