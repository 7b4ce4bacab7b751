"""`lazyt.compile` against plain lazyt and torch, in one process: one JSON line per row.

(a) the 16-op chain on 8-element tensors: host time of a compiled call on a cache hit (and
    with the result read), beside the plain call;
(b) MiniLM (BERT 6x384) b32 s128 forward + pooling, compiled, beside plain lazyt, torch eager
    and (on cuda) torch with CUDA-graph replay;
(c) one MLP training step (784-512-512-10, batch 256, cross-entropy, Adam), compiled, beside
    plain lazyt, the same step written by hand in numpy (cpu) and torch eager;
(d) record cost: the time of the recording calls of an 8K-op and a 16K-op function.

    python benchmarks/compile.py [DEVICE ...] [--runs N] [--skip minilm,mlp,record]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyt  # noqa: E402
from common import emit, interleaved_ms, torch_or_none  # noqa: E402
from gpu import tiny_chain as chain  # noqa: E402  (the 16-op chain of benchmarks/gpu.py)
from lazyt import nn  # noqa: E402


def _median_us(fn, n: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def _ms(fn, runs: int, warmup: int = 3) -> float:
    return _median_us(fn, runs, warmup) / 1e3


def _torch_cuda(torch, dev) -> bool:
    return torch is not None and dev.type == "cuda" and torch.cuda.is_available()


# ------------------------------------------------------------------------------ (a) tiny chain
def bench_tiny(dev, torch, runs: int) -> None:
    rng = np.random.default_rng(3)
    na, nb = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    a, b = lazyt.tensor(na, device=dev), lazyt.tensor(nb, device=dev)
    c = lazyt.compile(chain)
    n = max(runs, 5) * 200
    call = _median_us(lambda: c(a, b), n)
    lazyt.sync(dev)
    read = _median_us(lambda: c(a, b).numpy(), n)
    plain = _median_us(lambda: chain(a, b).numpy(), n)
    ok = bool(np.array_equal(c(a, b).numpy(), chain(a, b).numpy()))
    t_torch = None
    if torch is not None:
        tdev = "cuda" if _torch_cuda(torch, dev) else "cpu" if dev.type == "cpu" else None
        if tdev is not None:
            ta, tb = torch.from_numpy(na).to(tdev), torch.from_numpy(nb).to(tdev)
            t_torch = _median_us(lambda: chain(ta, tb).cpu().numpy(), n)
    emit("compile", "16-op chain, compiled call (host)", str(dev), call / 1e3, "plain lazyt",
         plain / 1e3, goal=None, compiled_read_us=round(read, 2), compiled_call_us=round(call, 2),
         plain_read_us=round(plain, 2), equal=ok,
         torch_eager_read_us=None if t_torch is None else round(t_torch, 2))


# ------------------------------------------------------------------------------ (b) MiniLM
def bench_minilm(dev, torch, runs: int) -> None:
    import minilm
    from lazyt.models.bert import l2_normalize, mean_pooling
    model, weights = minilm.load_lazyt(dev)
    ids, mask = minilm.inputs(32, 128, minilm.MINILM_CONFIG["vocab_size"])
    tids, tmask = lazyt.tensor(ids, device=dev), lazyt.tensor(mask, device=dev)

    def forward(ids_t, mask_t):
        return l2_normalize(mean_pooling(model(ids_t, mask_t), mask_t))

    compiled = lazyt.compile(forward)
    fns = {}
    with lazyt.no_grad():
        plain_out = forward(tids, tmask).numpy()
        got = compiled(tids, tmask).numpy()
        # plain lazyt on its own: timed in turn with the compiled call, the plain call's
        # garbage (its ~300 intermediates) is freed at the start of the compiled call after it
        t_plain = _ms(lambda: forward(tids, tmask).numpy(), runs)
    fns["compiled"] = lambda: compiled(tids, tmask).numpy()
    extra = dict(weights=weights, plain_ms=round(t_plain, 3),
                 max_abs_diff_plain=float(np.abs(got - plain_out).max()))
    ref = None
    # wgpu runs on the GPU that torch reaches through CUDA: its row is measured beside that
    on_gpu = torch is not None and dev.type in ("cuda", "wgpu") and torch.cuda.is_available()
    if torch is not None and (dev.type == "cpu" or on_gpu):
        state = {k: v.numpy() for k, v in minilm.to_checkpoint_state(model).items()}
        tdev = "cpu" if dev.type == "cpu" else "cuda"
        fwd = minilm.torch_bert(state, minilm.MINILM_CONFIG, tdev)
        xi, xm = torch.from_numpy(ids).to(tdev), torch.from_numpy(mask).to(tdev)
        fns["torch_eager"] = lambda: fwd(xi, xm).cpu().numpy()
        ref = f"torch eager {tdev}"
        if tdev == "cuda":
            si, sm = xi.clone(), xm.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fwd(si, sm)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = fwd(si, sm)

            def replay():
                si.copy_(xi)
                sm.copy_(xm)
                g.replay()
                return static_out.cpu().numpy()

            fns["torch_graph"] = replay
            extra["max_abs_diff_torch"] = float(np.abs(got - replay()).max())
    # the compiled call and torch's, in turn (background load hits them alike)
    with lazyt.no_grad():
        t = interleaved_ms(fns, runs=runs)
    t_comp = t["compiled"]
    extra["cache"] = compiled.cache_info()._asdict()
    ref_ms = t.get("torch_eager")
    if ref_ms is not None:
        extra["torch_eager_ms"] = round(ref_ms, 3)
    if "torch_graph" in t:
        extra["torch_cuda_graph_ms"] = round(t["torch_graph"], 3)
        extra["ratio_to_torch_graph"] = round(t_comp / t["torch_graph"], 4)
    if ref_ms:
        extra["throughput_ratio"] = round(ref_ms / t_comp, 4)
    # cuda: <= 0.85x torch eager's time; wgpu: >= 0.8x its throughput (<= 1.25x its time)
    emit("compile", "MiniLM b32 s128 forward, compiled", str(dev), t_comp, ref, ref_ms,
         goal={"cuda": 0.85, "wgpu": 1.25}.get(dev.type), **extra)


# ------------------------------------------------------------------------------ (c) MLP step
def bench_mlp(dev, torch, runs: int) -> None:
    import mlp_cpu
    sizes, batch = (784, 512, 512, 10), 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]

    def lazyt_step(compile_it: bool):
        lazyt.manual_seed(0)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b, device=dev))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        model = nn.Sequential(*layers)
        opt = lazyt.optim.Adam(model.parameters(), lr=1e-3)
        tx, ty = lazyt.tensor(x, device=dev), lazyt.tensor(onehot, device=dev)

        def step(xb, yb):
            loss = -(model(xb).log_softmax(-1) * yb).sum(-1).mean()
            opt.step(loss.backward())
            return loss

        f = lazyt.compile(step) if compile_it else step
        return lambda: float(f(tx, ty))

    # timed in turn, so background load hits both alike
    t = interleaved_ms({"plain": lazyt_step(False), "compiled": lazyt_step(True)}, runs=runs)
    t_plain, t_comp = t["plain"], t["compiled"]
    extra = dict(plain_ms=round(t_plain, 3))
    ref, ref_ms = None, None
    if dev.type == "cpu":
        ref, ref_ms = "numpy (hand-written)", _ms(mlp_cpu.numpy_step_fn(x, onehot, sizes), runs)
    if torch is not None and (dev.type == "cpu" or _torch_cuda(torch, dev)):
        tdev = "cpu" if dev.type == "cpu" else "cuda"
        tstep = mlp_cpu.torch_step_fn(torch, x, onehot, sizes, tdev)
        extra["torch_eager_ms"] = round(_ms(tstep, runs), 3)
        if ref is None:
            ref, ref_ms = f"torch eager {tdev}", extra["torch_eager_ms"]
    emit("compile", "MLP train step 784-512-512-10 b256 (Adam), compiled", str(dev), t_comp,
         ref, ref_ms, goal=1.1 if dev.type == "cpu" else 1.0, **extra)


# ------------------------------------------------------------------------------ (d) record cost
def bench_record(dev) -> None:
    x = lazyt.ones(4, device=dev)

    def make(n):
        def f(t):
            for _ in range(n // 2):
                t = (t * 1.0001 + 0.5).relu()   # 2 ops per turn... (relu fuses in)
            return t
        return f

    lazyt.compile(make(64))(x).numpy()   # one-time costs (the block's kernel) out of the way
    times = {8192: [], 16384: []}
    for _ in range(3):        # rounds, the sizes in turn: the first plans each new op stream
        for n in times:       # (cold); later rounds find the plans cached (warm)
            c = lazyt.compile(make(n))
            t0 = time.perf_counter()
            c(x).numpy()
            c(x).numpy()          # the two recording calls
            times[n].append((time.perf_counter() - t0) / 2)
            del c
    cold8, cold16 = times[8192][0], times[16384][0]
    warm8, warm16 = (statistics.median(times[n][1:]) for n in (8192, 16384))
    emit("compile", "record cost, 16K ops / 8K ops", str(dev), cold16 * 1e3, "8K ops",
         cold8 * 1e3, goal=2.2, warm_ms=round(warm16 * 1e3, 2),
         warm_reference_ms=round(warm8 * 1e3, 2), warm_ratio=round(warm16 / warm8, 4))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("devices", nargs="*", default=["cpu"])
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--skip", default="", help="comma-separated rows to skip")
    args = p.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    torch = torch_or_none()
    for spec in args.devices:
        dev = lazyt.device(spec)
        bench_tiny(dev, torch, args.runs)
        if "minilm" not in skip:
            bench_minilm(dev, torch, args.runs)
        if "mlp" not in skip:
            bench_mlp(dev, torch, args.runs)
        if "record" not in skip:
            bench_record(dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
