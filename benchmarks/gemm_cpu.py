"""MiniLM's GEMMs on cpu: numpy's BLAS (what the numpy backend calls) against torch's, at several
thread counts, to see where numpy's sgemm falls behind and which setting closes the gap.

Shapes: the three linear layers of MiniLM b32 s128 (4096x384 @ 384x384, @ 384x1536,
4096x1536 @ 1536x384) and attention's batched 128x32 @ 32x128 over 384 heads. For each
thread count (threadpoolctl limits both libraries' BLAS pools; torch also gets
`set_num_threads`), one JSON line per shape: numpy ms, torch ms, ratio, each library timed
on its own (their idle threads spin after a call and slow whatever runs next). The BLAS
libraries found (threadpoolctl.threadpool_info) are printed first.

    python benchmarks/gemm_cpu.py [--threads 1 2 4 8 16] [--runs 9]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_ms, torch_or_none  # noqa: E402

SHAPES = {
    "qkv_out 4096x384x384": ((4096, 384), (384, 384)),
    "ffn_up 4096x384x1536": ((4096, 384), (384, 1536)),
    "ffn_down 4096x1536x384": ((4096, 1536), (1536, 384)),
    "attn 384x(128x32x128)": ((384, 128, 32), (384, 32, 128)),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+",
                   default=sorted({1, 2, 4, 8, os.cpu_count() or 1}))
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_info, threadpool_limits
    torch = torch_or_none()
    if torch is not None:
        torch.set_grad_enabled(False)
    print(json.dumps({"bench": "gemm_cpu", "blas": [
        {k: i.get(k) for k in ("internal_api", "version", "num_threads", "architecture",
                               "threading_layer", "filepath")} for i in threadpool_info()]}),
          flush=True)
    rng = np.random.default_rng(0)
    for n in args.threads:
        with threadpool_limits(limits=n):
            if torch is not None:
                torch.set_num_threads(n)
            for name, (sa, sb) in SHAPES.items():
                a = rng.standard_normal(sa).astype(np.float32)
                b = rng.standard_normal(sb).astype(np.float32)
                # each library's runs back to back, then a pause: the idle threads of one
                # (OpenBLAS's, OpenMP's) spin for a while after a call and would slow the other
                t = {"numpy": median_ms(lambda a=a, b=b: np.matmul(a, b), warmup=2,
                                        runs=args.runs)}
                if torch is not None:
                    time.sleep(0.5)
                    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                    t["torch"] = median_ms(lambda: torch.matmul(ta, tb), warmup=2,
                                           runs=args.runs)
                    time.sleep(0.5)
                flops = 2 * np.prod(sa) * sb[-1]
                row = {"bench": "gemm_cpu", "name": name, "threads": n,
                       "numpy_ms": round(t["numpy"], 3),
                       "numpy_gflops": round(flops / t["numpy"] / 1e6, 1)}
                if "torch" in t:
                    row.update(torch_ms=round(t["torch"], 3),
                               torch_gflops=round(flops / t["torch"] / 1e6, 1),
                               numpy_over_torch=round(t["numpy"] / t["torch"], 2))
                print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
