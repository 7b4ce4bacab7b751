"""One 3x3 convolution layer's forward + backward on cpu (lazyt's im2col composite, autodiff
through it) against torch on the CPU when installed (else the reference is null).

    python benchmarks/conv_cpu.py [--batch 8] [--channels 64] [--size 56] [--runs 7]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyt  # noqa: E402
from common import emit, interleaved_ms, torch_or_none  # noqa: E402
from lazyt import nn  # noqa: E402


def lazyt_step_fn(x, gy, weight, bias):
    """Forward, then backward with the upstream gradient `gy`; the gradients of the input,
    weight and bias are read back (that runs everything lazyt recorded)."""
    conv = nn.Conv2d(x.shape[1], weight.shape[0], weight.shape[2], padding=1)
    conv.weight.assign(lazyt.tensor(weight))
    conv.bias.assign(lazyt.tensor(bias))
    tx = lazyt.tensor(x).require_grad()
    tg = lazyt.tensor(gy)

    def step():
        grads = conv(tx).backward(tg)
        return [grads.get(t).numpy() for t in (tx, conv.weight, conv.bias)]
    return step


def torch_step_fn(torch, x, gy, weight, bias):
    conv = torch.nn.Conv2d(x.shape[1], weight.shape[0], weight.shape[2], padding=1)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight))
        conv.bias.copy_(torch.from_numpy(bias))
    tx = torch.from_numpy(x).requires_grad_()
    tg = torch.from_numpy(gy)

    def step():
        tx.grad = conv.weight.grad = conv.bias.grad = None
        conv(tx).backward(tg)
        return [t.grad.numpy() for t in (tx, conv.weight, conv.bias)]
    return step


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--size", type=int, default=56)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    n, c, s = args.batch, args.channels, args.size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, s, s)).astype(np.float32)
    gy = rng.standard_normal((n, c, s, s)).astype(np.float32)
    bound = 1 / np.sqrt(c * 9)
    weight = rng.uniform(-bound, bound, (c, c, 3, 3)).astype(np.float32)
    bias = rng.uniform(-bound, bound, (c,)).astype(np.float32)
    name = f"conv2d 3x3 {c}->{c} {s}x{s} batch {n} forward+backward"
    lazyt_step = lazyt_step_fn(x, gy, weight, bias)
    t = interleaved_ms({"lazyt": lazyt_step}, runs=args.runs)
    torch = torch_or_none()
    ref_ms = None
    if torch is not None:
        torch_step = torch_step_fn(torch, x, gy, weight, bias)
        for got, want in zip(lazyt_step(), torch_step()):
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
        # timed on its own: torch's OpenMP threads spin after each op and, interleaved, take
        # the cores of the BLAS threads lazyt uses
        ref_ms = interleaved_ms({"torch": torch_step}, runs=args.runs)["torch"]
    emit("conv_cpu", name, "cpu", t["lazyt"], "torch cpu" if torch is not None else None,
         ref_ms, goal=2.0, threads=len(os.sched_getaffinity(0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
