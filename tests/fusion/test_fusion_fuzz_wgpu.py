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

from test_fusion_fuzz import OPS, _apply, check_program, programs


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
# (float64: for the numba fuzz, which shares this comparison; a program may compute in float32
# there and cast up)
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, np.dtype(np.float64): 1e-5}


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


def test_mixed_int_float_tensors_stay_float32_on_wgpu():
    """float32 with an int64 tensor (0-d or not) is float32 (torch's promotion), on every
    wgpu stack; numpy's rule made it float64, which raised DTypeError on wgpu."""
    for dev in (FUSED, REFERENCE, FUSED_AD, REFERENCE_AD):
        x = lazyt.tensor(np.array([0.5, 2.0], np.float32), device=dev)
        y = x + x.argmax()
        assert y.dtype is lazyt.float32
        np.testing.assert_array_equal(y.numpy(), np.array([1.5, 3.0], np.float32))
        i = lazyt.tensor(np.array([1, 2], np.int64), device=dev)
        np.testing.assert_array_equal((i * x).numpy(), np.array([0.5, 4.0], np.float32))
        assert (x - i).dtype is lazyt.float32


WGPU = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@WGPU
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_fused_equal_unfused_wgpu(program):
    check_program(program, grad=False, fused=FUSED, ref=REFERENCE, same=_close,
                  apply=_apply)


@settings(WGPU, max_examples=150)
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_with_autodiff_fused_equal_unfused_wgpu(program):
    check_program(program, grad=True, fused=FUSED_AD, ref=REFERENCE_AD, same=_close,
                  loss_dtype=lazyt.float32, apply=_apply)


@settings(WGPU, max_examples=60)
@given(programs(ops=WGPU_OPS, dtypes=(np.float32,)))
def test_random_dags_with_autodiff_saving_everything_wgpu(program):
    check_program(program, grad=True, fused=lazyt.device("wgpu", checkpointing="none"),
                  ref=lazyt.device("wgpu", fusion=False, checkpointing="none"), same=_close,
                  loss_dtype=lazyt.float32, apply=_apply)
