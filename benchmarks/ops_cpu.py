"""MiniLM's ops one at a time on cpu: lazyt's numpy backend against torch CPU in one process.

GELU (4096x1536), add + LayerNorm (4096x384), the three linears (4096x384 @ 384x384, x1536,
4096x1536 @ 1536x384), linear + GELU, and scaled-dot-product attention with a padding mask
(32x12x128x32), each read back to the host. lazyt's ops run first, before torch is imported
(so numba's threads start as in a process without torch), then torch's on the same data, then
numpy's plain `matmul` on the GEMM shapes. One JSON line per op with both medians and the
ratio (lazyt / torch), after a line naming the BLAS libraries and numba's threading layer.

    python benchmarks/ops_cpu.py [--runs 9] [--torch-first]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lazyt  # noqa: E402
from common import median_ms  # noqa: E402


def data():
    rng = np.random.default_rng(0)
    f = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    mask = np.ones((32, 128), np.float32)
    mask[::2, 100:] = 0
    return {"h1536": f(4096, 1536), "h384": f(4096, 384), "r384": f(4096, 384),
            "g": f(384) + 1, "bln": f(384), "w384": f(384, 384, scale=0.05),
            "w1536": f(1536, 384, scale=0.05), "wd": f(384, 1536, scale=0.03),
            "b384": f(384), "b1536": f(1536), "q": f(32, 12, 128, 32), "k": f(32, 12, 128, 32),
            "v": f(32, 12, 128, 32), "mask": mask}


def ops(F, sdpa, t, add_mask):
    """The ops, written once over a library's functional module `F`, its attention `sdpa`,
    its tensors `t` of `data()` and additive mask; each reads its result back to the host."""
    return {
        "gelu 4096x1536": lambda: F.gelu(t["h1536"]).numpy(),
        "add+layer_norm 4096x384": lambda: F.layer_norm(t["h384"] + t["r384"], (384,), t["g"],
                                                        t["bln"], 1e-12).numpy(),
        "linear 4096x384x384": lambda: F.linear(t["h384"], t["w384"], t["b384"]).numpy(),
        "linear 4096x384x1536": lambda: F.linear(t["h384"], t["w1536"], t["b1536"]).numpy(),
        "linear 4096x1536x384": lambda: F.linear(t["h1536"], t["wd"], t["b384"]).numpy(),
        "linear+gelu 4096x384x1536": lambda: F.gelu(F.linear(t["h384"], t["w1536"],
                                                             t["b1536"])).numpy(),
        "sdpa 32x12x128x32 mask": lambda: sdpa(t["q"], t["k"], t["v"],
                                               attn_mask=add_mask).numpy(),
    }


def additive_mask(d):
    return ((1 - d["mask"]) * -1e9)[:, None, None, :]


def lazyt_ops(d):
    import lazyt.nn.functional as F
    from lazyt.functional import scaled_dot_product_attention
    return ops(F, scaled_dot_product_attention, {k: lazyt.tensor(v) for k, v in d.items()},
               lazyt.tensor(additive_mask(d)))


def torch_ops(torch, d):
    F = torch.nn.functional
    return ops(F, F.scaled_dot_product_attention,
               {k: torch.from_numpy(v) for k, v in d.items()},
               torch.from_numpy(additive_mask(d)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--torch-first", action="store_true")
    args = p.parse_args(argv)
    d = data()
    res: dict = {}

    def run_lazyt():
        ops = lazyt_ops(d)
        for name, fn in ops.items():
            res.setdefault(name, {})["lazyt_ms"] = median_ms(fn, warmup=3, runs=args.runs)
        np_ops = {"linear 4096x384x384": lambda: d["h384"] @ d["w384"].T,
                  "linear 4096x384x1536": lambda: d["h384"] @ d["w1536"].T,
                  "linear 4096x1536x384": lambda: d["h1536"] @ d["wd"].T}
        for name, fn in np_ops.items():
            res[name]["np_matmul_ms"] = median_ms(fn, warmup=2, runs=args.runs)

    def run_torch():
        if importlib.util.find_spec("torch") is None:
            return
        import torch
        torch.set_grad_enabled(False)
        for name, fn in torch_ops(torch, d).items():
            res.setdefault(name, {})["torch_ms"] = median_ms(fn, warmup=3, runs=args.runs)

    order = (run_torch, run_lazyt) if args.torch_first else (run_lazyt, run_torch)
    for f in order:
        f()
    from threadpoolctl import threadpool_info

    from lazyt.backends.numpy import jitpar
    print(json.dumps({"bench": "ops_cpu", "numba_threads": jitpar.layer() or "python pool",
                      "blas": [{k: i.get(k) for k in ("internal_api", "version", "num_threads",
                                                       "architecture", "threading_layer")}
                               for i in threadpool_info()]}), flush=True)
    for name, r in res.items():
        row = {"bench": "ops_cpu", "name": name, **{k: round(v, 3) for k, v in r.items()}}
        if "torch_ms" in r and "lazyt_ms" in r:
            row["ratio"] = round(r["lazyt_ms"] / r["torch_ms"], 2)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
