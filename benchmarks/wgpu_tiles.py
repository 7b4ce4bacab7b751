"""Tile configs of the wgpu matmul on MiniLM's linear shapes, timed by GPU timestamps.

For each candidate `MatmulConfig`, the backend's small-grid config (the one every MiniLM
linear uses) is set to it, the linear `x @ w.T + b` is checked against numpy, then timed
with the adapter's timestamp queries; rounds over the configs are interleaved (a GPU's
clocks drift over a run) and the median per shape is printed. torch's `F.linear` on the
same shapes (CUDA events) is printed beside it where torch has CUDA.

    python benchmarks/wgpu_tiles.py [--device wgpu:0] [--rounds 5] [--k 20] [--small]

`--small` uses shapes 16x smaller in rows (for a software adapter). One JSON line per
(config, shape) and a summary line with each config's total over the shapes.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import lazyt  # noqa: E402
from lazyt import Dispatch  # noqa: E402
from lazyt.backends.wgpu import codegen as cg  # noqa: E402

SHAPES = ((4096, 384, 384), (4096, 384, 1152), (4096, 384, 1536), (4096, 1536, 384))
C = cg.MatmulConfig
_CANDIDATES = (
    C(bm=64, bn=64, bk=16, tm=8, tn=4, pad=4),
    C(bm=64, bn=64, bk=16, tm=8, tn=4, pad=4, prefetch=False),
    C(bm=64, bn=64, bk=16, tm=8, tn=4),
    C(bm=64, bn=64, bk=16, tm=8, tn=4, pad=8),
    C(bm=64, bn=64, bk=16, tm=4, tn=8, pad=4),
    C(bm=64, bn=64, bk=32, tm=8, tn=4, pad=4),
    C(bm=64, bn=64, bk=8, tm=8, tn=4, pad=4),
    C(bm=64, bn=64, bk=16, tm=8, tn=8, pad=4),
    C(bm=64, bn=64, bk=16, tm=4, tn=4, pad=4),
    C(bm=128, bn=64, bk=16, tm=8, tn=4, pad=4),
    C(bm=128, bn=64, bk=16, tm=8, tn=8, pad=4),
    C(bm=64, bn=128, bk=16, tm=8, tn=8, pad=4),
    C(bm=128, bn=128, bk=16, tm=8, tn=8, pad=4),
    C(bm=128, bn=128, bk=8, tm=8, tn=8, pad=4),
    C(bm=32, bn=64, bk=16, tm=4, tn=4, pad=4),
    C(bm=64, bn=32, bk=16, tm=4, tn=4, pad=4),
)


def _name(c) -> str:
    return (f"{c.bm}x{c.bn}x{c.bk} {c.tm}x{c.tn} p{c.pad}"
            + ("" if c.prefetch else " nopf"))


CONFIGS = {_name(c): c for c in _CANDIDATES}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="wgpu:0")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--k", type=int, default=20, help="launches per timed block")
    p.add_argument("--small", action="store_true")
    args = p.parse_args(argv)
    dev = lazyt.device(args.device)
    base = dev.base_backend
    shapes = [(r // 16, i, o) for r, i, o in SHAPES] if args.small else list(SHAPES)
    rng = np.random.default_rng(0)
    data = []
    for rows, fin, fout in shapes:
        x = rng.standard_normal((rows, fin), dtype=np.float32)
        w = (rng.standard_normal((fout, fin)) / np.sqrt(fin)).astype(np.float32)
        b = rng.standard_normal((fout,), dtype=np.float32)
        data.append(((rows, fin, fout), (x, w, b),
                     tuple(lazyt.tensor(v, device=dev) for v in (x, w, b))))
    saved = base.matmul_config_small
    ok = {}
    for name, cfg in CONFIGS.items():
        base.matmul_config_small = cfg
        try:
            errs = []
            for shape, (x, w, b), (tx, tw, tb) in data:
                got = Dispatch.helper("linear", tx, tw, tb).numpy()
                errs.append(float(np.max(np.abs(got - (x @ w.T + b)))))
            ok[name] = max(errs)
            if max(errs) > 1e-2:
                print(json.dumps({"bench": "wgpu_tiles", "config": name, "wrong": errs}))
                ok.pop(name)
        except lazyt.LazytError as e:
            print(json.dumps({"bench": "wgpu_tiles", "config": name, "error": str(e)[:200]}))
    times = {(n, s[0]): [] for n in ok for s in data}

    def timed(name, tx, tw, tb):
        base.matmul_config_small = CONFIGS[name]
        Dispatch.helper("linear", tx, tw, tb).numpy()     # pipeline built, outside the timer
        with base.client.device_timer() as t:
            outs = [Dispatch.helper("linear", tx, tw, tb) for _ in range(args.k)]
            lazyt.sync(dev)
            base.sync()
        del outs
        return t.seconds / args.k

    for _ in range(args.rounds):
        for name in ok:
            for shape, _, (tx, tw, tb) in data:
                times[(name, shape)].append(timed(name, tx, tw, tb))
    base.matmul_config_small = saved
    torch_us = {}
    try:
        import torch
        if torch.cuda.is_available():
            for shape, (x, w, b), _ in data:
                xx, xw, xb = (torch.from_numpy(v).cuda() for v in (x, w, b))
                for _ in range(5):
                    torch.nn.functional.linear(xx, xw, xb)
                ts = []
                for _ in range(args.rounds):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                        enable_timing=True)
                    e0.record()
                    for _ in range(args.k):
                        torch.nn.functional.linear(xx, xw, xb)
                    e1.record()
                    torch.cuda.synchronize()
                    ts.append(e0.elapsed_time(e1) * 1e3 / args.k)
                torch_us[shape] = statistics.median(ts)
    except ImportError:
        pass
    totals = {}
    for name in ok:
        tot = 0.0
        for shape, _, _ in data:
            us = statistics.median(times[(name, shape)]) * 1e6
            tot += us
            row = {"bench": "wgpu_tiles", "config": name, "shape": list(shape),
                   "us": round(us, 1), "max_abs_error": ok[name]}
            if shape in torch_us:
                row["torch_us"] = round(torch_us[shape], 1)
            print(json.dumps(row), flush=True)
        totals[name] = round(tot, 1)
    best = sorted(totals.items(), key=lambda kv: kv[1])
    print(json.dumps({"bench": "wgpu_tiles", "summary_us": dict(best),
                      "torch_total_us": round(sum(torch_us.values()), 1) if torch_us else None,
                      "adapter": str(dev)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
