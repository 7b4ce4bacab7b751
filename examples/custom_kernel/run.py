"""Check the fused matmul + bias + ReLU extension against the reference on every device here.

For each device (cpu, and wgpu/cuda when present) and each stack variant (default balanced
checkpointing, checkpointing="none", fusion off), compare the forward values and the gradients
of lhs, rhs and bias with the reference built from ordinary ops, and print a table.
Inputs have broadcast batch dims: lhs (1, 64, 32), rhs (4, 32, 48), bias (4, 64, 48).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lazyt  # noqa: E402
from custom_kernel.lib import matmul_add_relu_custom, matmul_add_relu_reference  # noqa: E402

SHAPES = ((1, 64, 32), (4, 32, 48), (4, 64, 48))
VARIANTS = (("balanced", {}), ("none", {"checkpointing": "none"}), ("no fusion", {"fusion": False}))


def devices_present(only: str | None) -> list[str]:
    names = ["cpu", "wgpu", "cuda"] if only is None else [only]
    found = []
    for name in names:
        try:
            lazyt.device(name).backend  # noqa: B018 - builds the stack, or raises
            found.append(name)
        except lazyt.DeviceError as e:
            if only is not None:
                raise
            print(f"{name}: skipped ({e})")
    return found


def check(dev) -> tuple[float, list[float]]:
    """Max abs difference of the output and of the three input gradients."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    weight = rng.standard_normal(SHAPES[2]).astype(np.float32)

    def run(fn):
        ts = [lazyt.tensor(x, device=dev).require_grad() for x in inputs]
        out = fn(*ts)
        grads = (out * lazyt.tensor(weight, device=dev)).sum().backward()
        return out.numpy(), [grads[t].numpy() for t in ts]

    out, grads = run(matmul_add_relu_custom)
    ref, ref_grads = run(matmul_add_relu_reference)
    return (float(np.abs(out - ref).max()),
            [float(np.abs(g - r).max()) for g, r in zip(grads, ref_grads)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="only this device (cpu, wgpu, cuda)")
    args = parser.parse_args(argv)
    tol = 1e-4
    rows, ok = [], True
    for name in devices_present(args.device):
        for label, switches in VARIANTS:
            out_err, grad_errs = check(lazyt.device(name, **switches))
            good = max([out_err, *grad_errs]) <= tol
            ok &= good
            rows.append((name, label, out_err, *grad_errs, "ok" if good else "FAIL"))
    header = ("device", "stack", "forward", "grad lhs", "grad rhs", "grad bias", "")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join([r[0], r[1], *(f"{v:.1e}" for v in r[2:6]), r[6]]) + " |")
    print(f"max abs difference vs the reference (tolerance {tol}): "
          f"{'all ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
