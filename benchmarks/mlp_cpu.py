"""One MLP training step (forward, cross-entropy, backward, Adam) on cpu: lazyt's nn/optim
against the same step written by hand in numpy, and against torch on the CPU when installed.

    python benchmarks/mlp_cpu.py [--batch 256] [--hidden 512] [--runs 9]
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


def lazyt_step_fn(x, onehot, sizes):
    lazyt.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = lazyt.optim.Adam(model.parameters(), lr=1e-3)
    tx, ty = lazyt.tensor(x), lazyt.tensor(onehot)

    def step():
        loss = -(model(tx).log_softmax(-1) * ty).sum(-1).mean()
        opt.step(loss.backward())
        return loss.item()
    return step


def torch_step_fn(torch, x, onehot, sizes, device: str = "cpu"):
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x).to(device), torch.from_numpy(onehot).to(device)

    def step():
        opt.zero_grad()
        loss = -(torch.log_softmax(model(tx), -1) * ty).sum(-1).mean()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def numpy_step_fn(x, onehot, sizes):
    """The same MLP (ReLU hidden layers) and Adam, by hand."""
    rng = np.random.default_rng(0)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(a)
        params += [rng.uniform(-bound, bound, (a, b)).astype(np.float32),
                   rng.uniform(-bound, bound, (b,)).astype(np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = [0]

    def step():
        acts = [x]
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i < len(params) - 2:
                h = np.maximum(h, 0)
            acts.append(h)
        z = h - h.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        loss = -(logp * onehot).sum(-1).mean()
        g = (np.exp(logp) - onehot) / len(x)
        grads = [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            grads[i], grads[i + 1] = acts[i // 2].T @ g, g.sum(0)
            if i:
                g = (g @ params[i].T) * (acts[i // 2] > 0)
        t[0] += 1
        for k, (p, gr) in enumerate(zip(params, grads)):
            m[k] = 0.9 * m[k] + 0.1 * gr
            v[k] = 0.999 * v[k] + 0.001 * gr * gr
            mh, vh = m[k] / (1 - 0.9 ** t[0]), v[k] / (1 - 0.999 ** t[0])
            p -= 1e-3 * mh / (np.sqrt(vh) + 1e-8)
        return float(loss)
    return step


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args(argv)
    sizes = (784, args.hidden, args.hidden, 10)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, sizes[0])).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.batch)]
    name = f"MLP train step {sizes} batch {args.batch}"
    t = interleaved_ms({"lazyt": lazyt_step_fn(x, onehot, sizes),
                        "numpy": numpy_step_fn(x, onehot, sizes)}, runs=args.runs)
    emit("mlp_cpu", name, "cpu", t["lazyt"], "numpy (hand-written)", t["numpy"])
    torch = torch_or_none()
    if torch is not None:
        # timed on its own: torch's OpenMP threads spin after each op and, interleaved, take
        # the cores of the BLAS threads lazyt and numpy share
        tt = interleaved_ms({"torch": torch_step_fn(torch, x, onehot, sizes)}, runs=args.runs)
        emit("mlp_cpu", name, "cpu", t["lazyt"], "torch cpu", tt["torch"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
