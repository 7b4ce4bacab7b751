"""lazyt on a GPU device against torch on the same GPU: one JSON line per measurement.

(a) fp32 `relu(a @ b + bias)` at 4096^3 as a ratio to cuBLAS (torch, TF32 off);
(b) the 5-op chain `((x*2+1).relu()*x - 3).abs()` on 64M float32 as a ratio to torch.compile,
    run lazily (its five ops recorded on every call) and through `lazyt.compile`;
(c) `linear` (x @ W^T + b) on MiniLM's three shapes as a ratio to torch's;
(d) host time per op: a 16-op chain on 8-element tensors on a plan-cache hit, first op to
    `numpy()`, beside torch eager's same chain;
(e) compile latency of a new generated kernel: cold (the compiler runs) and from the disk
    cache (CUDA; wgpu has none).

Each is timed end to end on the default device stack (Autodiff over Fusion over the base
backend: what a user runs), as "kernel" on the base backend alone (the generated kernels
without the lazy layers' Python), and as "device": the GPU time of lazyt's kernels from
timestamp queries (where the adapter has them), which leaves out host overhead and gaps.
K iterations are queued with their outputs kept alive, then one `sync`; the time per
iteration is the median over repeats. torch is measured in the same process when it is
importable and sees a CUDA GPU, the same way (host clock, outputs kept, one synchronize);
otherwise its fields are null. The chain row also gives torch.compile on the device's clock
(`torch_compile_event_ms`, CUDA events: no first-launch latency, no wait for the sync), the
measure that earlier rows used.

Usage: python benchmarks/gpu.py [DEVICE] [--small] [--repeat N]
  DEVICE   a lazyt device, "wgpu:0" by default ("cuda" for the CUDA backend)
  --small  512^3 matmul and a 1M chain (for software adapters such as lavapipe)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import lazyt  # noqa: E402
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref  # noqa: E402
from lazyt.ops import BinaryOp, UnaryOp  # noqa: E402


def emit(**fields) -> None:
    print(json.dumps({"bench": "gpu", **fields}), flush=True)


def wait(dev, base) -> None:
    """Run everything pending on `dev` and wait for the device to finish it."""
    lazyt.sync(dev)
    base.sync()


def per_iteration(run, k: int, repeat: int, warmup: int = 1) -> float:
    """Median seconds per iteration of `run(k)` (which queues k iterations and waits)."""
    for _ in range(warmup):
        run(k)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        outs = run(k)
        times.append((time.perf_counter() - t0) / k)
        del outs                   # (dropped after the clock stops, as torch's are)
    return statistics.median(times)


def device_seconds(base, run, k: int) -> float | None:
    """Seconds per iteration the device spent in lazyt's kernels (GPU timestamps), or None
    when the adapter has no timestamp queries."""
    try:
        timer = base.client.device_timer()
    except lazyt.DeviceError:
        return None
    with timer:
        run(k)
    return timer.seconds / k


def torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def torch_per_iteration(torch, fn, k: int, repeat: int, events: bool = False) -> float:
    """Median seconds per iteration of k calls of `fn` with their results kept, timed as
    lazyt's `per_iteration` is: host clock from the first call to the end of
    `torch.cuda.synchronize()` (end to end, for both). `events`: CUDA events around the
    calls instead (the device's clock: the first launch's host latency and the wait for
    the sync are left out)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        if events:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            outs = [fn() for _ in range(k)]
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / k)
        else:
            t0 = time.perf_counter()
            outs = [fn() for _ in range(k)]
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / k)
        del outs
    return statistics.median(times)


# ------------------------------------------------------------------------------ (a) matmul
def bench_matmul(dev, base, torch, n: int, k: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    bias = rng.standard_normal((n,), dtype=np.float32)
    flops = 2 * n ** 3
    ta, tb, tbias = (lazyt.tensor(v, device=dev) for v in (a, b, bias))

    def run(k):
        outs = [(ta @ tb + tbias).relu() for _ in range(k)]
        wait(dev, base)
        return outs

    got = run(1)[0].numpy()
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    t = per_iteration(run, k, repeat)
    ba, bb = base.from_numpy(a), base.from_numpy(b)

    def run_kernel(k):
        outs = [base.matmul(ba, bb) for _ in range(k)]
        base.sync()
        return outs

    t_kernel = per_iteration(run_kernel, k, repeat)
    t_epi = None
    if hasattr(base, "matmul_bias_relu"):   # the fused op as one library call (cuBLASLt)
        bbias = base.from_numpy(bias)

        def run_epilogue(k):
            outs = [base.matmul_bias_relu(ba, bb, bbias) for _ in range(k)]
            base.sync()
            return outs

        t_epi = per_iteration(run_epilogue, k, repeat)
    t_device = device_seconds(base, run, k)
    t_torch = None
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        xa, xb, xbias = (torch.from_numpy(v).cuda() for v in (a, b, bias))
        t_torch = torch_per_iteration(torch, lambda: torch.addmm(xbias, xa, xb).relu_(), k,
                                      repeat)
    tf = flops / t / 1e12
    emit(name="matmul_bias_relu_fp32", device=str(dev), n=n, lazyt_ms=t * 1e3,
         lazyt_tflops=tf, kernel_ms=t_kernel * 1e3, kernel_tflops=flops / t_kernel / 1e12,
         device_ms=None if t_device is None else t_device * 1e3,
         device_tflops=None if t_device is None else flops / t_device / 1e12,
         max_rel_error=err,
         cublas_ms=None if t_torch is None else t_torch * 1e3,
         cublas_tflops=None if t_torch is None else flops / t_torch / 1e12,
         ratio=None if t_torch is None else t_torch / t,
         kernel_ratio=None if t_torch is None else t_torch / t_kernel,
         device_ratio=None if t_torch is None or t_device is None else t_torch / t_device,
         kernel_epilogue_ms=None if t_epi is None else t_epi * 1e3,
         kernel_epilogue_ratio=None if t_torch is None or t_epi is None else t_torch / t_epi,
         config=str(getattr(base, "matmul_config", "cuBLAS")))


# ------------------------------------------------------------------------------ (b) chain
def chain(x):
    return ((x * 2 + 1).relu() * x - 3).abs()


def chain_block(n: int) -> FusedBlock:
    f32 = lazyt.float32
    i, s, v = (lambda j: Ref("in", j)), (lambda j: Ref("sc", j)), (lambda j: Ref("v", j))
    instrs = (FusedInstr("binary", BinaryOp.MUL, (i(0), s(0)), f32),
              FusedInstr("binary", BinaryOp.ADD, (v(0), s(1)), f32),
              FusedInstr("unary", UnaryOp.RELU, (v(1),), f32),
              FusedInstr("binary", BinaryOp.MUL, (v(2), i(0)), f32),
              FusedInstr("binary", BinaryOp.SUB, (v(3), s(2)), f32),
              FusedInstr("unary", UnaryOp.ABS, (v(4),), f32))
    return FusedBlock(shape=(n,), inputs=(((n,), f32),), scalars=(f32, f32, f32),
                      instrs=instrs, outputs=(5,))


def bench_chain(dev, base, torch, n: int, k: int, repeat: int) -> None:
    x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    tx = lazyt.tensor(x, device=dev)
    moved = 2 * 4 * n              # one read, one write per element

    def run(k):
        outs = [chain(tx) for _ in range(k)]
        wait(dev, base)
        return outs

    got = run(1)[0].numpy()
    ok = bool(np.allclose(got, np.abs(np.maximum(x * 2 + 1, 0) * x - 3), rtol=1e-6, atol=1e-6))
    t = per_iteration(run, k, repeat)
    bx = base.from_numpy(x)
    block = chain_block(n)

    def run_kernel(k):
        outs = [base.run_fused(block, [bx], [2.0, 1.0, 3.0]) for _ in range(k)]
        base.sync()
        return outs

    t_kernel = per_iteration(run_kernel, k, repeat)
    t_device = device_seconds(base, run, k)
    t_compile = t_compile_ev = t_eager = None
    if torch is not None:
        xt = torch.from_numpy(x).cuda()
        compiled = torch.compile(chain)
        t_compile = torch_per_iteration(torch, lambda: compiled(xt), k, repeat)
        t_compile_ev = torch_per_iteration(torch, lambda: compiled(xt), k, repeat, events=True)
        t_eager = torch_per_iteration(torch, lambda: chain(xt), k, repeat)
    emit(name="chain5_fp32", device=str(dev), n=n, correct=ok, lazyt_ms=t * 1e3,
         lazyt_gbps=moved / t / 1e9, kernel_ms=t_kernel * 1e3,
         kernel_gbps=moved / t_kernel / 1e9,
         device_ms=None if t_device is None else t_device * 1e3,
         device_gbps=None if t_device is None else moved / t_device / 1e9,
         torch_compile_ms=None if t_compile is None else t_compile * 1e3,
         torch_compile_gbps=None if t_compile is None else moved / t_compile / 1e9,
         torch_compile_event_ms=None if t_compile_ev is None else t_compile_ev * 1e3,
         torch_eager_gbps=None if t_eager is None else moved / t_eager / 1e9,
         ratio=None if t_compile is None else t_compile / t,
         kernel_ratio=None if t_compile is None else t_compile / t_kernel,
         device_ratio=None if t_compile is None or t_device is None else t_compile / t_device)
    # compiled against compiled: lazyt.compile replays the chain's one fused kernel without
    # recording its five ops again (each result kept, so every call writes new buffers)
    compiled_l = lazyt.compile(chain)

    def run_compiled(k):
        outs = [compiled_l(tx) for _ in range(k)]
        wait(dev, base)
        return outs

    got = run_compiled(1)[0].numpy()
    ok = bool(np.allclose(got, np.abs(np.maximum(x * 2 + 1, 0) * x - 3), rtol=1e-6, atol=1e-6))
    t_c = per_iteration(run_compiled, k, repeat, warmup=2)
    emit(name="chain5_fp32_compiled", device=str(dev), n=n, correct=ok,
         lazyt_compile_ms=t_c * 1e3, lazyt_compile_gbps=moved / t_c / 1e9,
         torch_compile_ms=None if t_compile is None else t_compile * 1e3,
         ratio=None if t_compile is None else t_compile / t_c, goal_ratio=1.0)


# ------------------------------------------------------------------------------ (c) linear
LINEAR_SHAPES = ((4096, 384, 384), (4096, 384, 1536), (4096, 1536, 384))   # (rows, in, out)


def bench_linear(dev, base, torch, k: int, repeat: int) -> None:
    from lazyt import Dispatch
    rng = np.random.default_rng(2)
    for rows, fin, fout in LINEAR_SHAPES:
        x = rng.standard_normal((rows, fin), dtype=np.float32)
        w = rng.standard_normal((fout, fin), dtype=np.float32)
        b = rng.standard_normal((fout,), dtype=np.float32)
        tx, tw, tb = (lazyt.tensor(v, device=dev) for v in (x, w, b))

        def run(k):
            outs = [Dispatch.helper("linear", tx, tw, tb) for _ in range(k)]
            wait(dev, base)
            return outs

        got = run(1)[0].numpy()
        err = float(np.max(np.abs(got - (x @ w.T + b))))
        t = per_iteration(run, k, repeat)
        t_torch = None
        if torch is not None:
            xx, xw, xb = (torch.from_numpy(v).cuda() for v in (x, w, b))
            t_torch = torch_per_iteration(
                torch, lambda: torch.nn.functional.linear(xx, xw, xb), k, repeat)
        emit(name="linear_fp32", device=str(dev), shape=[rows, fin, fout], lazyt_ms=t * 1e3,
             max_abs_error=err, torch_ms=None if t_torch is None else t_torch * 1e3,
             ratio=None if t_torch is None else t_torch / t)


# ------------------------------------------------------------------------------ (d) host
def tiny_chain(a, b):
    x = a
    for _ in range(4):
        x = ((x * b + 1.0) - a).relu()
    return x


def bench_host(dev, torch, repeat: int) -> None:
    rng = np.random.default_rng(3)
    na, nb = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    a, b = lazyt.tensor(na, device=dev), lazyt.tensor(nb, device=dev)
    for _ in range(20):
        tiny_chain(a, b).numpy()
    times = []
    for _ in range(max(repeat, 5) * 20):
        t0 = time.perf_counter()
        tiny_chain(a, b).numpy()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    t_torch = None
    if torch is not None:
        xa, xb = torch.from_numpy(na).cuda(), torch.from_numpy(nb).cuda()
        for _ in range(20):
            tiny_chain(xa, xb).cpu()
        tt = []
        for _ in range(max(repeat, 5) * 20):
            t0 = time.perf_counter()
            tiny_chain(xa, xb).cpu().numpy()
            tt.append(time.perf_counter() - t0)
        t_torch = statistics.median(tt)
    emit(name="host_16op_chain", device=str(dev), ops=16, lazyt_ms=t * 1e3,
         per_op_us=t / 16 * 1e6, torch_eager_ms=None if t_torch is None else t_torch * 1e3,
         goal_ms=0.15)


# ------------------------------------------------------------------------------ (e) compile
def bench_compile(dev, base) -> None:
    import uuid

    from lazyt.backends.cube.source import TextKernelSource
    client = base.client
    block = chain_block(1024)
    text = base.renderer.fused(block) + f"\n// {uuid.uuid4().hex}\n"   # a source never seen
    cube_dim = base.renderer.fused_kernel(block).cube_dim
    t0 = time.perf_counter()
    client.compile(TextKernelSource("cold", base.renderer.lang, text, cube_dim=cube_dim))
    cold = time.perf_counter() - t0
    cached = None
    if base.renderer.lang == "cuda":   # same text, new name: the client's cache misses
        t0 = time.perf_counter()
        client.compile(TextKernelSource("again", "cuda", text, cube_dim=cube_dim))
        cached = time.perf_counter() - t0
    emit(name="compile_new_fused_kernel", device=str(dev), cold_ms=cold * 1e3,
         disk_cache_ms=None if cached is None else cached * 1e3, goal_cold_ms=100,
         goal_cached_ms=2)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("device", nargs="?", default="wgpu:0")
    p.add_argument("--small", action="store_true")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    dev = lazyt.device(args.device)
    base = dev.base_backend
    torch = torch_cuda()
    emit(name="device", device=str(dev), backend=repr(base),
         torch=None if torch is None else torch.cuda.get_device_name(0))
    if args.small:
        bench_matmul(dev, base, torch, 512, 4, args.repeat)
        bench_chain(dev, base, torch, 1 << 20, 8, args.repeat)
    else:
        bench_matmul(dev, base, torch, 4096, 10, args.repeat)
        bench_chain(dev, base, torch, 64 << 20, 20, args.repeat)
        bench_linear(dev, base, torch, 20, args.repeat)
    bench_host(dev, torch, args.repeat)
    bench_compile(dev, base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
