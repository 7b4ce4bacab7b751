"""Cost of the Autodiff layer on untracked ops: the same workloads on a device with the layer
and on one without it (`autodiff=False`, same fusion setting). Prints one JSON line per
workload and fusion setting, plus a summary line per fusion setting; goal: ratio <= 1.10.

Runs are interleaved (with, without, with, ...) after a warm-up, timed in process CPU time
(BLAS pinned to one thread), and the median is reported, so background load on a shared
machine affects both sides alike.

    python benchmarks/autodiff_overhead.py [--runs 15] [--reps 200]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: no BLAS thread contention
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
import lazyt  # noqa: E402

GOAL = 1.10


def _workloads(shape):
    """name -> fn(tensors) running a few untracked ops through the Tensor API."""
    return {
        "elementwise": lambda a, b, w: ((a + b) * 0.5 - a.exp()).relu(),
        "unary_chain": lambda a, b, w: a.sin().tanh().sigmoid().neg(),
        "reduce": lambda a, b, w: a.sum(1) + b.amax(1),
        "matmul": lambda a, b, w: a @ w,
        "movement": lambda a, b, w: a.T.reshape(-1)[::2],
        "softmax": lambda a, b, w: a.softmax(-1),
        "mlp_layer": lambda a, b, w: (a @ w + b[0]).gelu(),
    }


def _inputs(dev, shape, rng):
    a = lazyt.tensor(rng.standard_normal(shape).astype(np.float32), device=dev)
    b = lazyt.tensor(rng.standard_normal(shape).astype(np.float32), device=dev)
    w = lazyt.tensor(rng.standard_normal((shape[1], shape[1])).astype(np.float32), device=dev)
    return a, b, w


def _time(fn, args, reps: int) -> float:
    """Seconds per call of `fn(*args)` followed by a sync (lazy layers drain)."""
    t0 = time.process_time()
    for _ in range(reps):
        fn(*args)
    lazyt.sync()
    return (time.process_time() - t0) / reps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=21)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--shape", type=int, nargs=2, default=(32, 64))
    args = p.parse_args()
    shape = tuple(args.shape)
    rng = np.random.default_rng(0)
    for fusion in (False, True):
        with_ad = lazyt.device("cpu", fusion=fusion)
        without = lazyt.device("cpu", fusion=fusion, autodiff=False)
        ins_ad, ins_plain = _inputs(with_ad, shape, rng), _inputs(without, shape, rng)
        assert not any(t.is_tracked for t in ins_ad)
        ratios = []
        for name, fn in _workloads(shape).items():
            for _ in range(3):  # warm-up: caches, plans, allocator
                _time(fn, ins_ad, args.reps // 4 + 1)
                _time(fn, ins_plain, args.reps // 4 + 1)
            t_ad, t_plain = [], []
            for _ in range(args.runs):
                t_ad.append(_time(fn, ins_ad, args.reps))
                t_plain.append(_time(fn, ins_plain, args.reps))
            med_ad, med_plain = statistics.median(t_ad), statistics.median(t_plain)
            ratio = med_ad / med_plain
            ratios.append(ratio)
            print(json.dumps({
                "benchmark": "autodiff_overhead", "workload": name, "fusion": fusion,
                "shape": list(shape), "autodiff_us": round(med_ad * 1e6, 2),
                "no_autodiff_us": round(med_plain * 1e6, 2), "ratio": round(ratio, 3),
                "goal": GOAL, "ok": ratio <= GOAL}), flush=True)
        geo = float(np.exp(np.mean(np.log(ratios))))
        print(json.dumps({"benchmark": "autodiff_overhead", "workload": "geomean",
                          "fusion": fusion, "ratio": round(geo, 3), "max_ratio":
                          round(max(ratios), 3), "goal": GOAL, "ok": geo <= GOAL}), flush=True)


if __name__ == "__main__":
    main()
