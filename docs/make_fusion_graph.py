"""Draw the pending graph of a small MLP forward into docs/fusion_graph.png (the README's
picture). Needs `pip install -e ".[draw]"` and graphviz's `dot` (`apt-get install graphviz`).

    python docs/make_fusion_graph.py
"""
from __future__ import annotations

from pathlib import Path

import lazyt


def forward(x, w1, b1, w2, b2):
    """Two linear layers with a ReLU, then a softmax spelled out in elementwise ops and two
    reductions (so the tail fuses around them)."""
    h = (x @ w1 + b1).relu()
    logits = h @ w2 + b2
    e = (logits - logits.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def main() -> None:
    lazyt.manual_seed(0)
    dev = lazyt.device("cpu")
    x = lazyt.randn(64, 784, device=dev)
    w1, b1 = lazyt.randn(784, 128, device=dev) * 0.05, lazyt.zeros(128, device=dev)
    w2, b2 = lazyt.randn(128, 10, device=dev) * 0.05, lazyt.zeros(10, device=dev)
    lazyt.sync()  # the parameters' scaling runs now, so only the forward is pending
    probs = forward(x, w1, b1, w2, b2)
    out = Path(__file__).with_name("fusion_graph.png")
    lazyt.fusion.draw(out, dev)  # before anything is read: reading runs the pending ops
    print(f"wrote {out} ({out.stat().st_size} bytes); rows sum to",
          probs.numpy().sum(axis=-1)[:3])


if __name__ == "__main__":
    main()
