"""Faults under `mpiexec -n 2` (test_mpi.py): a rank that exits, tensors of mismatched shapes.
Each case prints `RAISED <class> after <s> s: <message>` on the rank that saw the error."""
import os
import sys
import time

import lazyt
import lazyt.distributed as dist
from lazyt.errors import DistributedError


def say(line):
    """Print `line` and, with a third argument, also append it to that file: an MPI_Abort at
    exit may end the launcher before it relays the last output of the rank."""
    print(line, flush=True)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


def report(e, start):
    say(f"RAISED {type(e).__name__} after {time.monotonic() - start:.1f} s: {e}")


def main():
    case, timeout = sys.argv[1], float(sys.argv[2])
    dist.init_process_group("mpi", timeout=timeout, debug=(case == "shape"))
    r = dist.get_rank()
    dist.barrier()
    if case == "exit":               # rank 1 dies; rank 0's all_reduce must not hang
        if r == 1:
            os._exit(0)
        time.sleep(0.5)
        start = time.monotonic()
        try:
            dist.all_reduce(lazyt.ones(4))
        except DistributedError as e:
            report(e, start)
            try:                     # the group is unusable from now on, and says so
                dist.barrier()
            except DistributedError as e2:
                say(f"THEN {e2}")
            return                   # at exit the job is aborted, not finalized
        say("NOT RAISED")
    elif case == "exit-ddp":         # the same inside a lazily recorded DDP all-reduce
        from lazyt import nn
        from lazyt.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(nn.Linear(4, 2))
        if r == 1:
            os._exit(0)
        start = time.monotonic()
        try:
            model(lazyt.randn(3, 4)).sum().backward()
            [p.grad.numpy() for p in model.parameters()]
        except DistributedError as e:
            report(e, start)
            return
        say("NOT RAISED")
    elif case == "shape":            # debug mode names both ranks' shapes
        start = time.monotonic()
        try:
            dist.all_reduce(lazyt.ones(3 + r, 2))
        except DistributedError as e:
            report(e, start)
        dist.barrier()               # the group is still usable after a caught mismatch
        print(f"rank {r}: barrier after the mismatch", flush=True)
        dist.destroy_process_group()
    elif case == "crash":            # rank 1 dies of an exception: the job ends at once
        if r == 1:
            try:
                print(1 / 0)
            except ZeroDivisionError as e:   # recorded first: the abort that follows may end
                say(f"CRASHING {type(e).__name__}")  # the launcher before it relays stderr
                raise
        dist.barrier()
        print("NOT ABORTED", flush=True)
    else:
        raise SystemExit(f"unknown case {case}")


if __name__ == "__main__":
    main()
