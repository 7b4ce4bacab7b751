"""Fusion layer on the cpu (numpy) backend: one JSON line per measurement.

(a) the 8-op chain `(a*b + c).relu()*0.5 - a`, `exp`, `+1`, `sqrt` on 4M float32, lazyt vs
    the same plain numpy expression, timed from the first op recorded to `numpy()` returned
    (goal: lazyt at least 1.5x faster, 2x the aim; with numba kernels, 5x);
(b) a 16-op chain on 8-element tensors with a plan-cache hit: first op recorded to `numpy()`
    returned (goal: at most 0.15 ms), and the recording cost per op;
(d) the compile latency of a new fused block's numba kernel, cold and from the disk cache;
(c) record + drain of N-op pending graphs, N = 1k .. 16k, cold (plan built) and warm (plan
    cache hit): the time per op must stay flat (linear growth);
(e) a block read by a reduction, `((a - b) ** 2).mean(-1)` on [1024, 4096] float32 and
    `(a * b).sum()`, lazyt (one numba pass with numba) vs the numpy expression.

Each runs on `lazyt.device("cpu", autodiff=False)` (the Fusion layer over numpy) and on the
default device (Autodiff over Fusion, untracked path). All in one process, with warm-up, medians.
Usage: python benchmarks/fusion_cpu.py [--quick]
"""
from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import lazyt  # noqa: E402
from lazyt.backends.numpy.pool import _threads  # noqa: E402
from lazyt.fusion import find_fusion  # noqa: E402

QUICK = "--quick" in sys.argv
DEVICES = [("fusion", lazyt.device("cpu", autodiff=False)), ("default", lazyt.device("cpu"))]


def jit_on() -> bool:
    from lazyt.backends.numpy import jit
    return jit.available()


def emit(**fields) -> None:
    print(json.dumps({"bench": "fusion_cpu", **fields}), flush=True)


def median_time(fn, repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return statistics.median(times)


def interleaved(runs: list) -> dict:
    """Median seconds of each (name, fn) in `runs`, the runs alternating round by round (load
    from elsewhere hits all alike), after 3 warm-up rounds."""
    times: dict = {name: [] for name, _ in runs}
    for k in range((5 if QUICK else 31) + 3):
        for name, fn in runs:
            gc.disable()
            t0 = time.perf_counter()
            fn()
            t = time.perf_counter() - t0
            gc.enable()
            if k >= 3:  # warm-up
                times[name].append(t)
    return {name: statistics.median(ts) for name, ts in times.items()}


# ---------------------------------------------------------------------------- (a)
def bench_chain_4m() -> None:
    """numpy and both devices alternate run by run, so load from elsewhere hits all alike."""
    n = 4 * 1024 * 1024
    rng = np.random.default_rng(0)
    na, nb, nc = (rng.standard_normal(n).astype(np.float32) for _ in range(3))

    def plain():
        return np.sqrt(np.exp(np.maximum(na * nb + nc, 0) * 0.5 - na) + 1)

    want = plain()
    runs = [("numpy", plain)]
    for name, dev in DEVICES:
        a, b, c = (lazyt.tensor(x, device=dev) for x in (na, nb, nc))

        def fused(a=a, b=b, c=c):
            return ((((a * b + c).relu() * 0.5 - a).exp() + 1).sqrt()).numpy()

        np.testing.assert_allclose(fused(), want, rtol=1e-6)
        runs.append((name, fused))
    medians = interleaved(runs)
    t_np = medians["numpy"]
    for name, _ in runs[1:]:
        t = medians[name]
        emit(case="a_chain8_4M_float32", device=name, numpy_ms=round(t_np * 1e3, 3),
             lazyt_ms=round(t * 1e3, 3), speedup=round(t_np / t, 2),
             goal=">=5x with numba" if jit_on() else ">=1.5x (aim 2x)",
             threads=_threads())


# ---------------------------------------------------------------------------- (e)
def bench_block_reduce() -> None:
    """numpy and both devices alternate run by run, as in (a)."""
    rng = np.random.default_rng(0)
    na, nb = (rng.standard_normal((1024, 4096)).astype(np.float32) for _ in range(2))
    cases = {
        "e_sq_diff_mean_rows_4M": (lambda: ((na - nb) ** 2).mean(-1),
                                   lambda a, b: ((a - b) * (a - b)).mean(-1)),
        "e_product_sum_all_4M": (lambda: (na * nb).sum(), lambda a, b: (a * b).sum()),
    }
    for case, (plain, expr) in cases.items():
        runs = [("numpy", plain)]
        for name, dev in DEVICES:
            a, b = (lazyt.tensor(x, device=dev) for x in (na, nb))
            runs.append((name, lambda a=a, b=b: expr(a, b).numpy()))
            np.testing.assert_allclose(runs[-1][1](), plain(), rtol=1e-4)
        medians = interleaved(runs)
        t_np = medians["numpy"]
        for name, _ in runs[1:]:
            t = medians[name]
            emit(case=case, device=name, numpy_ms=round(t_np * 1e3, 3),
                 lazyt_ms=round(t * 1e3, 3), speedup=round(t_np / t, 2), numba=jit_on(),
                 threads=_threads())


# ---------------------------------------------------------------------------- (b)
def _chain16(a, b, c):
    x = a * b
    x = x + c
    x = x.relu()
    x = x * 0.5
    x = x - a
    x = x.exp()
    x = x + 1
    x = x.sqrt()
    x = x * b
    x = x + c
    x = x.relu()
    x = x * 0.5
    x = x - a
    x = x.tanh()
    x = x + 1
    return x.sqrt()


def bench_tiny_chain() -> None:
    """Devices are measured in alternating rounds, so a noisy moment hits both alike."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(8).astype(np.float32) for _ in range(3)]
    rounds, per_round = (4, 200) if QUICK else (20, 500)
    setups = []
    for name, dev in DEVICES:
        a, b, c = (lazyt.tensor(x, device=dev) for x in arrays)
        for _ in range(200):  # warm-up: plans cached, programs compiled
            _chain16(a, b, c).numpy()
        setups.append((name, find_fusion(dev.backend), (a, b, c), [], []))
    for _ in range(rounds):
        for name, fusion, (a, b, c), totals, records in setups:
            hits0 = fusion.cache.hits
            for _ in range(per_round):
                gc.disable()
                t0 = time.perf_counter()
                x = _chain16(a, b, c)
                t1 = time.perf_counter()
                x.numpy()
                t2 = time.perf_counter()
                gc.enable()
                del x
                totals.append(t2 - t0)
                records.append(t1 - t0)
            assert fusion.cache.hits - hits0 == per_round  # every run was a plan-cache hit
    for name, _, _, totals, records in setups:
        t_total, t_rec = statistics.median(totals), statistics.median(records)
        emit(case="b_chain16_8elem_cache_hit", device=name, total_us=round(t_total * 1e6, 1),
             record_us_per_op=round(t_rec * 1e6 / 16, 2),
             drain_us=round((t_total - t_rec) * 1e6, 1), runs=len(totals),
             goal_total_us="<=150")


# ---------------------------------------------------------------------------- (c)
def _graph(n_ops: int, x, w):
    """A pending graph of `n_ops` ops: elementwise runs with a matmul every 8 ops and a
    reduction every 16 (so many blocks and boundaries), all pending until the read."""
    y = x
    acc = None
    for i in range(n_ops):
        if i % 16 == 15:
            s = y.sum(1, keepdim=True)
            acc = s if acc is None else acc + s
            continue
        if i % 8 == 7:
            y = (y @ w)
        elif i % 4 == 0:
            y = y * 0.5
        elif i % 4 == 1:
            y = y + x
        elif i % 4 == 2:
            y = y.tanh()
        else:
            y = y - 0.25
    return y, acc


def bench_graph_scaling() -> None:
    rng = np.random.default_rng(2)
    sizes = [1024, 2048, 4096] if QUICK else [1024, 2048, 4096, 8192, 16384]
    for name, dev in DEVICES:
        fusion = find_fusion(dev.backend)
        x = lazyt.tensor(rng.standard_normal((4, 4)).astype(np.float32), device=dev)
        w = lazyt.tensor(rng.standard_normal((4, 4)).astype(np.float32) * 0.5, device=dev)
        for n in sizes:
            def record_and_drain():
                y, acc = _graph(n, x, w)
                y.numpy()
                acc.numpy()

            def cold():
                fusion.cache.clear()
                record_and_drain()

            reps = 3 if QUICK else 5
            t_cold = median_time(cold, reps, 1)
            t_warm = median_time(record_and_drain, reps, 1)
            ops = n + (n // 16)  # the accumulating adds
            emit(case="c_record_drain_graph", device=name, n_ops=n,
                 cold_ms=round(t_cold * 1e3, 2), warm_ms=round(t_warm * 1e3, 2),
                 cold_us_per_op=round(t_cold * 1e6 / ops, 2),
                 warm_us_per_op=round(t_warm * 1e6 / ops, 2))


_COMPILE_CHILD = r"""
import json, time, numpy as np
t0 = time.perf_counter()
import lazyt
from lazyt.backends.numpy import jit
x = lazyt.tensor(np.linspace(-2, 2, 1 << 17, dtype=np.float32))
y = ((((x * x + 0.5).relu() * 0.5 - x).exp() + 1).sqrt()).numpy()
print(json.dumps({"compile_s": jit.STATS["compile_s"], "compiled": jit.STATS["compiled"],
                  "loaded": jit.STATS["loaded"], "process_s": time.perf_counter() - t0}))
"""


def bench_numba_compile() -> None:
    """(d) the first run of a new fused block as a numba kernel: compiled (an empty cache) and
    loaded from the disk cache (a second process): the latency a user sees once per block."""
    import subprocess
    import tempfile
    from lazyt.backends.numpy import jit
    if not jit.available():
        emit(case="d_numba_compile", skipped="numba is not installed or LAZYT_NUMBA=0")
        return
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LAZYT_CACHE_DIR=cache, LAZYT_NUMBA_MIN="0")
        rows = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _COMPILE_CHILD], env=env,
                                 capture_output=True, text=True, timeout=600)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    emit(case="d_numba_compile", cold_ms=round(rows[0]["compile_s"] * 1e3, 1),
         cached_ms=round(rows[1]["compile_s"] * 1e3, 1),
         cold_from=f"{rows[0]['compiled']} compiled", cached_from=f"{rows[1]['loaded']} loaded")


if __name__ == "__main__":
    bench_numba_compile()
    bench_tiny_chain()
    bench_chain_4m()
    bench_block_reduce()
    bench_graph_scaling()
