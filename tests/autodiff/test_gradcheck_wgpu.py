"""Every differentiable op of test_gradcheck_ops.py passes `gradcheck` on wgpu: float32 inputs
(wgpu has no float64), analytic gradients computed on wgpu, finite differences in float64 on cpu,
compared at float32 tolerances (lazyt.testing.gradcheck does both)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.testing import GradcheckError, gradcheck

from test_gradcheck_ops import CASES, inp

# The inputs are drawn by the cases' own makers on a cpu stack, then copied to the
# wgpu device as float32 (int64 index tensors stay int64: stored as 32-bit there).
HOST = lazyt.device("cpu", fusion=False)

# Cases whose function itself names float64 (`.double()`), restated in float32 for wgpu.
WGPU_OVERRIDES = {
    "reshape": (lambda a: a.reshape(4, 3) * lazyt.arange(3.0, device=a.device).float(),
                [inp((3, 4))]),
}
# cast_roundtrip is the float64 -> float32 -> float64 round trip; its analogue on wgpu goes
# through float16, where finite differences with eps=1e-6 vanish in rounding: the f16 cast is
# covered by the fusion fuzz and test_wgpu_fused_f16_intermediate instead.
LEFT_OUT = {"cast_roundtrip"}

WGPU_CASES = [(name, *WGPU_OVERRIDES.get(name, (fn, specs)), *kw)
              for name, fn, specs, *kw in CASES if name not in LEFT_OUT]


def _to_wgpu(value, dev):
    """A cpu-made input on `dev`: floats as float32, tracked when the original was."""
    if not isinstance(value, lazyt.Tensor):
        return value
    arr = value.numpy()
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float32)
    t = lazyt.tensor(arr, device=dev)
    t = t if t.shape == arr.shape else t.reshape(arr.shape)
    return t.require_grad() if value.is_tracked else t


@pytest.mark.parametrize("case", WGPU_CASES, ids=[c[0] for c in WGPU_CASES])
def test_gradcheck_wgpu(wgpu_ad_device, rng, case):
    _, fn, specs, *kw = case
    inputs = [_to_wgpu(make(HOST, rng), wgpu_ad_device) for make in specs]
    for t in inputs:
        if isinstance(t, lazyt.Tensor) and t.dtype.is_float:
            assert t.dtype is lazyt.float32 and t.device == wgpu_ad_device
    assert gradcheck(fn, inputs, **(kw[0] if kw else {}))


def test_gradcheck_wgpu_reports_a_wrong_gradient(wgpu_ad_device):
    """On wgpu too, a wrong gradient is caught at float32 tolerances: the analytic gradient of
    `a * a.detach()` is a, the finite differences (no tracking, so no detach) see a * a: 2a."""
    x = lazyt.tensor(np.array([[1.0, 2.0], [3.0, -4.0]], np.float32), device=wgpu_ad_device)
    with pytest.raises(GradcheckError, match=r"input 0 .*float32.*analytic") as info:
        gradcheck(lambda a: a * a.detach(), [x.require_grad()])
    import re
    analytic, numeric = map(float, re.search(r"analytic (\S+) vs numeric (\S+)",
                                             str(info.value)).groups())
    assert analytic == pytest.approx(numeric / 2, rel=1e-4)


def test_wgpu_gradients_match_cpu_float64(wgpu_ad_device, rng):
    """A small MLP's gradients on wgpu (float32) equal cpu float64 ones to float32 precision."""
    xs = [rng.standard_normal(s) for s in ((8, 5), (5, 7), (7,), (7, 3))]

    def grads(dev, dtype):
        ts = [lazyt.tensor(a.astype(dtype), device=dev).require_grad() for a in xs]
        x, w1, b1, w2 = ts
        loss = ((x @ w1 + b1).gelu() @ w2).log_softmax(-1).mean()
        g = loss.backward()
        return [g.get(t).numpy() for t in ts]

    for got, want in zip(grads(wgpu_ad_device, np.float32),
                         grads(lazyt.device("cpu", fusion=False), np.float64)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_wgpu_fused_f16_intermediate(wgpu_ad_device):
    """A cast to float16 inside a fused block (the kernel must enable f16)."""
    dev = wgpu_ad_device
    x = lazyt.tensor(np.linspace(-1, 1, 6).astype(np.float32), device=dev)
    got = (x.half() * 3).float().numpy()
    want = (np.linspace(-1, 1, 6).astype(np.float16) * np.float16(3)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
