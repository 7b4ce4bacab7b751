"""The fusion fuzz programs of test_fusion_fuzz.py on wgpu: fused WGSL blocks give the same
values and gradients as `fusion=False` (op-by-op WGSL kernels).

float32 inputs only (wgpu has no float64). A fused kernel may differ from the op-by-op kernels
by an ulp (the shader compiler contracts and reorders inside one kernel, e.g. in exp), so floats
are compared at a float32 tolerance, not bitwise as on cpu; integers and bools exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import lazyt

from test_fusion_fuzz import BINARY, OPS, _apply, check_program, programs


def _wgpu_built():
    try:
        dev = lazyt.device("wgpu", autodiff=False)
        dev.backend  # noqa: B018 - builds the stack or raises
    except Exception:
        return None
    return dev


FUSED = _wgpu_built()
pytestmark = pytest.mark.skipif(FUSED is None, reason="no wgpu adapter here (CI has llvmpipe)")
REFERENCE = lazyt.device("wgpu", autodiff=False, fusion=False)
FUSED_AD = lazyt.device("wgpu")
REFERENCE_AD = lazyt.device("wgpu", fusion=False)

# cast64: no float64 on wgpu.
WGPU_OPS = [op for op in OPS if op != "cast64"]

# relative to the largest magnitude of the value: an ulp lost early is scaled by later ops
# (sums, matmuls, softmax), so an element near zero is compared against its neighbours' scale
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3}


def _close(got: dict, want: dict, what: str):
    assert got.keys() == want.keys(), what
    for k in want:
        g, w = got[k], want[k]
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what} value {k}: " \
            f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=f"{what} value {k}")
            continue
        finite = np.isfinite(w)
        np.testing.assert_array_equal(np.isfinite(g), finite, err_msg=f"{what} value {k}")
        np.testing.assert_array_equal(g[~finite], w[~finite], err_msg=f"{what} value {k}")
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
        rtol = RTOL[w.dtype]
        np.testing.assert_allclose(g[finite], w[finite], rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{what} value {k}")


def _apply_wgpu(name, x, y, c, rng):
    """A step as on cpu, except that an integer tensor meeting a float tensor in a binary op is
    cast to float32 first: numpy promotion makes that pair float64, which wgpu cannot hold
    (test_mixed_int_float_tensors_raise_dtype_error_on_wgpu checks the error)."""
    if name in BINARY and x.dtype.is_float != y.dtype.is_float:
        if x.dtype is not lazyt.bool_ and not x.dtype.is_float:
            x = x.float()
        if y.dtype is not lazyt.bool_ and not y.dtype.is_float:
            y = y.float()
    return _apply(name, x, y, c, rng)


def test_mixed_int_float_tensors_raise_dtype_error_on_wgpu():
    """What _apply_wgpu avoids: float32 with int64 tensors promotes to float64, and every wgpu
    stack raises DTypeError naming float64 and the device when the op is recorded."""
    for dev in (FUSED, REFERENCE, FUSED_AD, REFERENCE_AD):
        x = lazyt.tensor(np.array([0.5, 2.0], np.float32), device=dev)
        with pytest.raises(lazyt.DTypeError, match="float64 is not supported on wgpu"):
            x + x.argmax()
        y = x + x.argmax().float()
        np.testing.assert_array_equal(y.numpy(), np.array([1.5, 3.0], np.float32))


WGPU = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@WGPU
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_fused_equal_unfused_wgpu(program):
    check_program(program, grad=False, fused=FUSED, ref=REFERENCE, same=_close,
                  apply=_apply_wgpu)


@settings(WGPU, max_examples=150)
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_with_autodiff_fused_equal_unfused_wgpu(program):
    check_program(program, grad=True, fused=FUSED_AD, ref=REFERENCE_AD, same=_close,
                  loss_dtype=lazyt.float32, apply=_apply_wgpu)


@settings(WGPU, max_examples=60)
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_with_autodiff_saving_everything_wgpu(program):
    check_program(program, grad=True, fused=lazyt.device("wgpu", checkpointing="none"),
                  ref=lazyt.device("wgpu", fusion=False, checkpointing="none"), same=_close,
                  loss_dtype=lazyt.float32, apply=_apply_wgpu)
