"""512x512 matmul + bias + ReLU, forward + backward, on cpu: the fused extension op of
examples/custom_kernel against the same computation written by hand in numpy, and against
torch on the CPU when it is installed. Goal: lazyt <= 1.5x numpy's time.

    python benchmarks/matmul_cpu.py [--size 512] [--runs 9]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyt  # noqa: E402
from common import emit, interleaved_ms, torch_or_none  # noqa: E402
from custom_kernel.lib import matmul_add_relu_custom  # noqa: E402

GOAL = 1.5


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    c = rng.standard_normal((n, n), np.float32)
    w = rng.standard_normal((n, n), np.float32)  # the upstream gradient of the output

    def numpy_fwd_bwd():
        out = a @ b
        out += c
        np.maximum(out, 0, out=out)
        g = np.where(out > 0, w, 0)
        return g @ b.T, a.T @ g, g

    dev = lazyt.device("cpu")
    ta, tb, tc = (lazyt.tensor(x, device=dev) for x in (a, b, c))
    tw = lazyt.tensor(w, device=dev)

    def lazyt_fwd_bwd():
        xs = [t.detach().require_grad() for t in (ta, tb, tc)]
        out = matmul_add_relu_custom(*xs)
        grads = out.backward(tw)
        return [grads.get(x).numpy() for x in xs]

    ref = numpy_fwd_bwd()
    got = lazyt_fwd_bwd()
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-2)

    t = interleaved_ms({"lazyt": lazyt_fwd_bwd, "numpy": numpy_fwd_bwd}, runs=args.runs)
    emit("matmul_cpu", f"matmul+bias+relu {n}^2 fwd+bwd", "cpu", t["lazyt"], "numpy",
         t["numpy"], GOAL)
    # torch is timed on its own: its OpenMP threads spin after each op and, interleaved,
    # starve the BLAS threads numpy and lazyt share (torch itself swung from 5 to 96 ms)
    torch = torch_or_none()
    if torch is not None:
        pa, pb, pc, pw = (torch.from_numpy(x) for x in (a, b, c, w))

        def torch_fwd_bwd():
            xs = [x.clone().requires_grad_() for x in (pa, pb, pc)]
            out = torch.relu(xs[0] @ xs[1] + xs[2])
            out.backward(pw)
            return [x.grad for x in xs]
        tt = interleaved_ms({"torch": torch_fwd_bwd}, runs=args.runs)
        emit("matmul_cpu", f"matmul+bias+relu {n}^2 fwd+bwd", "cpu", t["lazyt"], "torch cpu",
             tt["torch"], None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
