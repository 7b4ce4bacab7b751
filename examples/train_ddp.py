"""Train the digits MLP of train_mlp.py data-parallel: DistributedDataParallel + DistributedSampler.

    python -m lazyt.distributed.launch -n 2 examples/train_ddp.py   # two MPI ranks
    mpiexec -n 2 python examples/train_ddp.py                       # the same, by hand
    python examples/train_ddp.py                                    # a world of one

Each rank trains on its share of every global batch (`--batch-size` / world size samples);
DDP averages the gradients, so the loss curve is the one-process curve on the full batch.
Rank 0 prints it and the held-out accuracy, and writes the checkpoint (`--save`). Needs the
`examples` and `distributed` extras: pip install -e '.[examples,distributed]'.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyt  # noqa: E402
import lazyt.distributed as dist  # noqa: E402
from lazyt.nn.parallel import DistributedDataParallel  # noqa: E402
from lazyt.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402
from train_mlp import MLP, load_digits  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backend", default="mpi", choices=("mpi", "nccl"))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--compile", action="store_true", help="each step through lazyt.compile")
    parser.add_argument("--save", default=None, help="rank 0 writes the checkpoint here")
    parser.add_argument("--json", action="store_true", help="print the curve as one JSON line")
    args = parser.parse_args(argv)

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} must be a multiple of the world "
                         f"size {world}")
    lazyt.manual_seed(args.seed)
    dev = lazyt.device(args.device)
    x_train, x_test, y_train, y_test = load_digits(args.seed)
    model = DistributedDataParallel(MLP(device=dev), bucket_cap_mb=args.bucket_cap_mb)
    opt = lazyt.optim.Adam(model.parameters(), lr=args.lr)
    data = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(data, shuffle=True, seed=args.seed)
    # drop_last: every rank takes the same number of full batches, which together are the
    # one-process run's batches
    loader = DataLoader(data, batch_size=args.batch_size // world, sampler=sampler,
                        drop_last=True)
    eye = lazyt.eye(10, device=dev)

    def train_step(xb, onehot):
        loss = -(model(xb).log_softmax(-1) * onehot).sum(-1).mean()
        opt.step(loss.backward())
        return loss

    step = lazyt.compile(train_step) if args.compile else train_step
    losses = []
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, steps = lazyt.zeros((), device=dev), 0
        for xb, yb in loader:
            total = total + step(xb.to(dev), eye[yb.to(dev)])
            steps += 1
        dist.all_reduce(total, op=dist.ReduceOp.AVG)      # the global batches' mean loss
        losses.append(float(total) / steps)
        if rank == 0 and not args.json:
            print(f"epoch {epoch + 1}: loss {losses[-1]:.6f}", flush=True)
    elapsed = time.perf_counter() - start

    model.eval()
    with lazyt.no_grad():
        logits = model(lazyt.tensor(x_test, device=dev))
    accuracy = float((logits.argmax(-1).numpy() == y_test).mean())
    if args.save:
        model.save_pretrained(args.save)                  # rank 0 writes, every rank waits
    if rank == 0:
        if args.json:
            print(json.dumps({"world": world, "losses": losses, "accuracy": accuracy}))
        else:
            print(f"{world} rank(s) on {dev}: {args.epochs} epochs in {elapsed:.1f} s, final "
                  f"loss {losses[-1]:.6f}, held-out accuracy {accuracy * 100:.2f}%")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
