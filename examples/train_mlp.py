"""Train an MLP on scikit-learn's bundled digits data set with lazyt.

The hidden layers call the custom fused matmul + bias + ReLU extension of
examples/custom_kernel (its numpy, wgpu or CUDA kernel, and its handwritten backward); the
output layer is an ordinary `nn.Linear`. Adam, a tqdm progress bar, held-out accuracy, and the
loss curve saved as a PNG. Needs the `examples` extra: pip install -e '.[examples]'.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyt  # noqa: E402
from custom_kernel.lib import matmul_add_relu_custom  # noqa: E402
from lazyt import nn  # noqa: E402


class FusedLinearReLU(nn.Module):
    """relu(x @ weight + bias) in one extension op; weight is [in, out]."""

    def __init__(self, in_features: int, out_features: int, device=None):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        w = lazyt.rand(in_features, out_features, device=device) * (2 * bound) - bound
        b = lazyt.rand(out_features, device=device) * (2 * bound) - bound
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(b)

    def forward(self, x):
        # the kernel takes a bias of the output's shape: broadcast it (its gradient sums back)
        bias = self.bias.expand(x.shape[0], self.bias.shape[0])
        return matmul_add_relu_custom(x, self.weight, bias)


class MLP(nn.Module):
    def __init__(self, sizes=(64, 128, 64, 10), device=None):
        super().__init__()
        self.hidden = nn.ModuleList([FusedLinearReLU(a, b, device=device)
                                     for a, b in zip(sizes[:-2], sizes[1:-1])])
        self.out = nn.Linear(sizes[-2], sizes[-1], device=device)

    def forward(self, x):
        for layer in self.hidden:
            x = layer(x)
        return self.out(x)


def cross_entropy(logits, onehot):
    return -(logits.log_softmax(-1) * onehot).sum(-1).mean()


def load_digits(seed: int):
    from sklearn.datasets import load_digits as sk_digits
    from sklearn.model_selection import train_test_split
    x, y = sk_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=seed,
                                                        stratify=y)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    return (x_train - mean) / std, (x_test - mean) / std, y_train, y_test


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="train_mlp_loss.png", help="where to save the curve")
    parser.add_argument("--compile", action="store_true",
                        help="run each training step through lazyt.compile (record once, "
                             "replay: a CUDA graph on cuda)")
    args = parser.parse_args(argv)

    from tqdm import tqdm

    lazyt.manual_seed(args.seed)
    dev = lazyt.device(args.device)
    x_train, x_test, y_train, y_test = load_digits(args.seed)
    model = MLP(device=dev)
    opt = lazyt.optim.Adam(model.parameters(), lr=args.lr)
    eye = np.eye(10, dtype=np.float32)
    rng = np.random.default_rng(args.seed)
    losses = []

    def train_step(xb, yb):
        loss = cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    step = lazyt.compile(train_step) if args.compile else train_step
    start = time.perf_counter()
    steps = math.ceil(len(x_train) / args.batch_size)
    bar = tqdm(range(args.epochs), desc="training", unit="epoch")
    for _ in bar:
        order = rng.permutation(len(x_train))
        total = 0.0
        for i in range(steps):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            xb = lazyt.tensor(x_train[idx], device=dev)
            yb = lazyt.tensor(eye[y_train[idx]], device=dev)
            total += step(xb, yb).item()
        losses.append(total / steps)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    elapsed = time.perf_counter() - start

    model.eval()
    with lazyt.no_grad():
        logits = model(lazyt.tensor(x_test, device=dev))
    accuracy = float((logits.argmax(-1).numpy() == y_test).mean())
    print(f"device {dev}{' (compiled)' if args.compile else ''}: {args.epochs} epochs in "
          f"{elapsed:.1f} s, final loss {losses[-1]:.6f}")
    print(f"held-out accuracy: {accuracy * 100:.2f}% ({len(y_test)} digits)")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(1, len(losses) + 1), losses, marker="o", markersize=3)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (cross-entropy)")
    ax.set_title(f"MLP on digits, lazyt {dev}: {accuracy * 100:.1f}% held out")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"loss curve saved to {args.plot}")
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
